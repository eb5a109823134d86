/**
 * The ring's storage rules (src/history/ring.ts), on the rings themselves: a sample equal to the
 * previous one adds no entry yet every poll's sample comes back exactly; polls older than the
 * horizon go, and with them the changes no kept poll needs; the byte budget is never exceeded.
 */
import assert from "node:assert/strict";
import type { Quality, TypedValue } from "../../src/common/mod.ts";
import { exactDouble } from "../../src/history/mod.ts";
import { DeviceRing, RingBudget, type RingSample, SignalRing } from "../../src/history/ring.ts";

function feed(
  dev: DeviceRing,
  sig: SignalRing,
  t: number,
  v: TypedValue | null,
  q: Quality,
  horizon = -Infinity,
) {
  const seq = dev.addPoll(t, horizon);
  sig.record(seq, v, v === null ? null : exactDouble(v), q, dev.firstSeq);
}

function all(dev: DeviceRing, sig: SignalRing, since = -Infinity, until = Infinity) {
  const out: [number, unknown, number][] = [];
  dev.samples(sig, dev.seqAtOrAfter(since), until, (s: RingSample) => {
    out.push([s.timeMs, !s.hasValue ? null : s.ref ?? s.num, s.quality]);
    return true;
  });
  return out;
}

Deno.test("A steady signal costs one entry, and every poll's sample still comes back exactly", () => {
  const budget = new RingBudget(1 << 20);
  const dev = new DeviceRing("p", "d", budget);
  const sig = new SignalRing("s", budget);
  dev.signals.set("s", sig);
  const dbl = (x: number): TypedValue => ({ type: "double", double: x });
  for (let t = 0; t < 100; t++) feed(dev, sig, t * 10, dbl(5), "OK");
  assert.equal(sig.length, 1);
  feed(dev, sig, 1000, dbl(6), "OK");
  feed(dev, sig, 1010, dbl(6), "STALE");
  feed(dev, sig, 1020, null, "UNAVAILABLE");
  const big: TypedValue = { type: "int64", int64: 9007199254740993n };
  feed(dev, sig, 1030, big, "OK");
  assert.equal(sig.length, 5);
  const got = all(dev, sig, 970, 1030);
  assert.deepEqual(got, [
    [970, 5, 0],
    [980, 5, 0],
    [990, 5, 0],
    [1000, 6, 0],
    [1010, 6, 1],
    [1020, null, 3],
    [1030, big, 0],
  ]);
  assert.equal(all(dev, sig).length, 104);
});

Deno.test("Polls older than the horizon go, and with them the changes no kept poll needs", () => {
  const budget = new RingBudget(1 << 20);
  const dev = new DeviceRing("p", "d", budget);
  const sig = new SignalRing("s", budget);
  for (let t = 0; t < 1000; t++) {
    feed(dev, sig, t * 100, { type: "double", double: t % 3 }, "OK", t * 100 - 10_000);
  }
  assert.equal(dev.polls, 101, "10 s at 10 Hz, both ends kept");
  assert.equal(dev.oldestMs(), 89_900);
  assert.ok(sig.length <= 102, `${sig.length} changes kept`);
  const got = all(dev, sig);
  assert.equal(got.length, 101);
  assert.deepEqual(got[0], [89_900, 899 % 3, 0]);
  assert.deepEqual(got.at(-1), [99_900, 999 % 3, 0]);
});

Deno.test("The rings never hold more than the byte budget: the oldest entries go first", () => {
  const budget = new RingBudget(4096);
  const dev = new DeviceRing("p", "d", budget);
  const sig = new SignalRing("s", budget);
  for (let t = 0; t < 2000; t++) feed(dev, sig, t, { type: "double", double: t }, "OK");
  assert.ok(budget.bytes <= 4096, `${budget.bytes} bytes`);
  assert.equal(budget.bytes, dev.bytes + sig.bytes);
  const got = all(dev, sig);
  assert.ok(got.length > 50 && got.length < 2000, `${got.length} kept`);
  for (const [t, v] of got) assert.equal(v, t, "every kept sample exact");
  assert.equal(got.at(-1)![0], 1999);
  dev.release();
  sig.release();
  assert.equal(budget.bytes, 0);
});

Deno.test("A wall clock stepped back: time searches begin at the step; the polls before it stay in order until the step is past the horizon", () => {
  const budget = new RingBudget(1 << 20);
  const dev = new DeviceRing("p", "d", budget);
  const sig = new SignalRing("s", budget);
  dev.signals.set("s", sig);
  const dbl = (x: number): TypedValue => ({ type: "double", double: x });
  const MEMORY = 100;
  for (let t = 0; t < 50; t++) feed(dev, sig, 1000 + t * 10, dbl(t), "OK", 1000 + t * 10 - MEMORY);
  // Stepped back 300 ms: polls at 1190.. again.
  for (let k = 0; k < 5; k++) {
    feed(dev, sig, 1190 + k * 10, dbl(100 + k), "OK", 1190 + k * 10 - MEMORY);
  }
  assert.equal(dev.oldestMs(), 1190, "the time searches look from the step on");
  assert.deepEqual(
    all(dev, sig, 1200, 1210).map((s) => s[1]),
    [101, 102],
    "since the step only",
  );
  const kept = dev.nextSeq - dev.firstSeq;
  assert.ok(kept > 5, `the polls before the step are kept for walks by sequence (${kept})`);
  assert.equal(dev.timeOf(dev.firstSeq) > 1230, true, "in their order, ahead of the clock");
  // Once the first poll after the step is past the horizon, the polls before it go too.
  feed(dev, sig, 1300, dbl(200), "OK", 1300 - MEMORY);
  assert.equal(dev.firstSeq, dev.timeFirstSeq);
  assert.deepEqual(all(dev, sig).map((s) => s[0]), [1200, 1210, 1220, 1230, 1300]);
});
