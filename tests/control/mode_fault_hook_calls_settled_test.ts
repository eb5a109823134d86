/**
 * ModeManager.faultHookCallsSettled, the hook calls into FAULT a configuration reload waits for
 * before it stops their provider (docs/safety.md, step 3): null at once while none to the provider
 * is under way; else it resolves once those running or queued (the FAULT entry's, those made
 * again for a provider that comes back while FAULT stands) have finished; faultHookCallsLeft
 * counts them (what bounds a reload's wait). In-process: a router and an inventory that hold each
 * call until the test answers it.
 */
import assert from "node:assert/strict";
import { call, hook } from "../safety/_fixture.ts";
import { heldCalls, holdingRouter, hookModes, returnsInventory } from "./_mode_hook_rig.ts";

/**
 * Real modes over a router that holds every call; the `* -> FAULT` hook makes two calls to plant
 * (one after the other) and one to probe.
 */
function rig() {
  const { held, router } = holdingRouter();
  const { inventory, comesBack } = returnsInventory();
  const modes = hookModes(router, inventory, [
    hook("*", "FAULT", [
      call("plant/plant0", "set_heater", { enabled: false }),
      call("probe/probe0", "set_lamp", { enabled: false }),
      call("plant/plant0", "set_fan", { duty: { double: 0 } }),
    ], false),
  ]);
  return { held, modes, comesBack };
}

