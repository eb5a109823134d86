/**
 * A provider the MANUAL -> AUTO before_transition hooks set up, crashed and restarted by its
 * supervisor while the rest of those hooks still run (the mode is still MANUAL): its new process
 * starts from its own start-up values, so what the hooks set up on it is gone. AUTO is refused at
 * its commit, as when a configuration reload restarts a provider meanwhile, not entered as if the
 * setup stood. Over a real kernel with sim0 (set up by the hooks, no device of it in the tree) and
 * sim1 (the tree's, and the hooks' slow last call), both in-process, sim0 killed.
 */
import assert from "node:assert/strict";
import type { HookConfig } from "../../src/config/mod.ts";
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

/** MANUAL -> AUTO: sim0's setpoint (the setup), then sim1's (slowed by the test). */
const ARMING_HOOK: HookConfig = {
  from: "MANUAL",
  to: "AUTO",
  failOnError: true,
  path: "automation.mode_transition_hooks.before_transition[1]",
  calls: ["sim0", "sim1"].map((id, i) => ({
    deviceHandle: `${id}/tempctl0`,
    functionId: 0,
    functionName: "set_setpoint",
    args: { value: { type: "double" as const, double: 30 } },
    path: `automation.mode_transition_hooks.before_transition[1].calls[${i}]`,
  })),
};

Deno.test("AUTO requested while a provider its before_transition hooks set up crashes and restarts during them is refused at its commit", async () => {
  const dir = await TreeDir.create();
  try {
    await using r = await rig({ config: await sim1TreeArmedBy(dir, ARMING_HOOK), arm: true });
    const rt = r.kernel;
    const lastHook = watchCallsTo(rt, "sim1/tempctl0");
    await slowCallsOf(rt, "sim1", "tempctl0", 1500);
    lastHook.sent = false;
    const sim0Before = rt.registry.host("sim0")!.session;
    const auto = modeOutcome(rt, "AUTO");
    // sim0's setpoint was set (its call answered before sim1's was sent): sim0 now crashes.
    await waitFor("the hooks' last call made", () => lastHook.sent);
    r.kill("sim0");
    await waitFor(
      "sim0 restarted",
      () => {
        const h = rt.registry.host("sim0");
        return h?.available === true && h.session !== sim0Before;
      },
    );
    const outcome = await auto;
    assert.notEqual(outcome, "AUTO", "AUTO entered on a setup the restart undid");
    assert.equal(
      outcome,
      "RuntimeError: refusing AUTO: provider sim0, called by the before_transition hooks, went " +
        "down while MANUAL -> AUTO hooks ran; request AUTO again once it is up (its hooks then " +
        "set it up again)",
    );
    assert.equal(rt.modes.current(), "MANUAL");
    assert.deepEqual(await autoRefusedBy(rt), ["unavailable"]);
  } finally {
    await dir.dispose();
  }
});
