/**
 * A device with occasional read errors while FAULT stands (docs/safety.md, "A provider that comes
 * back while in FAULT"): each answer after a failed read is a device return, and each return makes
 * its provider's hook calls into FAULT again (the safe choice, kept; at most one run per
 * DEVICE_RETURN_MIN_INTERVAL_MS). What is bounded here: the log -- one WARN line per spell, its
 * count said at INFO when FAULT is left -- as the e-stop's securing runs for device returns are
 * (tests/safety/estop_device_return_flap_test.ts). The plant provider in-process, on virtual time:
 * it fails one read in READS_PER_FLAP, as an I2C sensor on a noisy bus does. No e-stop latch: the
 * hooks make their calls themselves.
 */
import assert from "node:assert/strict";
import { WireStatusCode } from "../../src/provider_sdk/mod.ts";
import { DEVICE_RETURN_MIN_INTERVAL_MS } from "../../src/state/mod.ts";
import { ManualClock, runToSettle, runUntil } from "../helpers/clock.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { rig } from "../helpers/rig.ts";
import { fanIntoFault, plantProvider } from "../safety/_fixture.ts";

/** Reads per flap: the first fails, the rest answer. */
const READS_PER_FLAP = 2;
const FLAPS = 16;

Deno.test("ModeManager in FAULT: a device failing one read in N makes its provider's hook calls again with one WARN line for the spell and its count when FAULT is left", async () => {
  const clock = new ManualClock();
  const r = await rig({
    clock,
    journald: true,
    providers: [plantProvider("plant")],
    automation: {
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0)] },
    },
  });
  const rt = r.kernel;
  const fake = () => r.provider<FakeProvider>("plant");
  const reads = () => fake().count("read_signals", "plant0");
  const condition = () => rt.outages.condition("plant", "plant0").kind;
  /** Hook calls (set_fan) the plant received after request index `from`. */
  const hookCallsFrom = (from: number) =>
    fake().requests.slice(from).filter((q) => q.kind === "call").length;
  try {
    const entry = await runToSettle(clock, rt.modes.requestWithReport("FAULT"), "FAULT");
    assert.deepEqual(entry.hook_failures, []);
    const fromFault = fake().requests.length;
    let lastFailure = fromFault;
    for (let i = 0; i < FLAPS; i++) {
      fake().answer("read_signals", { error: { code: WireStatusCode.UNAVAILABLE } }, "plant0");
      const before = reads();
      await runUntil(clock, `flap ${i}: its failed read`, () => reads() > before);
      assert.equal(condition(), "failing", `flap ${i}`);
      lastFailure = fake().requests.length;
      fake().answer("read_signals", null, "plant0");
      const failed = reads();
      await runUntil(clock, `flap ${i}: its answers`, () => reads() >= failed + READS_PER_FLAP - 1);
      assert.equal(condition(), "up", `flap ${i}`);
    }
    // Whatever was deferred is made: past one more interval, every return has had its run.
    const end = clock.monoMs() + DEVICE_RETURN_MIN_INTERVAL_MS + 1000;
    await runUntil(clock, "the interval past the last return", () => clock.monoMs() >= end);
    assert.ok(hookCallsFrom(lastFailure) >= 1, "the last return got its hook calls");

    const runs = hookCallsFrom(fromFault);
    assert.ok(runs >= 2, `hook calls made again at several returns: ${runs} run(s)`);
    const warns = r.lines.filter((l) => /^<4>\[mode\] .*answering again/.test(l));
    assert.equal(warns.length, 1, `${runs} runs for device returns:\n${warns.join("\n")}`);
    assert.match(warns[0]!, /logged at DEBUG and counted until FAULT is left/);

    // Leaving FAULT (once the runs have ended: re-arming waits for them) ends the spell.
    let left = false;
    for (let i = 0; i < 50 && !left; i++) {
      left = await runToSettle(clock, rt.modes.requestWithReport("MANUAL"), "FAULT -> MANUAL")
        .then(() => true, () => false);
    }
    assert.ok(left, "FAULT -> MANUAL accepted");
    const ends = r.lines.filter((l) => /^<6>\[mode\] .*for devices answering again/.test(l));
    assert.equal(ends.length, 1, r.lines.join("\n"));
    assert.match(
      ends[0]!,
      new RegExp(`provider plant: hook calls into FAULT made again ${runs} time\\(s\\)`),
    );
  } finally {
    await r.stop();
  }
});
