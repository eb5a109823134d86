/**
 * AlarmMonitor on typed inputs: limits (strictly past), hysteresis (the exact clearing boundary
 * and one past it), the raise delay, levels, bad quality, ack, shelve bounds and expiry.
 */
import assert from "node:assert/strict";
import {
  alarmAccepts,
  AlarmMonitor,
  MAX_ALARM_TRANSITIONS,
  MAX_SHELVE_MS,
} from "../../src/alarms/mod.ts";
import { RuntimeError, type TypedValue } from "../../src/common/mod.ts";
import type { AlarmConfig } from "../../src/config/mod.ts";

const WALL0 = 1_760_000_000_000;

function alarm(o: Partial<AlarmConfig> = {}): AlarmConfig {
  return {
    id: "t1",
    signal: "sim0/tempctl0/tc1_temp",
    providerId: "sim0",
    deviceId: "tempctl0",
    signalId: "tc1_temp",
    limits: { hi: 80 },
    level: "MAJOR",
    hysteresis: 0,
    delayMs: 0,
    onBadQuality: "alarm",
    action: "none",
    message: "",
    path: "alarms[0]",
    ...o,
  };
}

const d = (v: number): TypedValue => ({ type: "double", double: v });

/** Feeds readings at the given monotonic times; returns the transitions (null: none). */
class Feed {
  readonly m: AlarmMonitor;
  mono = 0;
  constructor(config: AlarmConfig) {
    this.m = new AlarmMonitor(config);
  }
  /** A good reading `dt` ms after the last one; returns the transition name or null. */
  good(v: TypedValue, dt = 100): string | null {
    this.mono += dt;
    return this.m.evaluate(v, "OK", true, this.mono, WALL0 + this.mono)?.transition ?? null;
  }
  value(x: number, dt = 100): string | null {
    return this.good(d(x), dt);
  }
  bad(quality: "STALE" | "FAULT" | "UNAVAILABLE" = "STALE", dt = 100): string | null {
    this.mono += dt;
    return this.m.evaluate(d(1), quality, false, this.mono, WALL0 + this.mono)?.transition ??
      null;
  }
}

function refusal(fn: () => unknown): RuntimeError {
  try {
    fn();
  } catch (err) {
    if (err instanceof RuntimeError) return err;
    throw err;
  }
  throw new Error("did not throw");
}

Deno.test("AlarmMonitor raises strictly past hi and clears only below hi - hysteresis", () => {
  const f = new Feed(alarm({ limits: { hi: 80 }, hysteresis: 2 }));
  assert.equal(f.value(80), null, "at the limit: not past it");
  assert.equal(f.m.state, "normal");
  assert.equal(f.value(80.001), "raise");
  assert.deepEqual([f.m.state, f.m.level, f.m.cause, f.m.limit], ["active", "MINOR", "hi", 80]);
  assert.equal(f.value(79), null, "inside the hysteresis band: still active");
  assert.equal(f.value(78), null, "exactly hi - hysteresis: still active");
  assert.equal(f.m.state, "active");
  assert.equal(f.value(77.999), "clear");
  assert.deepEqual([f.m.state, f.m.level, f.m.cause, f.m.limit], ["normal", null, null, null]);
  assert.equal(f.value(79.5), null, "below hi again: no raise");
});

Deno.test("AlarmMonitor with hysteresis 0 clears as soon as the value is below the limit", () => {
  const f = new Feed(alarm({ limits: { hi: 80 } }));
  assert.equal(f.value(81), "raise");
  assert.equal(f.value(80), null, "exactly at the limit: holds");
  assert.equal(f.value(79.99), "clear");
});

