/**
 * A tree's call asked before a stop (a FAULT entry) whose turn in its provider's queue comes after
 * the re-arm is refused `stopped` (CallRouter, STOPPED_AT_TURN). Automation status keeps it with
 * the other refusals nothing was sent for -- `refused_calls`, like the e-stop gate's `estop` --
 * never as a device outage: the stop is no fault of the device. (Not in the router's
 * NOT_CALLER_REFUSALS: those are the provider's queue and the provider down, which count as the
 * device's failures.) A call the halt cancelled (its tree left AUTO) is neither. A real kernel with
 * the simulated provider as a child process.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { slowCallsOf } from "../scenarios/automation_helpers.ts";
import { MOTOR_ARGS, withIdleTree } from "./_kernel_rig.ts";

/** How long the simulated motorctl0 sleeps before answering a call (chaos inject_call_latency). */
const LATENCY_MS = 1500;

Deno.test("AutomationEngine lists tree calls refused as stopped at their turn in refused_calls, not device_outages; halted ones in neither", async () => {
  await withIdleTree(async (rt, engine) => {
    await slowCallsOf(rt, "sim0", "motorctl0", LATENCY_MS);
    let slowSent = false;
    const slow = rt.router.call({
      providerId: "sim0",
      deviceId: "motorctl0",
      functionName: "set_motor_duty",
      args: MOTOR_ARGS,
      origin: "manual",
      onSent: () => slowSent = true,
    });
    await waitFor("the slow call sent", () => slowSent);
    // Two tree calls queued behind it (not halted), and one whose tree is halted by the stop.
    const treeCall = (signal: AbortSignal) =>
      engine.services.callDevice("sim0/motorctl0", "set_motor_duty", MOTOR_ARGS, signal)
        .then(() => "sent", (err: unknown) => err);
    const kept = new AbortController();
    const halted = new AbortController();
    const calls = [treeCall(kept.signal), treeCall(kept.signal), treeCall(halted.signal)];
    await rt.modes.request("FAULT");
    halted.abort(); // as the FAULT entry halts a running tree
    await rt.modes.request("MANUAL");
    await slow;
    const [a, b, c] = await Promise.all(calls);
    for (const err of [a, b]) {
      assert.match(String((err as Error).message), /while it was queued/, String(err));
    }
    assert.match(String((c as Error).message), /cancelled/, String(c));
    const s = engine.status();
    assert.deepEqual(
      s.refused_calls.map((
        r,
      ) => [r.device_handle, r.function, r.consecutive_refusals, r.refused_by]),
      [["sim0/motorctl0", "set_motor_duty", 2, "stopped"]],
      "the halted call counts nowhere",
    );
    assert.deepEqual(s.device_outages, [], "a stop is no device failure");
  }, { arm: true });
});
