/**
 * A device whose safe-state call its provider answered UNAVAILABLE (the device did not answer),
 * while its polls answered all along -- its outage fell between two polls, so no read failed --
 * is secured again at its next answered poll while latched, as a device whose read failed is
 * (docs/safety.md, "A provider that comes back while latched"); so are the hook calls into FAULT
 * made again while FAULT stands. Before, nothing did: no poll had found it out, so its answers
 * were no return. A call refused for another reason (its arguments, INVALID_ARGUMENT) says
 * nothing of the device answering: not made again. The plant provider in-process, on virtual
 * time.
 */
import assert from "node:assert/strict";
import { WireStatusCode } from "../../src/provider_sdk/mod.ts";
import { ManualClock, runToSettle, runUntil } from "../helpers/clock.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { rig } from "../helpers/rig.ts";
import { DEVICE_RETURN_MIN_INTERVAL_MS } from "../../src/state/mod.ts";
import { call, fanIntoFault, plantProvider } from "./_fixture.ts";

async function stopWithCallAnswered(
  code: number,
  how: "estop" | "fault" = "estop",
): Promise<{ made: number; latched: boolean; mode: string }> {
  const clock = new ManualClock();
  const r = await rig({
    clock,
    providers: [plantProvider("plant")],
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
    // The device does not take the stop's call; its reads answer (no poll finds it out).
    fake().answer("call", { error: { code, message: "scripted" } }, "plant0");
    if (how === "estop") {
      const stop = await runToSettle(clock, rt.estop.trigger("call refused"), "the stop");
      assert.equal(stop.actions.length, 1, JSON.stringify(stop.actions));
      assert.equal(stop.actions[0]!.success, false, JSON.stringify(stop.actions));
    } else {
      const report = await runToSettle(clock, rt.modes.requestWithReport("FAULT"), "FAULT");
      assert.equal(report.hook_failures.length, 1, JSON.stringify(report));
    }
    assert.equal(rt.outages.condition("plant", "plant0").kind, "up");
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
    assert.equal(rt.outages.condition("plant", "plant0").kind, "up");
    return { made: calls() - afterStop, latched: rt.estop.latched, mode: rt.modes.current() };
  } finally {
    await r.stop();
  }
}

Deno.test("Estop latched: a device whose safe-state call its provider answered UNAVAILABLE, its polls answering, is secured again at its next answered poll", async () => {
  const { made, latched } = await stopWithCallAnswered(WireStatusCode.UNAVAILABLE);
  assert.equal(latched, true);
  // Before: 0 -- the device answered every poll, so nothing ever secured it.
  assert.equal(made, 1, "the safe-state call is made again once the device answers");
});

Deno.test("Estop latched: a safe-state call refused INVALID_ARGUMENT is not made again at the device's next poll", async () => {
  const { made, latched } = await stopWithCallAnswered(WireStatusCode.INVALID_ARGUMENT);
  assert.equal(latched, true);
  assert.equal(made, 0, "a refusal of the call is no outage of the device");
});

Deno.test("ModeManager: a device whose hook call into FAULT its provider answered UNAVAILABLE, its polls answering, gets it again at its next answered poll", async () => {
  const { made, mode } = await stopWithCallAnswered(WireStatusCode.UNAVAILABLE, "fault");
  assert.equal(mode, "FAULT");
  // Before: 0 -- the device answered every poll, so its hook call was never made again.
  assert.equal(made, 1, "the hook call into FAULT is made again once the device answers");
});
