/**
 * A device with occasional read errors while the e-stop is latched (docs/safety.md, "A provider
 * that comes back while latched"): each answer after a failed read is a device return, and each
 * return secures its provider again (the safe choice, kept). What is bounded: the securing runs of
 * one provider for its devices' returns (at most one per DEVICE_RETURN_MIN_INTERVAL_MS, the
 * returns meanwhile secured together at its end) and the log (one WARN per spell, its count said
 * when the spell ends). The plant provider in-process, on virtual time: it fails one read in
 * READS_PER_FLAP, as an I2C sensor on a noisy bus does.
 */
import assert from "node:assert/strict";
import { WireStatusCode } from "../../src/provider_sdk/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { DEVICE_RETURN_MIN_INTERVAL_MS } from "../../src/state/mod.ts";
import { ManualClock, runToSettle, runUntil } from "../helpers/clock.ts";
import { untilTurns } from "../helpers/turns.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { rig } from "../helpers/rig.ts";
import {
  heaterOffHeldReadBack,
  heaterOffLadder,
  heaterOffReader,
  heaterOffVerifiedLadder,
} from "./_clock_rig.ts";
import { call, plantProvider } from "./_fixture.ts";
import { holdingEstop } from "./_holding_estop_rig.ts";
import { MAX_NAMED_IN_WARNING } from "../../src/safety/mod.ts";

/** Reads per flap: the first fails, the rest answer. */
const READS_PER_FLAP = 2;
const FLAPS = 16;

Deno.test("Estop latched: a device failing one read in N re-secures its provider at most once per DEVICE_RETURN_MIN_INTERVAL_MS, with one WARN line for the spell and its count at the release", async () => {
  const clock = new ManualClock();
  const r = await rig({
    clock,
    journald: true,
    providers: [plantProvider("plant")],
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
  });
  const rt = r.kernel;
  const fake = () => r.provider<FakeProvider>("plant");
  const reads = () => fake().count("read_signals", "plant0");
  const condition = () => rt.outages.condition("plant", "plant0").kind;
  /** Ladder calls (set_fan) the plant received after request index `from`. */
  const ladderCallsFrom = (from: number) =>
    fake().requests.slice(from).filter((q) => q.kind === "call").length;
  try {
    await runToSettle(clock, rt.estop.trigger("flap test"), "the stop");
    const fromStop = fake().requests.length;
    const startedAt = clock.monoMs();
    let lastFailure = fromStop;
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
    const elapsed = clock.monoMs() - startedAt;
    // Whatever was deferred is made: past one more interval, no securing run waits.
    const end = clock.monoMs() + DEVICE_RETURN_MIN_INTERVAL_MS + 1000;
    await runUntil(clock, "the interval past the last return", () => clock.monoMs() >= end);
    await runUntil(
      clock,
      "securing runs ended",
      () => rt.estop.securing(rt.registry.host("plant")!)?.then(() => true),
    );

    const runs = ladderCallsFrom(fromStop);
    const bound = Math.ceil(elapsed / DEVICE_RETURN_MIN_INTERVAL_MS) + 1;
    assert.ok(runs >= 2, `re-securing is kept: ${runs} run(s)`);
    assert.ok(
      runs <= bound,
      `${FLAPS} returns in ${elapsed} ms made ${runs} securing runs (at most ${bound})`,
    );
    // The last return is secured too (at once or at its interval's end).
    assert.ok(ladderCallsFrom(lastFailure) >= 1, "the last return was not secured");

    const warns = r.lines.filter((l) => /^<4>\[estop\] .*answering again/.test(l));
    assert.equal(warns.length, 1, warns.join("\n"));
    rt.estop.clear();
    const ends = r.lines.filter((l) =>
      /^<6>\[estop\] .*securing run\(s\) for devices answering again/.test(l)
    );
    assert.equal(ends.length, 1, r.lines.join("\n"));
    assert.match(ends[0]!, new RegExp(`provider plant: ${runs} securing run\\(s\\)`));
  } finally {
    await r.stop();
  }
});

