/**
 * A reload in AUTO that drops the `safety:` section (the e-stop then adopts the `* -> FAULT` hook
 * calls) and rewrites those hooks: the hooks section is refused (it drops a stop call), so the
 * safety section applies over the hooks still in force, and the e-stop adopts theirs -- not the
 * file's. The safety section must be judged on the ladder it leaves in force (docs/safety.md
 * sec. 9, "The e-stop is judged on the ladder it runs"), not on the file's hooks that were refused:
 * here it would take the relay's ladder call away. A real kernel with the inert simulated provider
 * as a child process.
 */
import assert from "node:assert/strict";
import type { HookConfig } from "../../src/config/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import {
  automationConfig,
  callAs,
  TreeDir,
  treeXml,
  tv,
  withSecondHook,
} from "../scenarios/automation_helpers.ts";
import { call, inertSim, readSignal } from "../safety/_fixture.ts";

const RELAY_OFF = call("sim0/relayio0", "set_relay_ch1", { enabled: false });
const MOTOR2_OFF = call("sim0/motorctl0", "set_motor_duty", {
  motor_index: 2,
  duty: { double: 0 },
});

/** A `* -> FAULT` hook (second before_transition hook) making `calls`. */
function intoFault(calls: HookConfig["calls"]): HookConfig {
  return {
    from: "*",
    to: "FAULT",
    failOnError: false,
    path: "automation.mode_transition_hooks.before_transition[1]",
    calls,
  };
}

Deno.test("Kernel.reload in AUTO dropping safety: while its hook change is refused: the safety section is refused too, the e-stop still switches the relay off", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    // The e-stop's own ladder: the relay off. The hook into FAULT stops motor 2.
    const start = withSecondHook(
      automationConfig(tree, {
        config: { providers: [inertSim("sim0")], safety: { hooks: [RELAY_OFF] } },
      }),
      intoFault([MOTOR2_OFF]),
    );
    const rt = await startRuntime(start);
    try {
      await rt.modes.request("MANUAL");
      await callAs(rt, "manual", "sim0/relayio0", "set_relay_ch1", { enabled: tv.b(true) });
      assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), true);
      await rt.modes.request("AUTO");
      // The file: no safety: section, and the hook into FAULT switches the relay off instead of
      // stopping motor 2 -- so the ladder it adopts is the relay's, as before.
      const next = withSecondHook(
        { ...rt.config, safety: { ...rt.config.safety, present: false } },
        intoFault([RELAY_OFF]),
      );
      const report = await rt.reload({
        ...next,
        safety: { ...next.safety, safeState: { ...next.safety.safeState, hooks: [] } },
      });
      assert.deepEqual(
        report.refused.map((r) => r.section),
        ["automation.mode_transition_hooks", "safety"],
        JSON.stringify(report.refused),
      );
      assert.deepEqual(
        rt.estop.plan().calls.map((c) => c.label),
        [{ device_handle: "sim0/relayio0", function: "set_relay_ch1" }],
      );
      await rt.estop.trigger("refused hooks");
      assert.equal(
        await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"),
        false,
        "the e-stop switched the relay off",
      );
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
