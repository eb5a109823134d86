/**
 * A device whose safe-state call got no answer in time (DEADLINE_EXCEEDED at the runtime: its
 * provider, waiting on the device longer than the runtime's timeout_ms, answers it only later, and
 * then that it did not take it), while its polls answered all along -- its outage fell between two
 * polls, so no read failed -- is secured again at its next answered poll while latched, as one whose
 * call its provider answered UNAVAILABLE in time is (estop_call_unavailable_return_test.ts); so are
 * the hook calls into FAULT made again while FAULT stands. A call that timed out is one the device
 * did not answer: the runtime cannot tell that it was carried out. So is one its provider answered
 * DEADLINE_EXCEEDED in time (its own wait on the device ran out). Before, nothing secured either.
 * The plant provider in-process, on virtual time.
 */
import assert from "node:assert/strict";
import { WireStatusCode } from "../../src/provider_sdk/mod.ts";
import { ManualClock, runToSettle, runUntil } from "../helpers/clock.ts";
import type { FakeAnswer, FakeProvider } from "../helpers/fake_provider.ts";
import { rig } from "../helpers/rig.ts";
import { DEVICE_RETURN_MIN_INTERVAL_MS } from "../../src/state/mod.ts";
import { call, fanIntoFault, plantProvider } from "./_fixture.ts";

/** The plant provider's timeout_ms here: its call is answered just past it. */
const TIMEOUT_MS = 500;

/** The device's provider answers the call only past the runtime's deadline, that it did not take it. */
const LATE: FakeAnswer<"call"> = {
  delayMs: TIMEOUT_MS + 1,
  error: { code: WireStatusCode.UNAVAILABLE, message: "scripted: the device did not answer" },
};

async function stopWithCallTimedOut(
  how: "estop" | "fault",
  answer: FakeAnswer<"call"> = LATE,
): Promise<{ made: number; error: string; mode: string; latched: boolean }> {
  const clock = new ManualClock();
  const r = await rig({
    clock,
    providers: [plantProvider("plant", { timeoutMs: TIMEOUT_MS })],
    ...(how === "estop"
      ? { safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] } }
      : {
        automation: {
          enabled: true,
          modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0)] },
        },
        safety: { present: true },
      }),
  });
  const rt = r.kernel;
  const fake = () => r.provider<FakeProvider>("plant");
  const calls = () => fake().count("call", "plant0");
  const reads = () => fake().count("read_signals", "plant0");
  try {
    // The device does not take the stop's call (LATE: its provider says so only after the
    // runtime's deadline, 1 ms past it, so the polls queued behind it are answered in time).
    fake().answer("call", answer, "plant0");
    let error: string;
    if (how === "estop") {
      const stop = await runToSettle(clock, rt.estop.trigger("call timed out"), "the stop");
      assert.equal(stop.actions.length, 1, JSON.stringify(stop.actions));
      assert.equal(stop.actions[0]!.success, false, JSON.stringify(stop.actions));
      error = stop.actions[0]!.error ?? "";
    } else {
      const report = await runToSettle(clock, rt.modes.requestWithReport("FAULT"), "FAULT");
      assert.equal(report.hook_failures.length, 1, JSON.stringify(report));
      error = report.hook_failures[0]!.error;
    }
    fake().answer("call", null, "plant0");
    const afterStop = calls();
    // Past a few answered polls and the device-return interval: a securing run, if any, is made.
    const polled = reads();
    await runUntil(clock, "polls after the stop", () => reads() >= polled + 3);
    const end = clock.monoMs() + DEVICE_RETURN_MIN_INTERVAL_MS + 1000;
    await runUntil(clock, "the return interval", () => clock.monoMs() >= end);
    await runUntil(
      clock,
      "securing runs ended",
      () => (rt.estop.securing(rt.registry.host("plant")!) ?? Promise.resolve()).then(() => true),
    );
    // No poll found it out: its polls answered in time all along.
    assert.equal(rt.outages.condition("plant", "plant0").kind, "up");
    return {
      made: calls() - afterStop,
      error,
      mode: rt.modes.current(),
      latched: rt.estop.latched,
    };
  } finally {
    await r.stop();
  }
}

Deno.test("Estop latched: a device whose safe-state call timed out, its polls answering, is secured again at its next answered poll", async () => {
  const { made, error, latched } = await stopWithCallTimedOut("estop");
  assert.match(error, /^DEADLINE_EXCEEDED/);
  assert.equal(latched, true);
  // Before: 0 -- the device answered every poll, so nothing ever secured it.
  assert.equal(made, 1, "the safe-state call is made again once the device answers");
});

Deno.test("ModeManager: a device whose hook call into FAULT timed out, its polls answering, gets it again at its next answered poll", async () => {
  const { made, error, mode } = await stopWithCallTimedOut("fault");
  assert.match(error, /DEADLINE_EXCEEDED/);
  assert.equal(mode, "FAULT");
  // Before: 0 -- the device answered every poll, so its hook call was never made again.
  assert.equal(made, 1, "the hook call into FAULT is made again once the device answers");
});

Deno.test("Estop latched: a device whose safe-state call its provider answered DEADLINE_EXCEEDED, its polls answering, is secured again at its next answered poll", async () => {
  const { made, error, latched } = await stopWithCallTimedOut("estop", {
    error: { code: WireStatusCode.DEADLINE_EXCEEDED, message: "scripted: bus timeout" },
  });
  assert.match(error, /^DEADLINE_EXCEEDED/);
  assert.equal(latched, true);
  // Before: 0 -- only UNAVAILABLE was taken for a device that did not answer.
  assert.equal(made, 1, "the safe-state call is made again once the device answers");
});
