/**
 * The hooks into FAULT made again for a provider that comes back while FAULT stands
 * (ModeManager #providerBack) against a transition leaving FAULT: a stop action must not land
 * after the operator's first commands, so leaving FAULT is refused while they run -- also when
 * the provider came back while that transition's before-hooks ran. In-process: a router and an
 * inventory that hold each call until the test answers it.
 */
import assert from "node:assert/strict";
import { call, hook } from "../safety/_fixture.ts";
import { heldCalls, holdingRouter, hookModes, returnsInventory } from "./_mode_hook_rig.ts";

Deno.test("ModeManager refuses to leave FAULT when a provider came back during the transition's before-hooks and its hook calls into FAULT still run", async () => {
  const { held, router } = holdingRouter();
  const { inventory, comesBack } = returnsInventory();
  const modes = hookModes(router, inventory, [
    hook("*", "FAULT", [call("plant/plant0", "set_heater", { enabled: false })], false),
    hook("FAULT", "MANUAL", [call("probe/probe0", "read_status")], false),
  ]);
  const fault = modes.requestWithReport("FAULT");
  await heldCalls(held, 1);
  held[0]!.answer();
  assert.deepEqual((await fault).hook_failures, []);

  // Re-arming: its before-hook (a read) is in flight when plant comes back.
  const rearm = modes.requestWithReport("MANUAL");
  await heldCalls(held, 2);
  assert.equal(held[1]!.req.providerId, "probe");
  comesBack("plant");
  await heldCalls(held, 3);
  assert.equal(held[2]!.req.providerId, "plant");
  assert.equal(held[2]!.req.origin, "safety");
  // The before-hook ends while plant's stop action is still on its way.
  held[1]!.answer();
  const outcome = await rearm.then((r) => `committed ${r.mode}`, (e) => `refused: ${e.message}`);
  held[2]!.answer();
  assert.match(
    outcome,
    /^refused: FAULT hooks are still running/,
    `a stop action for plant was in flight when FAULT -> MANUAL ended: ${outcome}`,
  );
  assert.equal(modes.current(), "FAULT");
});
