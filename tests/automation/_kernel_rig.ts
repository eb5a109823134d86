/**
 * What the tests of automation status over a real kernel share (automation_engine_call_outcomes,
 * automation_engine_refusals): a runtime whose tree only sleeps -- it names no device, so only
 * the calls a test makes through the engine's services count -- and readers of the status.
 */
import type { TypedValue } from "../../src/common/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { AutomationEngine } from "../../src/automation/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import {
  automationConfig,
  type AutomationConfigOptions,
  callAs,
  TreeDir,
  treeXml,
  tv,
} from "../scenarios/automation_helpers.ts";

/** set_motor_duty's arguments: motor 1 at duty 0.2 (valid). */
export const MOTOR_ARGS: Record<string, TypedValue> = { motor_index: tv.i(1), duty: tv.d(0.2) };

/**
 * Runs `fn` over a started runtime (automationConfig with `o`; MANUAL with `arm`) whose tree
 * sleeps for a minute; stops it and removes the tree afterwards, whatever `fn` did.
 */
export function withIdleTree(
  fn: (rt: Kernel, engine: AutomationEngine) => Promise<void>,
  o: AutomationConfigOptions & { arm?: boolean } = {},
): Promise<void> {
  return withTree(`<Sleep msec="60000" />`, (rt) => fn(rt, rt.automation!), o);
}

/**
 * Runs `fn` over a started runtime (automationConfig with `o`; MANUAL with `arm`) whose tree is
 * `body` (the main tree's content, treeXml); stops it and removes the tree afterwards.
 */
export async function withTree(
  body: string,
  fn: (rt: Kernel) => Promise<void>,
  o: AutomationConfigOptions & { arm?: boolean } = {},
): Promise<void> {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("tree.xml", treeXml(body));
    const rt = await startRuntime(automationConfig(tree, o), { arm: o.arm === true });
    try {
      await fn(rt);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
}

/** Automation status `refused_calls` as [device handle, consecutive refusals, refused_by] rows. */
export function refusedRows(engine: AutomationEngine): [string, number, string][] {
  return engine.status().refused_calls.map((r) => [
    r.device_handle,
    r.consecutive_refusals,
    r.refused_by,
  ]);
}

/** Makes the simulated device fail every call of one function (sent, then failed by it). */
export function failCallsOf(rt: Kernel, deviceId: string, functionId: number): Promise<void> {
  return callAs(rt, "manual", "sim0/chaos_control", "inject_call_failure", {
    device_id: tv.s(deviceId),
    function_id: tv.s(String(functionId)),
    failure_rate: tv.d(1),
  });
}
