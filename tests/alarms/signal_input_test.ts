/**
 * SignalInput on its own, over a fake cache and fake device conditions: a device failing or down
 * makes its input unusable whatever its sample (fail safe), staleness at its exact bound, since
 * when an input has been unusable, and the texts an operator reads for each problem and value.
 */
import assert from "node:assert/strict";
import { InputProblem, SignalInput, valueText } from "../../src/alarms/mod.ts";
import type { Quality, TypedValue } from "../../src/common/mod.ts";
import type {
  DeviceCondition,
  DeviceConditionKind,
  SignalState,
  StateCache,
} from "../../src/state/mod.ts";

const STALE_AFTER_MS = 1000;

function context(o: {
  sample?: SignalState;
  device?: boolean;
  condition?: { kind: DeviceConditionKind; reason: string };
  /** When the device last answered (monotonic); 0 unless told. */
  lastPollMono?: number;
}) {
  const signals = new Map<string, SignalState>();
  if (o.sample) signals.set("temp", o.sample);
  const cache = {
    device: (p: string, d: string) =>
      o.device === false || p !== "p0" || d !== "probe"
        ? undefined
        : { signals, lastPollMono: o.lastPollMono ?? 0 },
    staleAfterMs: () => STALE_AFTER_MS,
    staleSinceMono: (_p: string, _d: string, _s: string, r: number) => r + STALE_AFTER_MS,
  } as unknown as StateCache;
  const outages = o.condition === undefined ? undefined : {
    condition: (): DeviceCondition => ({ ...o.condition!, sinceMono: null }),
  };
  return outages === undefined ? { cache } : { cache, outages };
}

const sample = (v: TypedValue | null, quality: Quality = "OK", receivedMono = 0) => ({
  value: v,
  quality,
  timestampMs: 0,
  receivedMono,
});
const dbl = (x: number): TypedValue => ({ type: "double", double: x });
const input = () => new SignalInput("p0/probe/temp", "p0", "probe", "temp");

Deno.test("SignalInput of a device failing or down is unusable with the device's reason, whatever its sample", () => {
  const i = input();
  for (const kind of ["failing", "down"] as const) {
    const ctx = context({ sample: sample(dbl(20)), condition: { kind, reason: "its reads fail" } });
    assert.equal(i.classify(ctx, 10), InputProblem.DEVICE_DOWN, kind);
    assert.equal(
      i.describe(InputProblem.DEVICE_DOWN, ctx, 10),
      `p0/probe/temp: device p0/probe is ${kind} (its reads fail)`,
    );
  }
  const up = context({ sample: sample(dbl(20)), condition: { kind: "up", reason: "" } });
  assert.equal(i.classify(up, 10), InputProblem.GOOD);
  assert.equal(i.describe(InputProblem.GOOD, up, 10), "p0/probe/temp = 20");
});

Deno.test("SignalInput with no sample of a device failing or down says the device's condition, not 'no sample in the cache'", () => {
  const i = input();
  for (const kind of ["failing", "down"] as const) {
    const ctx = context({ condition: { kind, reason: "its reads fail" } });
    assert.equal(i.classify(ctx, 10), InputProblem.NO_SAMPLE, kind);
    assert.equal(
      i.describe(InputProblem.NO_SAMPLE, ctx, 10),
      `p0/probe/temp: device p0/probe is ${kind} (its reads fail)`,
    );
  }
  const up = context({ condition: { kind: "up", reason: "" } });
  assert.equal(i.describe(InputProblem.NO_SAMPLE, up, 10), "p0/probe/temp: no sample in the cache");
  // What the inventory cannot serve is said first: it stays so once the device is back.
  i.binding = { declaredType: undefined, problem: "declared without a poll hint: never polled" };
  const failing = context({ condition: { kind: "failing", reason: "its reads fail" } });
  assert.equal(
    i.describe(InputProblem.NO_SAMPLE, failing, 10),
    "p0/probe/temp: declared without a poll hint: never polled",
  );
});

Deno.test("SignalInput names a sample stale by age of a device failing or down by the device's condition for an interlock, any other problem as classified", () => {
  const i = input();
  const past = STALE_AFTER_MS + 1;
  for (const kind of ["failing", "down"] as const) {
    const ctx = context({ sample: sample(dbl(20)), condition: { kind, reason: "unreachable" } });
    assert.equal(i.classify(ctx, 10), InputProblem.DEVICE_DOWN, `${kind}: fresh`);
    assert.equal(i.classify(ctx, past), InputProblem.AGE, `${kind}: the age is checked first`);
    assert.equal(i.problemOfDevice(InputProblem.AGE, ctx), InputProblem.DEVICE_DOWN, kind);
    for (const p of [InputProblem.QUALITY, InputProblem.NO_VALUE, InputProblem.NO_SAMPLE]) {
      assert.equal(i.problemOfDevice(p, ctx), p, `${kind}: problem ${p} stays`);
    }
  }
  const up = context({ sample: sample(dbl(20)), condition: { kind: "up", reason: "" } });
  assert.equal(i.problemOfDevice(InputProblem.AGE, up), InputProblem.AGE, "device up");
  const none = context({ sample: sample(dbl(20)) });
  assert.equal(i.problemOfDevice(InputProblem.AGE, none), InputProblem.AGE, "no conditions");
});

