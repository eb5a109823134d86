/**
 * The trend's pure parts (console/trend.js, console/chart.js) under Deno: the step a history
 * question asks for keeps every answer under the runtime's MAX_HISTORY_POINTS, handles and the
 * URL fragment round-trip, typed values become chart numbers, and a line's samples give its
 * quality gaps.
 */
import assert from "node:assert/strict";
import { MAX_HISTORY_POINTS } from "../../src/history/mod.ts";
import {
  chartNumber,
  isChartable,
  LINE_STEP_BACK_MS,
  NO_DATA,
  Series,
} from "../../console/chart.js";
import {
  MAX_TREND_SIGNALS,
  parseHandle,
  stepFor,
  TREND_RANGES,
  trendHash,
} from "../../console/trend.js";

Deno.test("every range's step keeps a question of MAX_TREND_SIGNALS under MAX_HISTORY_POINTS", () => {
  const ranges = [
    ...TREND_RANGES.map((r) => r.ms).filter((ms) => ms > 0),
    1,
    999,
    86_400_000 * 365,
  ];
  for (const ms of ranges) {
    const step = stepFor(ms);
    assert.ok(step >= 1 && Number.isInteger(step), `${ms}: ${step}`);
    // The runtime's own count (src/history/history.ts): ids × (floor(range / step) + 1).
    const points = MAX_TREND_SIGNALS * (Math.floor(ms / step) + 1);
    assert.ok(points <= MAX_HISTORY_POINTS, `${ms} ms in steps of ${step}: ${points} points`);
  }
  assert.equal(stepFor(5 * 60_000), 200);
  assert.equal(stepFor(3_600_000), 2400);
});

Deno.test("a handle's device may hold /; the fragment keeps the handles, range and times", () => {
  assert.deepEqual(parseHandle("s0/m/x/speed"), { p: "s0", d: "m/x", s: "speed" });
  assert.equal(parseHandle("s0/speed"), null);
  const hash = trendHash(["sim0/tempctl0/tc1_temp", "s0/m/x/speed"], "custom", 1000, 2000);
  assert.match(hash, /^#trend\?/);
  const q = new URLSearchParams(hash.slice("#trend?".length));
  assert.deepEqual(q.getAll("s"), ["sim0/tempctl0/tc1_temp", "s0/m/x/speed"]);
  assert.deepEqual([q.get("r"), q.get("from"), q.get("to")], ["custom", "1000", "2000"]);
  // The default range is left out.
  assert.equal(trendHash(["a/b/c"]), "#trend?s=a%2Fb%2Fc");
});

Deno.test("typed values as chart numbers: bools 0/1, 64-bit digits, non-finite a gap, strings none", () => {
  assert.equal(chartNumber({ type: "double", double: 2.5 }), 2.5);
  assert.equal(chartNumber({ type: "double", double: null, non_finite: "NaN" }), null);
  assert.equal(chartNumber({ type: "int64", int64: "-12" }), -12);
  assert.equal(chartNumber({ type: "uint64", uint64: "18446744073709551615" }), 2 ** 64);
  assert.equal(chartNumber({ type: "bool", bool: true }), 1);
  assert.equal(chartNumber({ type: "string", string: "x" }), undefined);
  assert.equal(chartNumber(undefined), undefined);
  assert.deepEqual(
    ["double", "int64", "uint64", "bool", "string", "bytes"].map(isChartable),
    [true, true, true, true, false, false],
  );
});

Deno.test("a line: a sample not OK is a gap (null) spanning to the next OK one; trim bounds it", () => {
  const s = new Series({ key: "p/d/s", name: "p/d/s", unit: "C" });
  s.push(1000, 1, "OK");
  s.push(2000, 2, "FAULT");
  s.push(3000, 3, "STALE");
  s.push(4000, 4, "OK");
  assert.equal(s.push(3500, 9, "OK"), false, "an older sample is dropped");
  s.push(4000, 5, "OK"); // the same time again: the later wins
  s.push(5000, 6, "UNAVAILABLE");
  assert.deepEqual(s.ts, [1000, 2000, 3000, 4000, 5000]);
  assert.deepEqual(s.vs, [1, null, null, 5, null]);
  assert.deepEqual(s.gaps(6000), [[2000, 4000, "FAULT"], [5000, 6000, "UNAVAILABLE"]]);
  assert.equal(s.hasBand(), false);
  s.trim(2500, 10);
  assert.deepEqual(s.ts, [3000, 4000, 5000]);
  s.trim(0, 2);
  assert.deepEqual(s.ts, [4000, 5000]);
});

Deno.test("a bucket's min and max are its band, unless they are equal or its quality is not OK", () => {
  const s = new Series({ key: "p/d/s", name: "p/d/s", unit: "" });
  s.push(0, 2, "OK", 1, 3);
  s.push(10, 2, "OK", 2, 2);
  s.push(20, 2, "STALE", 1, 3);
  assert.deepEqual([s.lo, s.hi], [[1, null, null], [3, null, null]]);
  assert.equal(s.hasBand(), true);
  s.trim(5, 10);
  assert.equal(s.hasBand(), false);
});

Deno.test("a line goes on from a sample an hour older than its last: the runtime's wall clock stepped back", () => {
  // The live trend pushes each streamed sample at the runtime's time of receipt. NTP steps the
  // runtime's clock back an hour: every later sample is older than the line's last. Dropped as
  // out of order, the live chart froze (and, once the window followed the runtime's clock, stayed
  // empty) for the whole hour.
  const s = new Series({ key: "p/d/s", name: "p/d/s", unit: "" });
  const t = 1_760_000_000_000;
  s.push(t, 1, "OK");
  s.push(t + 100, 2, "OK");
  s.push(t + 200, 3, "OK");
  const back = t + 300 - 3_600_000;
  assert.equal(s.push(back, 4, "OK"), true, "the sample after the step is drawn");
  assert.equal(s.push(back + 100, 5, "OK"), true);
  // The samples ahead of the clock now are dropped: the line's times ascend.
  assert.deepEqual(s.ts, [back, back + 100]);
  assert.deepEqual(s.vs, [4, 5]);
  // A sample a little out of order (a streamed one that a history answer already holds) is
  // still dropped, not a step.
  assert.equal(s.push(back + 50, 9, "OK"), false);
  assert.ok(LINE_STEP_BACK_MS > 50 && LINE_STEP_BACK_MS < 3_600_000);
});

Deno.test("Series.breakLine breaks a line after its last sample: a gap with no data until the next", () => {
  const s = new Series({ key: "k", name: "k", unit: "" });
  assert.equal(s.breakLine(), false, "an empty line has nothing to break");
  assert.deepEqual(s.ts, []);
  s.push(1000, 20, "OK");
  s.push(2000, 21, "OK");
  assert.equal(s.breakLine(), true);
  // Broken once: a second break (another resync before the next sample) adds nothing.
  assert.equal(s.breakLine(), false);
  s.push(9000, 22, "OK");
  assert.deepEqual(s.ts, [1000, 2000, 2001, 9000]);
  // The null is what uPlot draws as a gap: the line does not join 21 to 22.
  assert.deepEqual(s.vs, [20, 21, null, 22]);
  assert.deepEqual(s.gaps(10_000), [[2001, 9000, NO_DATA]]);
});
