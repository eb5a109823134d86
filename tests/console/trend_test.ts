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
  answeredBy,
  MAX_TREND_SIGNALS,
  parseHandle,
  seedLine,
  stepFor,
  TREND_GAP_INTERVALS,
  TREND_GAP_MIN_MS,
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

Deno.test("Series.holdTo: a live line's last value holds to now, steps at its change, survives the trim", () => {
  // The stream sends changes only: 20 at 1000 is still 20 at 9000 when nothing came since.
  const s = new Series({ key: "k", name: "k", unit: "" });
  assert.equal(s.holdTo(5000), false, "an empty line holds nothing");
  s.push(1000, 20, "OK");
  assert.equal(s.holdTo(5000), true);
  assert.equal(s.holdTo(9000), true, "one point at the end, moved");
  assert.deepEqual([s.ts, s.vs], [[1000, 9000], [20, 20]]);
  // Older than the range: the sample the value is held from stays, or the line would vanish.
  s.trim(6000, 100);
  assert.deepEqual(s.ts, [1000, 9000]);
  // A change at 9500: 20 up to it, then 21 -- a step, not a slope from 1000 to 9500.
  s.push(9500, 21, "OK");
  assert.deepEqual([s.ts, s.vs], [[1000, 9499, 9500], [20, 20, 21]]);
  assert.equal(s.held, false);
  // A gap is not held: its shading already spans to the end.
  s.push(9600, null, "UNAVAILABLE");
  assert.equal(s.holdTo(12_000), false);
  assert.deepEqual(s.ts, [1000, 9499, 9500, 9600]);
  // Not after the last sample (the page's clock behind the runtime's): nothing held.
  const t = new Series({ key: "k", name: "k", unit: "" });
  t.push(1000, 1, "OK");
  assert.equal(t.holdTo(900), false);
  assert.deepEqual(t.ts, [1000]);
});

Deno.test("Series.holdTo: a break keeps the value as held until then; a sample older than the hold drops it", () => {
  const s = new Series({ key: "k", name: "k", unit: "" });
  s.push(1000, 20, "OK");
  s.holdTo(4000);
  // The runtime restarted: known to be 20 up to 4000 (the stream was live), nothing after.
  assert.equal(s.breakLine(), true);
  assert.deepEqual([s.ts, s.vs, s.qs], [[1000, 4000, 4001], [20, 20, null], ["OK", "OK", NO_DATA]]);
  const u = new Series({ key: "k", name: "k", unit: "" });
  u.push(1000, 20, "OK");
  u.holdTo(4000);
  // A streamed sample a little older than the hold (the page's clock ahead): drawn, its step too.
  assert.equal(u.push(3000, 21, "OK"), true);
  assert.deepEqual([u.ts, u.vs], [[1000, 2999, 3000], [20, 20, 21]]);
});

/** History points (GET /v0/history) at these times, each OK with its index as value. */
function historyPoints(times: number[]) {
  return times.map((t, i) => ({ t_ms: t, last: i, min: i, max: i, quality: "OK", count: 1 }));
}

/** Times from `start`, `n` of them `every` ms apart. */
function spaced(start: number, n: number, every: number): number[] {
  return Array.from({ length: n }, (_, i) => start + i * every);
}

/** The seeded line's breaks: the time of the last point before each (a null it adds after it). */
function seededBreaks(
  times: number[],
  o: {
    step?: number;
    pollMs?: number;
    memoryFrom?: number | null;
    diskStep?: number | null;
    until?: number | null;
  },
): number[] {
  const s = new Series({ key: "p/d/s", name: "p/d/s", unit: "" });
  seedLine(s, historyPoints(times), {
    step: o.step ?? 200,
    pollMs: o.pollMs ?? 0,
    memoryFrom: o.memoryFrom === undefined ? times[0] ?? null : o.memoryFrom,
    diskStep: o.diskStep ?? null,
    until: o.until ?? null,
  });
  const out: number[] = [];
  for (let i = 1; i < s.ts.length; i++) if (s.vs[i] === null) out.push(s.ts[i - 1]!);
  return out;
}

Deno.test("seedLine joins a gap up to TREND_GAP_MIN_MS of a fast signal and breaks one past it", () => {
  // A 250 ms signal: 3 spacings are 750 ms, yet a runtime under load may poll it a second late.
  const t0 = 1_760_000_000_000;
  const withGap = (gap: number) => [...spaced(t0, 8, 250), ...spaced(t0 + 1750 + gap, 8, 250)];
  const o = { pollMs: 250 };
  assert.deepEqual(seededBreaks(withGap(1500), o), [], "1.5 s: joined");
  assert.deepEqual(seededBreaks(withGap(TREND_GAP_MIN_MS), o), [], "exactly the floor: joined");
  assert.deepEqual(seededBreaks(withGap(TREND_GAP_MIN_MS + 1), o), [t0 + 1750], "1 ms past it");
  assert.deepEqual(seededBreaks(withGap(2500), o), [t0 + 1750], "2.5 s: broken");
  // Points 1 s apart: 3 spacings (3 s) are above the floor, and they are the bound.
  assert.equal(TREND_GAP_INTERVALS, 3);
  const slow = (gap: number) => [...spaced(t0, 8, 1000), ...spaced(t0 + 7000 + gap, 8, 1000)];
  assert.deepEqual(seededBreaks(slow(2500), { pollMs: 1000 }), [], "2.5 s of a 1 s signal");
  assert.deepEqual(seededBreaks(slow(3001), { pollMs: 1000 }), [t0 + 7000]);
});