Deno.test("SignalInput names a kept sample the cache marked STALE of a device failing or down by the device's condition for an interlock, a STALE its provider reported as classified", () => {
  const i = input();
  for (const kind of ["failing", "down"] as const) {
    const condition = { kind, reason: "unreachable" };
    // Marked STALE by the cache for its age at an answer (at 1500) that left it out: one kind with
    // the age (reasonKind), which comes and goes with its fresh answers.
    const marked = context({ sample: sample(dbl(20), "STALE"), condition, lastPollMono: 1500 });
    assert.equal(i.classify(marked, 1500), InputProblem.QUALITY, `${kind}: marked`);
    assert.equal(i.problemOfDevice(InputProblem.QUALITY, marked), InputProblem.DEVICE_DOWN, kind);
    // Its provider's STALE, received at the last answer: that quality is what failed.
    const reported = context({
      sample: sample(dbl(20), "STALE", 1500),
      condition,
      lastPollMono: 1500,
    });
    assert.equal(i.problemOfDevice(InputProblem.QUALITY, reported), InputProblem.QUALITY, kind);
    const fault = context({ sample: sample(dbl(20), "FAULT"), condition, lastPollMono: 1500 });
    assert.equal(i.problemOfDevice(InputProblem.QUALITY, fault), InputProblem.QUALITY, "FAULT");
  }
  const up = context({
    sample: sample(dbl(20), "STALE"),
    condition: { kind: "up", reason: "" },
    lastPollMono: 1500,
  });
  assert.equal(i.problemOfDevice(InputProblem.QUALITY, up), InputProblem.QUALITY, "device up");
});

Deno.test("SignalInput is stale strictly past its bound, and says when a usable sample goes stale", () => {
  const i = input();
  const ctx = context({ sample: sample(dbl(20), "OK", 500) });
  assert.equal(i.classify(ctx, 500 + STALE_AFTER_MS), InputProblem.GOOD, "at the bound");
  assert.equal(i.staleAtMono, 500 + STALE_AFTER_MS + 1);
  assert.equal(i.classify(ctx, 500 + STALE_AFTER_MS + 1), InputProblem.AGE, "one past it");
  assert.equal(i.badSinceMono, 500 + STALE_AFTER_MS, "bad since it went stale, not since seen");
  assert.equal(
    i.describe(InputProblem.AGE, ctx, 500 + STALE_AFTER_MS + 1),
    `p0/probe/temp is stale: its sample is 1001 ms old (stale after ${STALE_AFTER_MS} ms)`,
  );
});

Deno.test("SignalInput keeps the first moment it was found unusable until it is usable again", () => {
  const i = input();
  const bad = context({ sample: sample(dbl(20), "FAULT") });
  i.classify(bad, 10);
  i.classify(bad, 20);
  assert.equal(i.badSinceMono, 10);
  i.classify(context({ sample: sample(dbl(20), "OK", 25) }), 30);
  assert.equal(i.badSinceMono, null);
  i.classify(bad, 40);
  assert.equal(i.badSinceMono, 40);
});