Deno.test("Estop latched: a provider's own return before the turn of a device return's securing run says its own line and opens no device-return spell", async () => {
  // In-process: the real Estop over a router that holds each call until the test answers it.
  const { estop, host, comeBack, lines, calls, answerAll, deviceReturn, latched, backHeld } =
    holdingEstop({ deviceReturns: true, safeState: heaterOffLadder() });
  await latched("test", "the stop's ladder call");

  // plant comes back: its securing run's ladder call is held. A device of it answers again
  // meanwhile: that run waits behind it. Then plant itself comes back again, before its turn.
  await backHeld();
  deviceReturn();
  comeBack();
  await untilTurns(() => (answerAll(), calls() === 3), "the second securing run's ladder call");
  answerAll();
  await estop.securing(host);
  estop.clear();

  const runs = lines.filter((l) => /bringing it to the safe state/.test(l));
  assert.equal(runs.length, 2, lines.join("\n"));
  for (const l of runs) assert.match(l, /WARN.*provider plant is AVAILABLE again;/, l);
  const spell = lines.filter((l) => /answering again/.test(l));
  assert.deepEqual(spell, [], "no device-return spell");
});

Deno.test("Estop latched: a device return's securing run still waiting for its turn when the latch is released and pressed again is skipped, and opens no device-return spell", async () => {
  // In-process: the real Estop over a router that holds each call until the test answers it.
  const { estop, lines, calls, answerAll, deviceReturn, latched, backHeld } = holdingEstop({
    deviceReturns: true,
    safeState: heaterOffLadder(),
  });
  await latched("test", "the stop's ladder call");

  // plant comes back: its securing run's ladder call is held. A device of it answers again
  // meanwhile: that run waits behind it. The latch is released and pressed again before its turn.
  await backHeld("the securing run's ladder call");
  deviceReturn();
  estop.clear();
  const second = estop.trigger("again");
  let answered = false;
  void second.then(() => (answered = true));
  await untilTurns(() => (answerAll(), answered), "the new latch's stop");
  estop.clear();

  const spell = lines.filter((l) => /answering again/.test(l));
  assert.deepEqual(spell, [], "no device-return spell");
  assert.equal(
    calls(),
    3,
    "the securing run's call, then the new latch's stop's: none for the old",
  );
});

Deno.test("Estop latched: a device return's securing run waiting for its turn when the latch is released and pressed again while a stop runs secures its provider at its turn, and opens no device-return spell", async () => {
  // In-process: the real Estop over a router that holds each call, and a read-back that holds
  // each read, until the test answers it.
  const met = heaterOffReader().reads;
  const heldReads: (() => void)[] = [];
  const reads: FreshReader = {
    readFresh: (...args) =>
      new Promise((resolve) => heldReads.push(() => resolve(met.readFresh(...args)))),
  };
  const answerReads = () => heldReads.splice(0).forEach((answer) => answer());
  const { estop, lines, calls, answerAll: answerCalls, deviceReturn } = holdingEstop({
    reads,
    deviceReturns: true,
    // Its read-back waits for the held reads, never for its timeout.
    safeState: { ...heaterOffVerifiedLadder(), verifyTimeoutMs: 600_000 },
  });
  // The stop's ladder call to plant is held. A device of plant answers again meanwhile: its
  // securing run waits behind that call. Released and pressed again: the new latch's stop waits
  // for the stop under way (its whole stop, read-back included).
  const first = estop.trigger("first latch");
  await untilTurns(() => calls() === 1, "the first stop's ladder call");
  deviceReturn();
  estop.clear();
  const second = estop.trigger("second latch");
  // The first stop's call answers; its read-back is held: the new latch's stop has not begun.
  answerCalls();
  await untilTurns(() => heldReads.length > 0, "the first stop's read-back");
  await untilTurns(
    () => calls() === 2,
    "plant secured at its securing run's turn, not left until the stop under way has read back",
  );
  let answered = false;
  void Promise.all([first, second]).then(() => (answered = true));
  await untilTurns(() => (answerCalls(), answerReads(), answered), "both stops");
  estop.clear();

  assert.equal(calls(), 3, "the first stop's call, the securing run's, the new latch's stop's");
  // Its line at WARN, opening no spell (its note and, at the release, its count).
  const said = lines.filter((l) => /bringing it to the safe state/.test(l));
  assert.equal(said.length, 1, lines.join("\n"));
  assert.match(said[0]!, /^WARN .*provider plant has device plant0 answering again;/);
  const spell = lines.filter((l) => /further securing runs|securing run\(s\) for devices/.test(l));
  assert.deepEqual(spell, [], "no device-return spell for a return seen under the released latch");
});

