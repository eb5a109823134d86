/**
 * A device whose e-stop read-back got no answer within its provider's whole `timeout_ms` did not
 * answer, as one whose safe-state call timed out did (estop_call_timed_out_return_test.ts): it is
 * secured again at its next answered poll while latched. Here the stop's call is answered OK, the
 * device goes away right then (the read-back, given the whole timeout_ms, hangs) and comes back
 * with its output not safe (duty 0.5); its polls answer all along -- the provider answers requests
 * concurrently, so the hung read holds none of them, and no poll fails. Before, nothing secured it:
 * the latch held, the output unsafe. A real kernel with the programmable provider as a child
 * process.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { call, expectation } from "./_fixture.ts";

/**
 * The provider's timeout_ms: how long the hung read-back is given. Every poll has it too: 2500 ms
 * keeps a poll of a loaded machine from timing out (which would find the device out by itself).
 */
const TIMEOUT_MS = 2500;
/**
 * verify_timeout_ms: past TIMEOUT_MS, so that the read-back has its provider's whole timeout_ms
 * (a read cut short by the verification's own bound says nothing of the device).
 */
const VERIFY_TIMEOUT_MS = TIMEOUT_MS + 1500;
/** How long the device is given to be secured again once the stop returned (generous). */
const SECURED_WITHIN_MS = 20_000;

/**
 * `p/m0`: its output `duty` (0.5: running), polled at 1 Hz (a periodic poll rarely falls between
 * the stop's call and its read-back), and set_duty(duty). The stop's set_duty is answered OK and
 * the read after it (the poll every call is followed by) shows duty 0; then the device goes away
 * for exactly one read -- the stop's read-back -- and answers duty 0.5 from then on (back at its
 * power-on output). A second set_duty (a securing run's) makes it 0.
 */
const INVENTORY: Inventory = {
  devices: {
    m0: {
      signals: [{ id: "duty", type: T.DOUBLE, hint: 1 }],
      values: [dbl("duty", 0.5)],
      functions: [{
        function_id: 7,
        name: "set_duty",
        policy: { category: 3 },
        args: [{ name: "duty", type: T.DOUBLE, required: true }],
      }],
      calls: [
        {
          read: {
            values: [dbl("duty", 0)],
            then: { hang: true, then: { values: [dbl("duty", 0.5)] } },
          },
        },
        { read: { values: [dbl("duty", 0)] } },
      ],
    },
  },
};

Deno.test("Estop latched: a device whose read-back got no answer within its provider's timeout_ms, its polls answering, is secured again at its next answered poll", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop_readback_timed_out_" });
  const file = `${dir}/inventory.json`;
  Deno.writeTextFileSync(file, JSON.stringify(INVENTORY));
  try {
    const rt = await startRuntime(testConfig({
      providers: [programmableProvider("p", file, { timeoutMs: TIMEOUT_MS })],
      safety: {
        hooks: [call("p/m0", "set_duty", { duty: { double: 0 } })],
        expect: [expectation("p/m0/duty", { equals: 0 })],
        verifyTimeoutMs: VERIFY_TIMEOUT_MS,
      },
    }));
    const duty = () => {
      const v = rt.cache.signal("p", "m0", "duty")?.value;
      return v?.type === "double" ? v.double : undefined;
    };
    try {
      await waitFor("m0 polled at duty 0.5", () => duty() === 0.5);
      const stop = await rt.estop.trigger("the device goes away as it takes the stop");
      assert.equal(stop.actions.length, 1, JSON.stringify(stop.actions));
      assert.equal(stop.actions[0]!.success, true, JSON.stringify(stop.actions));
      // No poll found it out: they answered all along.
      assert.equal(rt.outages.condition("p", "m0").kind, "up");

      // Its next poll answers (within a second): the device is back, secured and read back then.
      await waitFor(
        "m0 secured again and read back",
        () => rt.estop.status().verification?.outcome === "verified" && duty() === 0,
        SECURED_WITHIN_MS,
      ).catch(() => {});
      // Before: 0.5 -- the device answered every poll, so nothing ever secured it again.
      assert.equal(duty(), 0, "the device is at the safe state once it answers again");
      assert.equal(rt.estop.status().verification?.outcome, "verified");
      assert.equal(rt.estop.status().latched, true);
    } finally {
      await rt.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