Deno.test("SignalInput.describe names each problem as an operator reads it", () => {
  const i = input();
  const none = context({ device: false });
  assert.equal(i.classify(none, 0), InputProblem.NO_DEVICE);
  assert.equal(
    i.describe(InputProblem.NO_DEVICE, none, 0),
    "p0/probe/temp: device p0/probe is not known",
  );
  const empty = context({});
  assert.equal(i.classify(empty, 0), InputProblem.NO_SAMPLE);
  assert.equal(
    i.describe(InputProblem.NO_SAMPLE, empty, 0),
    "p0/probe/temp: no sample in the cache",
  );
  const novalue = context({ sample: sample(null) });
  assert.equal(i.classify(novalue, 0), InputProblem.NO_VALUE);
  assert.equal(
    i.describe(InputProblem.NO_VALUE, novalue, 0),
    "p0/probe/temp: no value (quality OK)",
  );
  assert.equal(
    i.describe(InputProblem.NO_VALUE, empty, 0),
    "p0/probe/temp: no value (quality UNAVAILABLE)",
  );
  const stale = context({ sample: sample(dbl(1), "STALE") });
  assert.equal(i.classify(stale, 0), InputProblem.QUALITY);
  assert.equal(i.describe(InputProblem.QUALITY, stale, 0), "p0/probe/temp is STALE");
  assert.equal(i.describe(InputProblem.QUALITY, empty, 0), "p0/probe/temp is UNAVAILABLE");
  // The cache stores an OK sample past its bound as STALE: it reads as the age rule's text, so an
  // interlock's reason does not depend on whether the cache or the input saw the age first.
  const aged = context({ sample: sample(dbl(1), "STALE", 100) });
  assert.equal(i.classify(aged, 100 + STALE_AFTER_MS + 5), InputProblem.QUALITY);
  assert.equal(
    i.describe(InputProblem.QUALITY, aged, 100 + STALE_AFTER_MS + 5),
    `p0/probe/temp is stale: its sample is ${
      STALE_AFTER_MS + 5
    } ms old (stale after ${STALE_AFTER_MS} ms)`,
  );
  assert.equal(
    i.describe(InputProblem.AGE, empty, 5),
    `p0/probe/temp is stale: its sample is ? ms old (stale after ${STALE_AFTER_MS} ms)`,
  );
  assert.equal(
    i.describe(InputProblem.DEVICE_DOWN, empty, 0),
    "p0/probe/temp: device p0/probe is failing (unknown)",
  );
});

Deno.test("valueText writes each type as an operator reads it", () => {
  assert.equal(valueText(null), "no value");
  assert.equal(valueText({ type: "double", double: 82.5 }), "82.5");
  assert.equal(valueText({ type: "int64", int64: -7 }), "-7");
  assert.equal(valueText({ type: "uint64", uint64: 2n ** 60n }), "1152921504606846976");
  assert.equal(valueText({ type: "bool", bool: true }), "true");
  assert.equal(valueText({ type: "string", string: "open" }), '"open"');
  assert.equal(valueText({ type: "bytes", base64: "AQI=" }), "bytes AQI=");
});

Deno.test("SignalInput applies the cache's stale bound from its first classification, and a changed bound once the cache says so", () => {
  const signals = new Map<string, SignalState>([["temp", sample(dbl(20), "OK", 0)]]);
  let bound = STALE_AFTER_MS;
  // A cache whose bounds version is 1 from the start (any number it may have).
  const cache = {
    device: () => ({ signals }),
    staleAfterMs: () => bound,
    staleSinceMono: (_p: string, _d: string, _s: string, r: number) => r + bound,
    boundsVersion: 1,
  };
  const ctx = { cache: cache as unknown as StateCache };
  const i = input();
  assert.equal(i.classify(ctx, STALE_AFTER_MS + 1), InputProblem.AGE, "the bound from the start");
  bound = 5 * STALE_AFTER_MS; // a reload of health.staleness
  cache.boundsVersion = 2;
  assert.equal(i.classify(ctx, STALE_AFTER_MS + 1), InputProblem.GOOD, "the new bound");
  assert.equal(i.classify(ctx, 5 * STALE_AFTER_MS + 1), InputProblem.AGE);
});

Deno.test("SignalInput dates a sample a tightened bound made stale from when the cache noted the bound tightened, and one stale under the bound before from when it went stale", () => {
  const signals = new Map<string, SignalState>([["temp", sample(dbl(20), "OK", 0)]]);
  const looser = 5 * STALE_AFTER_MS;
  let bound = looser;
  let tightenedAt = -Infinity;
  const cache = {
    device: () => ({ signals }),
    staleAfterMs: () => bound,
    // The cache's record of the tightening (state_cache.ts slotStaleSince).
    staleSinceMono: (_p: string, _d: string, _s: string, r: number) =>
      Math.max(r + bound, Math.min(tightenedAt, r + looser)),
    boundsVersion: 1,
  };
  const ctx = { cache: cache as unknown as StateCache };
  const i = input();
  assert.equal(i.classify(ctx, 3000), InputProblem.GOOD);
  bound = STALE_AFTER_MS; // a reload tightens health.staleness at 3500: the cache notes when
  tightenedAt = 3500;
  cache.boundsVersion = 2;
  assert.equal(i.classify(ctx, 3600), InputProblem.AGE);
  assert.equal(i.badSinceMono, 3500, "usable until the bound was tightened, not since 1000");
  // An input that first reads its bound after the reload (an alarm the reload adds): the same.
  const fresh = input();
  assert.equal(fresh.classify(ctx, 3600), InputProblem.AGE);
  assert.equal(fresh.badSinceMono, 3500);
  // A sample stale under the bound before the reload: since it went stale under that bound.
  signals.set("temp", sample(dbl(20), "OK", -4000));
  const older = input();
  assert.equal(older.classify(ctx, 3600), InputProblem.AGE);
  assert.equal(older.badSinceMono, -4000 + looser);
});