Deno.test("Estop latched: a provider's return while a securing run of a released latch waits to be made under the new latch, whose stop has not begun, joins that run: no second run of the same calls", async () => {
  // In-process: the real Estop over a router that holds each call, and a read-back that holds
  // each read, until the test answers it.
  const { reads, safeState, heldReads, answerReads } = heaterOffHeldReadBack();
  const { estop, host, comeBack, lines, calls, answerAll: answerCalls, deviceReturn } =
    holdingEstop({ reads, deviceReturns: true, safeState });
  // The stop's ladder call to plant is held. A device of plant answers again meanwhile: its
  // securing run waits behind that call. Released and pressed again: the new latch's stop waits
  // for the stop under way. plant itself then comes back under the new latch, before that run's
  // turn: the run waiting will secure it under the new latch at its turn (its calls are the same).
  const first = estop.trigger("first latch");
  await untilTurns(() => calls() === 1, "the first stop's ladder call");
  deviceReturn();
  estop.clear();
  const second = estop.trigger("second latch");
  comeBack();
  answerCalls();
  await untilTurns(() => heldReads() > 0, "the first stop's read-back");
  await untilTurns(() => calls() === 2, "plant secured at the waiting run's turn");
  let answered = false;
  void Promise.all([first, second, estop.securing(host)]).then(() => (answered = true));
  await untilTurns(() => (answerCalls(), answerReads(), answered), "both stops");
  estop.clear();

  assert.equal(
    calls(),
    3,
    "the first stop's call, one securing run's, the new latch's stop's: " +
      lines.filter((l) => /bringing it to the safe state/.test(l)).join(" | "),
  );
  const said = lines.filter((l) => /bringing it to the safe state/.test(l));
  assert.equal(said.length, 1, lines.join("\n"));
  assert.match(said[0]!, /^WARN .*provider plant is AVAILABLE again;/, "it says the return");
});

Deno.test("Estop latched: a return under a new latch that joined a released latch's waiting run is secured by that run at its turn, also once the new latch's stop has begun: the calls it waits for and counts are made", async () => {
  // In-process: the real Estop over a router that holds each call, and a read-back that holds
  // each read, until the test answers it.
  const { reads, safeState, heldReads, answerReads } = heaterOffHeldReadBack();
  const { estop, host, comeBack, lines, calls, answerAll: answerCalls } = holdingEstop({
    reads,
    safeState,
  });
  // The first stop's ladder call is made; its read-back is held. plant comes back: its securing
  // run's call is held. It comes back again: a second run waits behind that call.
  const first = estop.trigger("first latch");
  await untilTurns(() => calls() === 1, "the first stop's ladder call");
  answerCalls();
  await untilTurns(() => heldReads() > 0, "the first stop's read-back");
  comeBack();
  await untilTurns(() => calls() === 2, "the first securing run's call");
  comeBack();
  // Released and pressed again: the new latch's stop waits for the first one's read-back. plant
  // comes back once more under the new latch (a reload's restart, say): it joins the run waiting.
  estop.clear();
  const second = estop.trigger("second latch");
  comeBack();
  const secured = estop.securing(host);
  assert.ok(secured !== null);
  // The first stop answers: the new latch's stop begins, its call to plant behind that run.
  answerReads();
  await first;
  let answered = false;
  void Promise.all([second, secured]).then(() => (answered = true));
  await untilTurns(() => (answerCalls(), answerReads(), answered), "the runs and the second stop");
  estop.clear();

  const actions = await secured;
  assert.equal(
    actions.length,
    1,
    "the return under the new latch is secured by the run it joined, whose calls it counts: " +
      lines.filter((l) => /bringing it to the safe state/.test(l)).join(" | "),
  );
  assert.equal(calls(), 4, "the first stop's, two securing runs', the new latch's stop's");
});

