/**
 * A device the tree names lost while MANUAL -> AUTO runs its before_transition hooks (the mode is
 * still MANUAL): over a real kernel with sim0 (the hooks' device) and sim1 (the tree's), both
 * in-process, sim1 restarted by its supervisor.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import {
  autoRefusedBy,
  modeOutcome,
  sim1TreeArmedBy,
  slowCallsOf,
  TreeDir,
  watchCallsTo,
} from "../scenarios/automation_helpers.ts";

Deno.test("AUTO requested while a device the tree names is lost and back during the before_transition hooks is refused at its commit", async () => {
  const dir = await TreeDir.create();
  try {
    await using r = await rig({ config: await sim1TreeArmedBy(dir), arm: true });
    const rt = r.kernel;
    const engine = rt.automation!;
    const hook = watchCallsTo(rt, "sim0/tempctl0");
    await slowCallsOf(rt, "sim0", "tempctl0", 1500);
    hook.sent = false;
    const auto = modeOutcome(rt, "AUTO");
    await waitFor("the arming hook's call made", () => hook.sent);
    r.kill("sim1"); // lost while the hook runs, restarted by its supervisor
    await waitFor(
      "sim1/motorctl0 latched",
      () => engine.status().device_loss_latched.includes("sim1/motorctl0"),
    );
    await waitFor("sim1 back", () => rt.registry.host("sim1")?.available === true);
    const outcome = await auto;
    assert.notEqual(
      outcome,
      "AUTO",
      "AUTO entered with the tree on a device lost after the request was judged",
    );
    assert.equal(
      outcome,
      "RuntimeError: refusing AUTO: sim1/motorctl0, a device the behavior tree depends on, was " +
        "lost (provider sim1 is unavailable (RESTARTING)) while MANUAL -> AUTO hooks ran; " +
        "sim1/motorctl0 stays latched: request AUTO again once it is back (entering AUTO " +
        "releases it)",
      "the refusal names the device, why it was lost and what the operator does",
    );
    assert.equal(rt.modes.current(), "MANUAL");
    assert.ok(
      engine.status().device_loss_latched.includes("sim1/motorctl0"),
      "still latched: no AUTO entry released it",
    );
    // Audited as AUTO refused for the tree's sake, by what refused it (as the arm check would).
    assert.deepEqual(await autoRefusedBy(rt), ["device_loss"]);
  } finally {
    await dir.dispose();
  }
});
