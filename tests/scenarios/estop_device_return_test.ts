/**
 * A device that drops out while its provider stays up (the simulated provider's
 * `inject_device_unavailable`: its reads and calls fail) when the e-stop latches gets none of the
 * ladder's calls. When it answers again while the latch holds, it is brought to the safe state and
 * read back, as a provider that comes back while latched is (docs/safety.md).
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { call, d, expectation, i, manualCall, readSignal } from "../safety/_fixture.ts";

/**
 * sim0, whose e-stop ladder sets motorctl0's motor 1 to duty 0 and reads it back (0, within
 * 300 ms); polled every `pollingIntervalMs` when given.
 */
function startMotorRig(pollingIntervalMs?: number): Promise<Kernel> {
  return startRuntime(testConfig({
    providers: [simProvider("sim0")],
    ...(pollingIntervalMs === undefined ? {} : { pollingIntervalMs }),
    safety: {
      hooks: [
        call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: { double: 0 } }),
      ],
      expect: [expectation("sim0/motorctl0/motor1_duty", { equals: 0 })],
      verifyTimeoutMs: 300,
    },
  }));
}

/** MANUAL, motor 1 at duty 0.5 (read back). */
async function motorAtHalf(rt: Kernel): Promise<void> {
  await rt.modes.request("MANUAL");
  await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.5) });
  assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor1_duty"), 0.5);
}

/** motorctl0 stops answering (reads and calls fail) for `ms`; sim0 stays up. */
async function motorctlOutFor(rt: Kernel, ms: number): Promise<void> {
  await manualCall(rt, "sim0", "chaos_control", 1, {
    device_id: { type: "string", string: "motorctl0" },
    duration_ms: i(ms),
  });
}

/**
 * Waits up to `withinMs` for the latched e-stop's read-back to be redone, then asserts motor 1 at
 * the safe state (`why` names the case), verified, the latch held.
 */
async function securedAgain(rt: Kernel, withinMs: number, why: string): Promise<void> {
  await waitFor(
    "the read-back redone",
    () => rt.estop.status().verification?.outcome === "verified",
    withinMs,
  ).catch(() => {});
  assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor1_duty"), 0, why);
  assert.equal(rt.estop.status().verification?.outcome, "verified");
  assert.equal(rt.estop.status().latched, true);
}

Deno.test("Estop brings a device that answers again while latched to the safe state, and reads it back", async () => {
  const rt = await startMotorRig();
  try {
    await motorAtHalf(rt);
    await motorctlOutFor(rt, 2500);
    await waitFor(
      "motorctl0 reads fail",
      () => rt.cache.device("sim0", "motorctl0")?.available === false,
    );
    const stop = await rt.estop.trigger("while motorctl0 is out");
    assert.equal(stop.actions[0]!.success, false, JSON.stringify(stop.actions));
    assert.notEqual(stop.verification.outcome, "verified");
    assert.equal(rt.registry.host("sim0")!.available, true);

    await waitFor(
      "motorctl0 answers again",
      () => rt.cache.device("sim0", "motorctl0")?.available === true,
    );
    // Bounded: the securing of the returned device (calls, then read-back) ends well within it.
    await securedAgain(
      rt,
      5000,
      "the device that answers again while latched is at the safe state",
    );
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop brings a device that answers again while latched to the safe state when only the stop saw it out (between two polls)", async () => {
  // Polls 5 s apart: motorctl0's 2 s outage below falls between two of them (600 ms in 3 s
  // before: a loaded machine's stall let the stop's call land after the outage once).
  const rt = await startMotorRig(5000);
  try {
    await motorAtHalf(rt);
    // Right after a poll of motorctl0, it stops answering for 2 s and the e-stop latches:
    // its safe-state call and its read-back fail; no poll does.
    const polledAt = rt.cache.device("sim0", "motorctl0")!.lastPollMono;
    await waitFor(
      "a poll of motorctl0",
      () => rt.cache.device("sim0", "motorctl0")!.lastPollMono !== polledAt,
      10_000,
      0,
    );
    await motorctlOutFor(rt, 2000);
    const stop = await rt.estop.trigger("while motorctl0 is out between polls");
    assert.equal(stop.actions[0]!.success, false, JSON.stringify(stop.actions));
    assert.equal(stop.verification.outcome, "unreachable", JSON.stringify(stop.verification));
    assert.equal(rt.outages.condition("sim0", "motorctl0").kind, "up", "no poll saw it out");

    // Its next poll answers (up to 5 s): the device is back, secured and read back then.
    // Before: 0.5 -- it answered every poll, so its return was never seen and never secured.
    await securedAgain(
      rt,
      12_000,
      "the device only the stop saw out is at the safe state once it answers again",
    );
  } finally {
    await rt.stop();
  }
});