Deno.test("seedLine tells a gap by the points' own spacing, not by today's poll interval", () => {
  const t0 = 1_760_000_000_000;
  // Polled every 250 ms until a reload made it 10 s: a 20 s outage among the 250 ms rows is no
  // data (today's 10 s polls put the bound at 30 s and joined it).
  const fastThenSlow = [
    ...spaced(t0, 20, 250),
    ...spaced(t0 + 4750 + 20_000, 20, 250),
    ...spaced(t0 + 29_750 + 10_000, 10, 10_000),
  ];
  assert.deepEqual(seededBreaks(fastThenSlow, { pollMs: 10_000 }), [t0 + 4750]);
  // Polled every 5 s until a reload made it 250 ms: the 5 s rows are continuous (today's 250 ms
  // polls put the bound at 2 s and broke the line at every one of them).
  const slowThenFast = [...spaced(t0, 20, 5000), ...spaced(t0 + 100_000, 40, 250)];
  assert.deepEqual(seededBreaks(slowThenFast, { pollMs: 250 }), []);
  // ... and an outage among them still breaks it: 3 of their spacings, 15 s, passed.
  const slowOutage = [
    ...spaced(t0, 10, 5000),
    ...spaced(t0 + 45_000 + 15_001, 10, 5000),
    ...spaced(t0 + 110_001, 40, 250),
  ];
  assert.deepEqual(seededBreaks(slowOutage, { pollMs: 250 }), [t0 + 45_000]);
});

Deno.test("seedLine: the disk tier's 10 s buckets and the ring's 100 ms polls each by their own spacing", () => {
  const t0 = 1_760_000_000_000;
  const ringFrom = t0 + 345_000;
  // Disk buckets of 10 s with a 25 s hole (joined: under 30 s) and a 40 s one (broken), then the
  // ring's polls from the next bucket on (joined to the disk's last bucket) with a 2.5 s hole
  // (broken: over the 2 s floor, though 3 disk buckets are 30 s).
  const times = [
    ...spaced(t0, 10, 10_000),
    ...spaced(t0 + 90_000 + 25_000, 10, 10_000),
    ...spaced(t0 + 205_000 + 40_000, 10, 10_000),
    ...spaced(ringFrom, 30, 100),
    ...spaced(ringFrom + 2900 + 2500, 30, 100),
  ];
  const o = { step: 0, pollMs: 100, memoryFrom: ringFrom, diskStep: 10_000 };
  assert.deepEqual(seededBreaks(times, o), [t0 + 205_000, ringFrom + 2900]);
  // A live range: after the last point by more than the bound of its spacing (2 s here).
  assert.deepEqual(seededBreaks(times, { ...o, until: ringFrom + 8300 + 2000 }), [
    t0 + 205_000,
    ringFrom + 2900,
  ]);
  assert.deepEqual(seededBreaks(times, { ...o, until: ringFrom + 8300 + 2001 }), [
    t0 + 205_000,
    ringFrom + 2900,
    ringFrom + 8300,
  ]);
});

Deno.test("seedLine: one point has no spacing of its own; today's poll interval bounds it, else nothing", () => {
  const t0 = 1_760_000_000_000;
  assert.deepEqual(seededBreaks([t0], { pollMs: 1000, until: t0 + 3001 }), [t0]);
  assert.deepEqual(seededBreaks([t0], { pollMs: 1000, until: t0 + 3000 }), []);
  assert.deepEqual(seededBreaks([t0], { pollMs: 0, until: t0 + 60_000 }), [], "not known");
  // From the disk tier: its step.
  assert.deepEqual(
    seededBreaks([t0], { pollMs: 250, memoryFrom: null, diskStep: 10_000, until: t0 + 30_001 }),
    [t0],
  );
});

Deno.test("answeredBy: a history answer without memory_from_ms, or with one not a finite number, names no start of the ring", () => {
  const memory = (extra: Record<string, unknown>) => ({
    provider_id: "sim0",
    device_id: "tempctl0",
    source: "memory",
    step_ms: 1000,
    disk_step_ms: null,
    ...extra,
  });
  for (const extra of [{}, { memory_from_ms: "soon" }, { memory_from_ms: Number.NaN }]) {
    assert.deepEqual(
      answeredBy([memory(extra)], 1000),
      { source: "memory", parts: ["memory ring (buckets of 1 s)"] },
      JSON.stringify(extra),
    );
  }
  // One answer without it beside one with it: the ring begins where the one says.
  const from = Date.UTC(2026, 0, 2, 3, 4, 5);
  const { parts } = answeredBy([memory({}), memory({ memory_from_ms: from })], 1000);
  assert.deepEqual(parts, [
    `memory ring (buckets of 1 s, from ${new Date(from).toLocaleString()})`,
  ]);
  // A disk answer without disk_step_ms: buckets of the step asked.
  assert.deepEqual(answeredBy([{ source: "disk", memory_from_ms: null }], 60_000), {
    source: "disk",
    parts: ["disk tier (buckets of 60 s)"],
  });
});