Deno.test("AlarmMonitor lo and lolo raise below the limit and clear above it plus hysteresis", () => {
  const f = new Feed(alarm({ limits: { lolo: 0, lo: 10 }, hysteresis: 1 }));
  assert.equal(f.value(10), null);
  assert.equal(f.value(9.5), "raise");
  assert.deepEqual([f.m.level, f.m.cause, f.m.limit], ["MINOR", "lo", 10]);
  assert.equal(f.value(-0.5), "raise", "past lolo: a new raise at MAJOR");
  assert.deepEqual([f.m.level, f.m.cause, f.m.limit], ["MAJOR", "lolo", 0]);
  assert.equal(f.value(5), null, "back above lolo: the level stays the highest reached");
  assert.equal(f.m.level, "MAJOR");
  assert.equal(f.value(11), null, "exactly lo + hysteresis: still active");
  assert.equal(f.value(11.01), "clear");
});

Deno.test("AlarmMonitor escalates from MINOR to MAJOR with a new raise that needs a new ack", () => {
  const f = new Feed(alarm({ limits: { hi: 80, hihi: 90 }, hysteresis: 2 }));
  assert.equal(f.value(85), "raise");
  assert.equal(f.m.ack(WALL0)?.transition, "ack");
  assert.equal(f.m.state, "active_acked");
  assert.equal(f.value(89), null);
  assert.equal(f.value(90.5), "raise");
  assert.deepEqual([f.m.state, f.m.level, f.m.cause, f.m.limit], ["active", "MAJOR", "hihi", 90]);
  assert.equal(f.value(85), null, "MAJOR stays until it clears");
  assert.equal(f.value(78.5), null, "above hi - hysteresis");
  assert.equal(f.value(77.9), "clear");
});

Deno.test("AlarmMonitor raises only after the condition held for delay_ms, and starts over when it lapses", () => {
  const f = new Feed(alarm({ limits: { hi: 80 }, delayMs: 1000 }));
  assert.equal(f.value(81, 0), null, "first reading past the limit: the delay starts");
  assert.equal(f.value(85, 999), null, "999 ms later");
  assert.equal(f.value(79, 1), null, "the condition lapses at 1000 ms: nothing raises");
  assert.equal(f.value(81, 100), null, "the delay starts over");
  assert.equal(f.value(82, 999), null);
  assert.equal(f.value(82, 1), "raise", "held for exactly delay_ms");
  assert.equal(f.m.state, "active");
  assert.equal(f.value(79.9, 100), "clear", "clearing has no delay");
});

Deno.test("AlarmMonitor treats a bad input as a MAJOR alarm (fail safe) unless on_bad_quality is ignore", () => {
  const f = new Feed(alarm({ limits: { hi: 80 }, delayMs: 200 }));
  assert.equal(f.bad("STALE", 0), null, "the delay applies to a bad input too");
  assert.equal(f.bad("STALE", 199), null);
  assert.equal(f.bad("STALE", 1), "raise");
  assert.deepEqual([f.m.level, f.m.cause, f.m.limit], ["MAJOR", "bad_quality", null]);
  assert.equal(f.m.lastQuality, "STALE");
  assert.equal(f.value(85), null, "good again but past hi: still raised, at MAJOR");
  assert.equal(f.value(70), "clear");

  const ignoring = new Feed(alarm({ limits: { hi: 80 }, onBadQuality: "ignore", delayMs: 200 }));
  assert.equal(ignoring.bad("UNAVAILABLE"), null);
  assert.equal(ignoring.bad("FAULT", 10_000), null);
  assert.equal(ignoring.m.state, "normal");
  assert.equal(ignoring.value(81, 0), null);
  assert.equal(ignoring.bad("STALE", 150), null, "a bad reading resets a pending raise...");
  assert.equal(ignoring.value(81, 150), null, "...so 300 ms past the first reading is too early");
  assert.equal(ignoring.value(81, 200), "raise");
  assert.equal(ignoring.bad("STALE"), null, "...and an ignored bad input never clears it");
  assert.equal(ignoring.m.state, "active");
});

