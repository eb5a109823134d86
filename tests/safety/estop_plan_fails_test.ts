/**
 * The e-stop answers when its plan cannot be made (here the inventory port throws as a provider's
 * devices are read): the trigger used to reject with no actions although the latch, FAULT and the
 * hooks into FAULT held. The stop still does the safest thing it can: rung 1, the hooks, is decided
 * and made from the configuration alone (docs/safety.md, "The ladder"), so its calls are made;
 * every other rung needs the devices, so none is made. Either way: one ERROR line, the hooks into
 * FAULT run, and the answer is latched with a warning saying the plan could not be made.
 * In-process: the real Estop over a router that answers every call at once, an inventory whose
 * provider's device list throws, and a modes port that records FAULT.
 */
import assert from "node:assert/strict";
import type { Estop, SafeStateConfig } from "../../src/safety/mod.ts";
import { brittleEstop, heaterOffLadder } from "./_clock_rig.ts";
import { call } from "./_fixture.ts";

/** An e-stop with `safeState` over an inventory whose device list throws from the start. */
const rig = (safeState: SafeStateConfig) => brittleEstop({ broken: true, safeState });

/** Latched, FAULT, the hooks into FAULT run, a warning on the plan, one ERROR line. */
function assertStopped(r: ReturnType<typeof rig>, result: Awaited<ReturnType<Estop["trigger"]>>) {
  assert.equal(result.latched, true);
  assert.equal(r.estop.latched, true);
  assert.equal(result.fault_engaged, true);
  assert.equal(r.fault.hooksRun(), 1, "the hooks into FAULT ran");
  assert.match(result.warning ?? "", /plan could not be made \(inventory port failed\)/);
  const lines = r.errors.filter((l) => l.includes("safe-state plan failed: inventory port failed"));
  assert.equal(lines.length, 1, `one ERROR line: ${r.errors.join(" | ")}`);
  assert.ok(lines[0]!.startsWith("ERROR"));
}

Deno.test("Estop.trigger runs the declared hooks rung when the plan cannot be made", async () => {
  const r = rig(heaterOffLadder());
  const result = await r.estop.trigger("test");
  assertStopped(r, result);
  assert.equal(result.software_safe_state, "hooks");
  assert.deepEqual(r.made, ["plant set_heater"], "rung 1's call, made from the configuration");
  assert.deepEqual(result.actions, [
    { device_handle: "plant/plant0", function: "set_heater", success: true },
  ]);
});

Deno.test("Estop.trigger answers rung none with no actions when the plan cannot be made and no hooks are declared", async () => {
  const r = rig({
    hooks: [],
    // Rung 2 and 3 need the devices (coverage, zeroable functions): neither may be guessed.
    setpoints: [call("plant/plant0", "set_heater", { enabled: false })],
    zeroIsSafe: true,
    expect: [],
    verifyTimeoutMs: 100,
  });
  const result = await r.estop.trigger("test");
  assertStopped(r, result);
  assert.equal(result.software_safe_state, "none");
  assert.deepEqual(r.made, [], "no call guessed");
  assert.deepEqual(result.actions, []);
});