/**
 * plant is latched and back, its securing run's call held; then `devices` of it answer again, in
 * order (one device-return run, waiting behind that call): the line of that run once made.
 */
async function deviceReturnRunLine(devices: readonly string[]): Promise<string> {
  const { estop, host, lines, answerAll, deviceReturn, latched, backHeld } = holdingEstop({
    deviceReturns: true,
    safeState: heaterOffLadder(),
  });
  await latched("test", "the stop's ladder call");
  await backHeld();
  for (const d of devices) deviceReturn(d);
  let done = false;
  void estop.securing(host)!.then(() => (done = true));
  await untilTurns(() => (answerAll(), done), "the device-return run");
  estop.clear();
  const said = lines.filter((l) => /answering again; bringing it to the safe state/.test(l));
  assert.equal(said.length, 1, lines.join("\n"));
  return said[0]!;
}

Deno.test("Estop latched: a device return joining a waiting device-return run is named in its line with the first", async () => {
  const line = await deviceReturnRunLine(["plant0", "plant1", "plant0"]);
  assert.match(line, /provider plant has devices plant0, plant1 answering again;/, line);
});

Deno.test("Estop latched: a device-return run joined by many devices names MAX_NAMED_IN_WARNING of them and counts the rest", async () => {
  const devices = Array.from({ length: MAX_NAMED_IN_WARNING + 2 }, (_, i) => `plant${i}`);
  const line = await deviceReturnRunLine(devices);
  const named = devices.slice(0, MAX_NAMED_IN_WARNING).join(", ");
  assert.ok(line.includes(`has devices ${named} and 2 more answering again;`), line);
});

/**
 * Latched; plant comes back, its securing run's call held; a device of it answers again (a run
 * waiting behind it), then a reload adds a call for plant before that run's turn. Once the reload's
 * wait and plant's securing have ended, the latch is released: the lines said, returned.
 */
async function deviceReturnThenReloadLines(): Promise<string[]> {
  const { estop, host, lines, answerAll, deviceReturn, latched, backHeld } = holdingEstop({
    deviceReturns: true,
    safeState: heaterOffLadder(),
  });
  await latched("test", "the stop's ladder call");
  await backHeld();
  deviceReturn("plant1");
  const runs = estop.reconfigure({
    ...heaterOffLadder(),
    hooks: [...heaterOffLadder().hooks, call("plant/plant0", "set_fan", { duty: { double: 0 } })],
  });
  let done = false;
  void Promise.all(runs).then(() => (done = true));
  await untilTurns(() => (answerAll(), done), "the reload's wait");
  await estop.securing(host);
  estop.clear();
  return lines;
}

Deno.test("Estop latched: a reload changing the ladder calls of a provider whose device return's securing run waits for its turn names the device return and the reload in its line, at WARN", async () => {
  const lines = await deviceReturnThenReloadLines();
  const said = lines.filter((l) => /bringing it to the safe state \(2 call/.test(l));
  assert.equal(said.length, 1, lines.join("\n"));
  assert.match(
    said[0]!,
    /WARN.*provider plant has device plant1 answering again and had its ladder calls changed by a reload;/,
  );
});

Deno.test("Estop latched: a reload changing the ladder calls of a provider whose device return's securing run waits for its turn opens no device-return spell", async () => {
  const lines = await deviceReturnThenReloadLines();
  // Not the device-return spell's: no note, no count at the release.
  const spell = lines.filter((l) => /further securing runs|securing run\(s\) for devices/.test(l));
  assert.deepEqual(spell, [], lines.join("\n"));
});