Deno.test("AlarmMonitor alarm_when raises its level on the exact bool or string value", () => {
  const b = new Feed(alarm({ limits: {}, alarmWhen: true, level: "MINOR" }));
  assert.equal(b.good({ type: "bool", bool: false }), null);
  assert.equal(b.good({ type: "bool", bool: true }), "raise");
  assert.deepEqual([b.m.level, b.m.cause, b.m.limit], ["MINOR", "alarm_when", true]);
  assert.equal(b.good({ type: "bool", bool: false }), "clear");

  const s = new Feed(alarm({ limits: {}, alarmWhen: "open" }));
  assert.equal(s.good({ type: "string", string: "Open" }), null);
  assert.equal(s.good({ type: "string", string: "open" }), "raise");
  assert.equal(s.m.level, "MAJOR");
  assert.equal(s.good({ type: "string", string: "closed" }), "clear");
});

Deno.test("alarmAccepts: numbers for limits, the alarm_when type otherwise", () => {
  const limits = alarm();
  assert.equal(alarmAccepts(limits, d(1)), true);
  assert.equal(alarmAccepts(limits, { type: "int64", int64: 3 }), true);
  assert.equal(alarmAccepts(limits, { type: "uint64", uint64: 2n ** 60n }), true);
  assert.equal(alarmAccepts(limits, { type: "bool", bool: true }), false);
  assert.equal(alarmAccepts(limits, { type: "string", string: "81" }), false);
  const when = alarm({ limits: {}, alarmWhen: "open" });
  assert.equal(alarmAccepts(when, { type: "string", string: "x" }), true);
  assert.equal(alarmAccepts(when, { type: "bool", bool: true }), false);
  assert.equal(
    alarmAccepts(alarm({ limits: {}, alarmWhen: false }), { type: "bool", bool: true }),
    true,
  );
});

Deno.test("AlarmMonitor compares 64-bit integers beyond 2^53 exactly", () => {
  const f = new Feed(alarm({ limits: { hi: 2 ** 60 } }));
  assert.equal(f.good({ type: "uint64", uint64: 2n ** 60n }), null);
  assert.equal(f.good({ type: "uint64", uint64: 2n ** 60n + 1n }), "raise");
  assert.equal(f.good({ type: "int64", int64: 5 }), "clear");
});

Deno.test("AlarmMonitor ack: active -> active_acked once; anything else not active is refused", () => {
  const f = new Feed(alarm());
  const notActive = refusal(() => f.m.ack(WALL0));
  assert.equal(notActive.code, "FAILED_PRECONDITION");
  assert.equal(notActive.message, "Alarm t1 is normal: only an active alarm is acknowledged");
  f.value(81);
  const t = f.m.ack(WALL0 + 105);
  assert.deepEqual(t, {
    transition: "ack",
    state: "active_acked",
    level: "MINOR",
    cause: "hi",
    limit: 80,
    value: d(81),
    quality: "OK",
    at_epoch_ms: WALL0 + 105,
  });
  assert.equal(f.m.ack(WALL0 + 106), null, "acknowledging again changes nothing");
  assert.equal(f.m.sinceEpochMs, WALL0 + 105);
  assert.equal(f.value(70), "clear");
  assert.equal(f.m.state, "normal");
});

Deno.test("AlarmMonitor shelve: bounded to 1 ms .. 8 h, refused for an alarm with an action", () => {
  const f = new Feed(alarm());
  for (const bad of [0, -1, 1.5, MAX_SHELVE_MS + 1, NaN]) {
    const e = refusal(() => f.m.shelve(bad, 0, WALL0));
    assert.equal(e.code, "INVALID_ARGUMENT", String(bad));
    assert.match(e.message, /^duration_ms: must be an integer from 1 to 28800000 \(8 h\)/);
  }
  assert.equal(f.m.state, "normal");
  assert.equal(f.m.shelve(MAX_SHELVE_MS, 0, WALL0).state, "shelved");
  assert.equal(f.m.shelvedUntilEpochMs, WALL0 + MAX_SHELVE_MS);
  assert.equal(f.m.shelve(1, 0, WALL0).state, "shelved", "shelving again sets a new expiry");
  assert.equal(f.m.shelvedUntilEpochMs, WALL0 + 1);

  for (const action of ["fault", "estop"] as const) {
    const stopping = new AlarmMonitor(alarm({ action }));
    const e = refusal(() => stopping.shelve(1000, 0, WALL0));
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(
      e.message,
      `Alarm t1 has action ${action}: an alarm that ${
        action === "estop" ? "stops" : "faults"
      } the machine cannot be shelved`,
    );
    assert.equal(stopping.state, "normal");
  }
});

