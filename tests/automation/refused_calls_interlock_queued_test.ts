/**
 * An interlock that engages while a tree's call to the function it blocks waits in its provider's
 * queue (behind a slow call) refuses that call at its turn: docs/alarms.md, "evaluated ... again,
 * fresh, right before each call it could refuse". Nothing is sent; automation status lists the
 * refusals under `refused_calls` with `refused_by` `interlock <id>`, never as a device outage. The
 * interlock reads a relay of a second simulated provider, so engaging it does not queue behind the
 * slow call. A real kernel with two simulated providers as child processes.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { cached, callAs, slowCallsOf, tv } from "../scenarios/automation_helpers.ts";
import { withIdleTree } from "./_kernel_rig.ts";

/**
 * How long the simulated motorctl0 sleeps before answering a call (chaos inject_call_latency):
 * the tree's calls wait this long behind the slow one, while a call to sim1 and its poll (tens of
 * ms) engage the interlock. Under the provider's timeout_ms (5 s in the test configuration).
 */
const LATENCY_MS = 4000;

Deno.test("AutomationEngine: tree calls queued behind a slow call are refused at their turn by an interlock that engaged meanwhile, listed as refused by it", async () => {
  await withIdleTree(async (rt, engine) => {
    assert.equal(rt.alarms.interlocks()[0]!.blocking, false);
    await slowCallsOf(rt, "sim0", "motorctl0", LATENCY_MS);
    let slowSent = false;
    const slow = rt.router.call({
      providerId: "sim0",
      deviceId: "motorctl0",
      functionName: "set_motor_duty",
      args: { motor_index: tv.i(2), duty: tv.d(0.1) },
      origin: "manual",
      onSent: () => slowSent = true,
    });
    let slowDone = false;
    slow.then(() => slowDone = true, () => slowDone = true);
    await waitFor("the slow call sent", () => slowSent);
    // Two tree calls past the gates (the interlock does not block yet) and queued behind it: the
    // router admits a call synchronously, within the call.
    const treeCall = () =>
      engine.services.callDevice(
        "sim0/motorctl0",
        "set_motor_duty",
        { motor_index: tv.i(1), duty: tv.d(0.7) },
        new AbortController().signal,
      ).then(() => "sent", (err: unknown) => err);
    const calls = [treeCall(), treeCall()];
    // The guard engages: relay 1 of the other provider on (polled at once after the call).
    await callAs(rt, "manual", "sim1/relayio0", "set_relay_ch1", { enabled: tv.b(true) });
    await waitFor("the interlock engaged", () => rt.alarms.interlocks()[0]!.blocking);
    assert.equal(slowDone, false, "the tree's calls still wait: LATENCY_MS is long enough");
    await slow;
    const [a, b] = await Promise.all(calls);
    for (const err of [a, b]) {
      assert.match(
        String((err as Error)?.message),
        /^Interlock motor_guard blocks sim0\/motorctl0 set_motor_duty: /,
        String(err),
      );
    }
    assert.notEqual(cached(rt, "sim0/motorctl0", "motor1_duty"), 0.7, "never sent");
    const s = engine.status();
    assert.deepEqual(
      s.refused_calls.map((
        r,
      ) => [r.device_handle, r.function, r.consecutive_refusals, r.refused_by]),
      [["sim0/motorctl0", "set_motor_duty", 2, "interlock motor_guard"]],
    );
    assert.deepEqual(s.device_outages, [], "an interlock is no device failure");
  }, {
    arm: true,
    config: {
      providers: [simProvider("sim0"), simProvider("sim1")],
      ...alarmsConfig(
        `
interlocks:
  - id: motor_guard
    block: [sim0/motorctl0/set_motor_duty]
    while: sim1/relayio0/relay_ch1_state == true
    message: Motor held while relay 1 of sim1 is on
`,
        ["sim0", "sim1"],
      ),
    },
  });
});