/** Whether `p` has settled after the pending microtasks and one timer turn. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  void p.then(() => (done = true));
  await new Promise((r) => setTimeout(r, 0));
  return done;
}

Deno.test("ModeManager.faultHookCallsSettled resolves once the hook calls into FAULT to the provider, running and queued, have finished", async () => {
  const r = rig();
  assert.equal(r.modes.faultHookCallsSettled("plant"), null);
  const fault = r.modes.requestWithReport("FAULT");
  await heldCalls(r.held, 2); // plant set_heater and probe set_lamp, concurrently
  const plant = r.modes.faultHookCallsSettled("plant");
  const probe = r.modes.faultHookCallsSettled("probe");
  assert.notEqual(plant, null);
  assert.notEqual(probe, null);
  assert.equal(r.modes.faultHookCallsSettled("other"), null);
  assert.deepEqual(
    ["plant", "probe", "other"].map((id) => r.modes.faultHookCallsLeft(id)),
    [2, 1, 0],
  );
  // probe's call answered: probe's wait ends, plant's does not.
  r.held.find((h) => h.req.providerId === "probe")!.answer();
  assert.equal(await settled(probe!), true);
  assert.equal(await settled(plant!), false);
  // plant's first call answered: its second, queued, is still to be made.
  r.held.find((h) => h.req.functionName === "set_heater")!.answer();
  await heldCalls(r.held, 3);
  assert.equal(await settled(plant!), false, "ended with plant's set_fan still to be made");
  assert.equal(r.modes.faultHookCallsLeft("plant"), 1);
  r.held[2]!.answer();
  assert.equal(await settled(plant!), true);
  assert.deepEqual((await fault).hook_failures, []);
  assert.equal(r.modes.faultHookCallsSettled("plant"), null);
  assert.equal(r.modes.faultHookCallsLeft("plant"), 0);
});

Deno.test("ModeManager.faultHookCallsSettled waits for the hook calls into FAULT made again for a provider that comes back", async () => {
  const r = rig();
  const fault = r.modes.requestWithReport("FAULT");
  await heldCalls(r.held, 2);
  r.held[0]!.answer();
  r.held[1]!.answer();
  await heldCalls(r.held, 3);
  r.held[2]!.answer();
  await fault;
  assert.equal(r.modes.faultHookCallsSettled("plant"), null);
  r.comesBack("plant");
  await heldCalls(r.held, 4);
  const plant = r.modes.faultHookCallsSettled("plant");
  assert.notEqual(plant, null);
  r.held[3]!.answer();
  await heldCalls(r.held, 5);
  assert.equal(await settled(plant!), false, "ended with plant's set_fan still to be made again");
  r.held[4]!.answer();
  assert.equal(await settled(plant!), true);
  assert.equal(r.modes.faultHookCallsSettled("plant"), null);
});

Deno.test("ModeManager.faultHookCallsSettled waits, while a FAULT entry's hook calls are held and not begun, for their release and then for those calls", async () => {
  const r = rig();
  // The e-stop's way: FAULT committed at once, its hooks run after its ladder.
  const entry = r.modes.enterFault("e-stop", { kind: "estop", cause: "api" });
  const release = r.modes.holdFaultHookCalls();
  const plant = r.modes.faultHookCallsSettled("plant");
  assert.notEqual(plant, null, "no wait for the hook calls committed to and not begun");
  assert.notEqual(r.modes.faultHookCallsSettled("probe"), null);
  assert.equal(r.modes.faultHookCallsSettled("other"), null, "a provider no hook call is to");
  assert.equal(await settled(plant!), false);
  assert.deepEqual(
    ["plant", "probe", "other"].map((id) => r.modes.faultHookCallsLeft(id)),
    [2, 1, 0],
    "the held calls counted",
  );
  const hooks = entry.runHooks();
  release();
  release(); // idempotent
  await heldCalls(r.held, 2);
  assert.equal(r.modes.faultHookCallsLeft("plant"), 2, "counted once, the hold released");
  assert.equal(await settled(plant!), false, "ended at the release, plant's calls running");
  r.held.find((h) => h.req.providerId === "probe")!.answer();
  r.held.find((h) => h.req.functionName === "set_heater")!.answer();
  await heldCalls(r.held, 3);
  assert.equal(await settled(plant!), false, "ended with plant's set_fan still to be made");
  r.held[2]!.answer();
  assert.equal(await settled(plant!), true);
  assert.deepEqual(await hooks, []);
  assert.equal(r.modes.faultHookCallsSettled("plant"), null);
});

Deno.test("ModeManager.holdFaultHookCalls before any FAULT entry holds nothing", () => {
  const r = rig();
  const release = r.modes.holdFaultHookCalls();
  assert.equal(r.modes.faultHookCallsSettled("plant"), null);
  release();
});

Deno.test("ModeManager.faultHookCallsSettled waits, from a provider's return on, for the hook calls into FAULT made again after the e-stop's securing run of it", async () => {
  const r = rig();
  // The e-stop's securing run of the returning provider: it ends when the test says.
  const securing = Promise.withResolvers<readonly never[]>();
  r.modes.setLatchSecuring(() => securing.promise);
  const fault = r.modes.requestWithReport("FAULT");
  await heldCalls(r.held, 2);
  r.held[0]!.answer();
  r.held[1]!.answer();
  await heldCalls(r.held, 3);
  r.held[2]!.answer();
  await fault;
  assert.equal(r.modes.faultHookCallsSettled("plant"), null);
  r.comesBack("plant");
  // Its securing run still runs: no hook call made again yet, both expected.
  const plant = r.modes.faultHookCallsSettled("plant");
  assert.notEqual(plant, null, "no wait for the hook calls made again after the securing run");
  assert.equal(r.modes.faultHookCallsLeft("plant"), 2);
  assert.equal(await settled(plant!), false);
  securing.resolve([]);
  await heldCalls(r.held, 4);
  assert.equal(r.modes.faultHookCallsLeft("plant"), 2, "counted once, the run begun");
  r.held[3]!.answer();
  await heldCalls(r.held, 5);
  assert.equal(await settled(plant!), false, "ended with plant's set_fan still to be made again");
  r.held[4]!.answer();
  assert.equal(await settled(plant!), true);
  assert.equal(r.modes.faultHookCallsSettled("plant"), null);
  assert.equal(r.modes.faultHookCallsLeft("plant"), 0);
});

Deno.test("ModeManager.faultHookCallsSettled counts a forced FAULT's hook calls in the step that commits it (the device-loss latch's FAULT entry)", async () => {
  const r = rig();
  // DeviceLossLatch decides and forces FAULT in one step: a reload stopping plant in that same
  // step (before the hooks' calls are on the wire) waits for them.
  const forced = r.modes.forceFault("device-loss latch: plant/plant0 is down (test)", {
    kind: "device_loss",
    device_handle: "plant/plant0",
  });
  const plant = r.modes.faultHookCallsSettled("plant");
  assert.notEqual(plant, null, "counted in the step FAULT is committed");
  assert.equal(r.modes.faultHookCallsLeft("plant"), 2);
  await heldCalls(r.held, 2);
  r.held.find((h) => h.req.providerId === "probe")!.answer();
  r.held.find((h) => h.req.functionName === "set_heater")!.answer();
  await heldCalls(r.held, 3);
  assert.equal(await settled(plant!), false, "ended with plant's set_fan still to be made");
  r.held[2]!.answer();
  assert.equal(await settled(plant!), true);
  assert.equal(await forced, true);
});