Deno.test("AlarmMonitor while shelved tracks the condition silently; unshelving shows it as it is", () => {
  const f = new Feed(alarm({ limits: { hi: 80 } }));
  f.value(81);
  f.m.ack(WALL0);
  f.m.shelve(10_000, f.mono, WALL0 + f.mono);
  assert.equal(f.m.state, "shelved");
  assert.equal(f.value(70), null, "a clear while shelved is not published");
  assert.equal(f.m.raised, false);
  assert.equal(f.value(90), null, "nor a raise");
  assert.equal(f.m.raised, true);
  assert.equal(f.m.level, "MINOR");
  assert.equal(f.m.expireShelve(f.mono, WALL0 + f.mono), null, "not run out yet");
  const expiry = f.m.shelvedUntilMono!;
  const t = f.m.expireShelve(expiry, WALL0 + expiry);
  assert.equal(t?.transition, "unshelve");
  assert.equal(t?.state, "active", "raised underneath: active, not acknowledged");

  const g = new Feed(alarm());
  g.m.shelve(10_000, 0, WALL0);
  assert.equal(g.m.unshelve(WALL0 + 1).state, "normal");
  const e = refusal(() => g.m.unshelve(WALL0 + 2));
  assert.equal(e.code, "FAILED_PRECONDITION");
  assert.equal(e.message, "Alarm t1 is not shelved");
  assert.equal(
    refusal(() => {
      g.m.shelve(10_000, 0, WALL0);
      g.m.ack(WALL0);
    }).message,
    "Alarm t1 is shelved: only an active alarm is acknowledged",
  );
});

Deno.test("AlarmMonitor keeps the last MAX_ALARM_TRANSITIONS transitions, oldest first", () => {
  const f = new Feed(alarm());
  for (let i = 0; i < MAX_ALARM_TRANSITIONS; i++) f.value(i % 2 === 0 ? 81 : 70);
  assert.equal(f.m.transitions().length, MAX_ALARM_TRANSITIONS);
  assert.equal(f.m.transitions()[0]!.transition, "raise");
  f.value(81); // one more: the first raise is dropped
  const ts = f.m.transitions();
  assert.equal(ts.length, MAX_ALARM_TRANSITIONS);
  assert.equal(ts[0]!.transition, "clear");
  assert.equal(ts.at(-1)!.transition, "raise");
  assert.equal(ts.at(-1)!.at_epoch_ms, WALL0 + f.mono);
});

Deno.test("AlarmMonitor raises and clears on an int64 input like on a double one", () => {
  const i = (v: number): TypedValue => ({ type: "int64", int64: v });
  const f = new Feed(alarm({ limits: { hi: 80, lo: -5 } }));
  assert.equal(f.good(i(80)), null, "at the limit");
  assert.equal(f.good(i(81)), "raise");
  assert.equal(f.m.cause, "hi");
  assert.equal(f.good(i(79)), "clear");
  assert.equal(f.good(i(-6)), "raise");
  assert.equal(f.m.cause, "lo");
});

