/**
 * A mode listener that forces FAULT synchronously when it is told AUTO was entered supersedes
 * MANUAL -> AUTO inside ModeManager's commit (mode_listener_forces_fault_test.ts). The machine
 * never stayed in AUTO, so the after_transition hooks of MANUAL -> AUTO must not run: their calls
 * would be refused by the mode gate (FAULT) and show up as hook failures, hook_failure events and
 * refused calls on the audit trail of a transition that no longer stands. One WARN line says they
 * were skipped; the audit trail keeps the true order (MANUAL -> AUTO accepted, then AUTO -> FAULT,
 * then the FAULT hook's call). In-process: the real ModeManager over a router that runs the gates
 * registered on it (the mode gate) for an actuating function, and records each call it is asked.
 */
import assert from "node:assert/strict";
import type {
  AuditDecision,
  AuditSink,
  CallGate,
  CallRequest,
  CallRouter,
} from "../../src/control/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import type { CallConfig, HookConfig } from "../../src/config/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { providersUp } from "../safety/_clock_rig.ts";

function hookCall(functionName: string, path: string): CallConfig {
  return { deviceHandle: "plant/heater0", functionId: 0, functionName, args: {}, path };
}

function hook(from: HookConfig["from"], to: HookConfig["to"], fn: string, path: string) {
  return { from, to, failOnError: false, calls: [hookCall(fn, `${path}.calls[0]`)], path };
}

/** The rig: `trail` holds the audit decisions and the router's calls in the order they came. */
function rig() {
  const trail: string[] = [];
  const gates: CallGate[] = [];
  const router = {
    addGate(gate: CallGate) {
      gates.push(gate);
    },
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drainFrom: () => () => Promise.resolve(true),
    call: (req: CallRequest) => {
      const ctx = {
        fn: { name: req.functionName, actuating: true },
        device: { device: { providerId: req.providerId, deviceId: req.deviceId } },
        origin: req.origin,
      } as unknown as Parameters<CallGate>[0];
      const refusal = gates.map((g) => g(ctx)).find((e) => e !== null) ?? null;
      trail.push(`call ${req.functionName} ${refusal === null ? "ok" : "refused"}`);
      return refusal === null ? Promise.resolve({}) : Promise.reject(refusal);
    },
  } as unknown as CallRouter;
  const audit: AuditSink = {
    record: (d: AuditDecision) => {
      if (d.action === "mode") trail.push(`mode ${String(d.args?.from)}->${d.function}`);
    },
    writeAhead: () => Promise.resolve(),
  } as unknown as AuditSink;
  const bus = new EventBus();
  const hookFailureEvents: string[] = [];
  bus.subscribe(({ event: e }) => {
    if (e.kind === "hook_failure") hookFailureEvents.push(`${e.transition} ${e.function}`);
  });
  const { log, lines } = capturingLogger({ level: "info" });
  const modes = new ModeManager({
    router,
    inventory: providersUp("plant"),
    bus,
    clock: new ManualClock(),
    log,
    automationEnabled: true,
    manualGatingPolicy: "OVERRIDE",
    audit,
    hooks: {
      beforeTransition: [],
      afterTransition: [
        hook("MANUAL", "AUTO", "start_heating", "automation.mode_transition_hooks.after[0]"),
        hook("AUTO", "FAULT", "heater_off", "automation.mode_transition_hooks.after[1]"),
      ],
    },
  });
  return { modes, trail, lines, hookFailureEvents };
}

Deno.test("ModeManager skips the after_transition hooks of MANUAL->AUTO a listener superseded with AUTO->FAULT, says so once and keeps the audit order", async () => {
  const { modes, trail, lines, hookFailureEvents } = rig();
  let forced: Promise<boolean> | null = null;
  modes.onModeChange(({ current }) => {
    if (current === "AUTO") forced = modes.forceFault("unsafe on entering AUTO");
  });
  await modes.request("MANUAL");
  const report = await modes.requestWithReport("AUTO");
  assert.ok(forced !== null);
  assert.equal(await forced, true);
  assert.equal(modes.current(), "FAULT");
  // Nothing of MANUAL -> AUTO's after-hook reached the router, so nothing failed.
  assert.deepEqual(report, {
    mode: "FAULT",
    hook_failures: [],
    superseded_by: "AUTO->FAULT",
    superseded_reason: "unsafe on entering AUTO",
  });
  assert.deepEqual(hookFailureEvents, []);
  // True order: the change, the change that superseded it, the FAULT hook's stop action.
  assert.deepEqual(trail, [
    "mode IDLE->MANUAL",
    "mode MANUAL->AUTO",
    "mode AUTO->FAULT",
    "call heater_off ok",
  ]);
  const skipped = lines.filter((l) => l.includes("skipped"));
  assert.equal(skipped.length, 1, lines.join("\n"));
  assert.match(
    skipped[0]!,
    /^WARN .*after_transition hooks of MANUAL->AUTO skipped: superseded by AUTO->FAULT \(1 call\(s\) not made\)$/,
  );
});

Deno.test("ModeManager still runs the after_transition hooks of MANUAL->AUTO when no listener supersedes it", async () => {
  const { modes, trail, lines } = rig();
  await modes.request("MANUAL");
  const report = await modes.requestWithReport("AUTO");
  assert.deepEqual(report, { mode: "AUTO", hook_failures: [] });
  assert.deepEqual(trail, ["mode IDLE->MANUAL", "mode MANUAL->AUTO", "call start_heating ok"]);
  assert.equal(lines.filter((l) => l.includes("skipped")).length, 0);
});