Deno.test("AlarmMonitor with only hihi, or only lolo, raises strictly past it and clears only past it and the hysteresis", () => {
  const hihi = new Feed(alarm({ limits: { hihi: 100 }, hysteresis: 5 }));
  assert.equal(hihi.value(100), null, "at the limit: not past it");
  assert.equal(hihi.value(100.5), "raise");
  assert.deepEqual([hihi.m.level, hihi.m.cause, hihi.m.limit], ["MAJOR", "hihi", 100]);
  assert.equal(hihi.value(97), null, "inside the hysteresis band: still active");
  assert.equal(hihi.value(95), null, "exactly hihi - hysteresis: still active");
  assert.equal(hihi.value(94.9), "clear");

  const lolo = new Feed(alarm({ limits: { lolo: 0 }, hysteresis: 5 }));
  assert.equal(lolo.value(0), null, "at the limit: not past it");
  assert.equal(lolo.value(-0.5), "raise");
  assert.deepEqual([lolo.m.level, lolo.m.cause, lolo.m.limit], ["MAJOR", "lolo", 0]);
  assert.equal(lolo.value(3), null, "inside the hysteresis band: still active");
  assert.equal(lolo.value(5), null, "exactly lolo + hysteresis: still active");
  assert.equal(lolo.value(5.1), "clear");
});

Deno.test("AlarmMonitor counts the delay of a bad input from when it became bad, also when it escalates a MINOR alarm", () => {
  const f = new Feed(alarm({ limits: { hi: 80 }, delayMs: 100 }));
  f.mono = 1000;
  assert.equal(f.value(85, 0), null, "past hi: pending");
  f.mono = 1100;
  assert.equal(f.value(85, 0), "raise");
  assert.equal(f.m.level, "MINOR");
  // Bad since 1150, first evaluated at 1220: due at 1250, not 100 ms after the evaluation.
  const bad = (at: number) =>
    f.m.evaluate(d(85), "FAULT", false, at, WALL0 + at, 1150)?.transition ?? null;
  assert.equal(bad(1220), null);
  assert.equal(bad(1249), null);
  assert.equal(bad(1250), "raise");
  assert.deepEqual([f.m.level, f.m.cause], ["MAJOR", "bad_quality"]);
});

Deno.test("AlarmMonitor raises on readings it cannot judge after the delay, counted from the first of them", () => {
  // A bad reading whose start the engine does not know (a value of a type the alarm cannot
  // judge: badSinceMono null) starts the delay at the first such reading; later ones keep it.
  const m = new AlarmMonitor(alarm({ limits: { hi: 80 }, delayMs: 100 }));
  const wrong = { type: "string", string: "81" } as const;
  const at = (t: number) => m.evaluate(wrong, "OK", false, t, WALL0 + t, null)?.transition ?? null;
  assert.equal(at(1000), null);
  assert.equal(at(1050), null);
  assert.equal(at(1100), "raise");
  assert.deepEqual([m.level, m.cause], ["MAJOR", "bad_quality"]);
});

Deno.test("alarmAccepts: an alarm_when of a bool judges only bools, of a string only strings", () => {
  const onBool = alarm({ limits: {}, alarmWhen: true });
  assert.equal(alarmAccepts(onBool, { type: "bool", bool: false }), true);
  assert.equal(alarmAccepts(onBool, { type: "string", string: "true" }), false);
  assert.equal(alarmAccepts(onBool, d(1)), false);
  const onString = alarm({ limits: {}, alarmWhen: "true" });
  assert.equal(alarmAccepts(onString, { type: "bool", bool: true }), false);
  assert.equal(alarmAccepts(onString, d(1)), false);
});

Deno.test("AlarmMonitor: a pending raise whose input then goes bad keeps the earlier start of its delay", () => {
  const m = new AlarmMonitor(alarm({ limits: { hi: 80 }, delayMs: 1000 }));
  const at = (t: number, usable: boolean, badSince: number | null = null) =>
    m.evaluate(d(85), usable ? "OK" : "FAULT", usable, t, WALL0 + t, badSince)?.transition ?? null;
  assert.equal(at(100, true), null, "past hi: the delay runs from 100");
  assert.equal(at(600, false, 500), null, "bad since 500: wanting a raise still, since 100");
  assert.equal(at(1099, false, 500), null);
  assert.equal(at(1100, false, 500), "raise");
  assert.deepEqual([m.level, m.cause], ["MAJOR", "bad_quality"]);
});
