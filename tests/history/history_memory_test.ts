/**
 * GET /v0/history from the full-rate ring, against the real runtime and the programmable provider
 * (exact values): every polled sample with its quality and the runtime's time, buckets of a
 * step, CSV, the named points limit (400), the signal_id filter, and the ring's bound in time.
 */
import assert from "node:assert/strict";
import { MAX_HISTORY_POINTS } from "../../src/history/mod.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";
import { T } from "../helpers/programmable_provider.ts";

Deno.test("GET /v0/history answers every polled sample from the memory ring, in buckets and as CSV", async () => {
  const rig = await startRig({ history: { diskMaxBytes: 0, memorySeconds: 30 } });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    await rig.poll(T0 + 1500, probeValues(20.5, 1)); // unchanged: still a sample
    await rig.poll(T0 + 2100, probeValues(21.25, 2, "hot"));
    await rig.poll(T0 + 3900, [
      { id: "temp", type: T.DOUBLE, double: 19, quality: 3 }, // FAULT from the provider
      { id: "count", type: T.INT64, int64: "9007199254740993", quality: 1 }, // beyond 2^53
      { id: "label", type: T.STRING, string: 'a,"b"', quality: 1 },
    ]);
    rig.clock.wallMs = T0 + 5000;

    const full = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&signal_id=count&since_ms=${T0 + 500}`,
    );
    assert.equal(full.status.code, "OK");
    assert.equal(full.source, "memory");
    assert.equal(full.memory_from_ms, T0, "the priming poll at T0 is the ring's first");
    assert.equal(full.disk_step_ms, null);
    assert.equal(full.until_ms, T0 + 5000);
    assert.deepEqual(full.signals.map((s: { signal_id: string }) => s.signal_id), [
      "temp",
      "count",
    ]);
    const temp = full.signals[0];
    assert.equal(temp.value_type, "double");
    assert.deepEqual(temp.points, [
      { t_ms: T0 + 1000, min: 20.5, max: 20.5, last: 20.5, count: 1, quality: "OK" },
      { t_ms: T0 + 1500, min: 20.5, max: 20.5, last: 20.5, count: 1, quality: "OK" },
      { t_ms: T0 + 2100, min: 21.25, max: 21.25, last: 21.25, count: 1, quality: "OK" },
      { t_ms: T0 + 3900, min: 19, max: 19, last: 19, count: 1, quality: "FAULT" },
    ]);
    // The raw text keeps a 64-bit integer exact.
    const text = await (await rig.get(
      `/v0/history/p0/probe?signal_id=count&since_ms=${T0 + 3000}`,
    )).text();
    assert.match(text, /"last":9007199254740993/);

    const buckets = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&signal_id=label&since_ms=${T0}&until_ms=${
        T0 + 4999
      }&step_ms=2000`,
    );
    assert.deepEqual(buckets.signals[0].points, [
      { t_ms: T0, min: 20.5, max: 20.5, last: 20.5, count: 2, quality: "OK" },
      { t_ms: T0 + 2000, min: 19, max: 21.25, last: 19, count: 2, quality: "FAULT" },
    ]);
    assert.equal(buckets.signals[1].value_type, "string");
    assert.deepEqual(buckets.signals[1].points, [
      { t_ms: T0, min: null, max: null, last: "run", count: 2, quality: "OK" },
      { t_ms: T0 + 2000, min: null, max: null, last: 'a,"b"', count: 2, quality: "OK" },
    ]);

    const csv = await rig.get(
      `/v0/history/p0/probe?signal_id=temp&signal_id=label&since_ms=${T0}&step_ms=2000`,
      { accept: "text/csv" },
    );
    assert.equal(csv.headers.get("content-type"), "text/csv; charset=utf-8");
    assert.equal(
      await csv.text(),
      "signal_id,t_ms,min,max,last,count,quality,unit\r\n" +
        `temp,${T0},20.5,20.5,20.5,2,OK,\r\n` +
        `temp,${T0 + 2000},19,21.25,19,2,FAULT,\r\n` +
        `label,${T0},,,run,2,OK,\r\n` +
        `label,${T0 + 2000},,,"a,""b""",2,OK,\r\n`,
    );
    const csv2 = await rig.get(`/v0/history/p0/probe?signal_id=temp&format=csv&since_ms=${T0}`);
    assert.equal((await csv2.text()).split("\r\n").length, 4 + 2);

    // Bounded: a range in 1 ms steps is refused before any work, naming the limit.
    const tooMany = await rig.get(
      `/v0/history/p0/probe?since_ms=${T0}&until_ms=${T0 + 86_400_000}&step_ms=1`,
    );
    assert.equal(tooMany.status, 400);
    assert.match(
      (await tooMany.json()).status.message,
      new RegExp(`more than ${MAX_HISTORY_POINTS} points \\(MAX_HISTORY_POINTS\\)`),
    );
    for (
      const [query, message] of [
        ["since_ms=x", /since_ms: must be epoch milliseconds/],
        [`since_ms=${T0 + 10}&until_ms=${T0}`, /until_ms: .* is before since_ms/],
        // Without until_ms (now), a since_ms in the future names since_ms, not a key not sent.
        [`since_ms=${T0 + 86_400_000}`, /^since_ms: \d+ is after now \(\d+\)/],
        ["step_ms=-1", /step_ms: must be a non-negative integer/],
        ["format=xml", /format: must be one of json, csv/],
      ] as const
    ) {
      const r = await rig.get(`/v0/history/p0/probe?${query}`);
      assert.equal(r.status, 400, query);
      assert.match((await r.json()).status.message, message);
    }
    assert.equal((await rig.get("/v0/history/p0/nope")).status, 404);

    // The ring keeps memory_seconds: a poll 40 s later drops every sample older than 30 s. (40 s
    // pass on the monotonic clock too: a wall clock stepped 40 s ahead drops nothing.)
    rig.clock.mono = performance.now() + 40_000;
    await rig.poll(T0 + 40_000, probeValues(22, 3));
    const later = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0}`);
    assert.equal(later.memory_from_ms, T0 + 40_000);
    assert.deepEqual(later.signals[0].points.map((p: { t_ms: number }) => p.t_ms), [
      T0 + 40_000,
    ]);
    const metrics = await (await rig.get("/metrics")).text();
    const bytes = Number(/^runtime_history_memory_bytes (\d+)$/m.exec(metrics)![1]);
    assert.ok(bytes > 0 && bytes <= 2 * 1024 * 1024, `runtime_history_memory_bytes ${bytes}`);
    assert.match(metrics, /^runtime_history_memory_max_bytes 2097152$/m);
    assert.match(metrics, /^runtime_history_disk_up 0$/m, "no disk tier: disk_max_bytes 0");
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("The memory ring never holds more than history.memory_max_bytes: the oldest samples go first", async () => {
  const rig = await startRig({
    history: { diskMaxBytes: 0, memorySeconds: 3600, memoryMaxBytes: 65536 },
  });
  try {
    // Every poll changes every value: 13 bytes per signal per poll, 8 per poll time.
    for (let i = 1; i <= 1600; i++) await rig.poll(T0 + i * 100, probeValues(i, i, `s${i}`));
    const status = rig.rt.history!.status();
    assert.ok(status.memoryBytes <= 65536, `${status.memoryBytes} bytes`);
    const answer = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0}`);
    const points = answer.signals[0].points;
    assert.ok(points.length > 100 && points.length < 1600, `${points.length} samples kept`);
    assert.equal(points.at(-1).last, 1600, "the newest is kept");
    // Every kept sample is exact: temp i at T0 + i * 100.
    for (const p of points) assert.equal(p.t_ms, T0 + p.last * 100);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("The memory ring's bound counts the strings it keeps: long strings that change at every poll shorten its reach, not grow its memory", async () => {
  // A string (or bytes) value is kept by reference; before, only the ring's typed arrays were
  // counted, so a 4 KB string changing at every poll kept every value of memory_seconds alive.
  const rig = await startRig({
    history: { diskMaxBytes: 0, memorySeconds: 3600, memoryMaxBytes: 65536 },
  });
  try {
    const long = (i: number) => `${i}:`.padEnd(4096, "x");
    for (let i = 1; i <= 200; i++) await rig.poll(T0 + i * 100, probeValues(i, i, long(i)));
    const answer = await rig.json(`/v0/history/p0/probe?signal_id=label&since_ms=${T0}`);
    const points = answer.signals[0].points;
    const kept = points.reduce((n: number, p: { last: string }) => n + p.last.length, 0);
    assert.ok(
      kept <= 65536,
      `the ring keeps ${points.length} strings of 4096 characters (${kept} in all) under ` +
        "memory_max_bytes 65536",
    );
    assert.equal(points.at(-1).last, long(200), "the newest is kept");
    const status = rig.rt.history!.status();
    assert.ok(status.memoryBytes <= 65536, `${status.memoryBytes} bytes`);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("history.enabled false: no ring, and the history and incident routes answer 503", async () => {
  const rig = await startRig({ history: { enabled: false } });
  try {
    assert.equal(rig.rt.history, undefined);
    await rig.poll(T0 + 1000, probeValues(1, 1));
    for (const path of ["/v0/history/p0/probe", "/v0/incidents", "/v0/incidents/inc-1-1"]) {
      const r = await rig.get(path);
      assert.equal(r.status, 503, path);
      assert.match(
        (await r.json()).status.message,
        /history is disabled \(history.enabled: false\)/,
      );
    }
    assert.doesNotMatch(await (await rig.get("/metrics")).text(), /runtime_history_/);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("A wall clock stepped ahead by more than memory_seconds drops nothing from the ring: a poll goes once memory_seconds have really passed", async () => {
  const rig = await startRig({ history: { diskMaxBytes: 0, memorySeconds: 30 } });
  const mono0 = performance.now();
  const at = (monoS: number, wallMs: number, temp: number) => {
    rig.clock.mono = mono0 + monoS * 1000;
    return rig.poll(wallMs, probeValues(temp, temp));
  };
  const times = async () =>
    (await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=0`)).signals[0].points
      .map((p: { t_ms: number }) => p.t_ms);
  try {
    await at(1, T0 + 1000, 1);
    await at(2, T0 + 2000, 2);
    // The first NTP synchronisation of a board without a real-time clock: a day ahead.
    const DAY = 86_400_000;
    await at(3, T0 + DAY + 3000, 3);
    // Before: [T0 + DAY + 3000] -- the two polls of a second ago were dropped as a day old.
    assert.deepEqual(await times(), [T0 + 1000, T0 + 2000, T0 + DAY + 3000]);
    // Once 30 s have passed since them on the monotonic clock, they go, as any poll does.
    await at(30.5, T0 + DAY + 30_500, 4);
    assert.deepEqual(await times(), [T0 + 1000, T0 + 2000, T0 + DAY + 3000, T0 + DAY + 30_500]);
    await at(31.5, T0 + DAY + 31_500, 5);
    assert.deepEqual(await times(), [
      T0 + 2000,
      T0 + DAY + 3000,
      T0 + DAY + 30_500,
      T0 + DAY + 31_500,
    ]);
    await at(33, T0 + DAY + 33_000, 6);
    assert.deepEqual(await times(), [
      T0 + DAY + 3000,
      T0 + DAY + 30_500,
      T0 + DAY + 31_500,
      T0 + DAY + 33_000,
    ]);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("GET /v0/history refuses a step whose buckets number MAX_HISTORY_POINTS + 1 and takes one of exactly MAX_HISTORY_POINTS, counting the buckets the answer has", async () => {
  // Buckets start at multiples of step_ms (epoch-aligned): [since, until] spans the buckets from
  // since's to until's, one more than (until - since) / step when since is not on a boundary.
  const rig = await startRig({ history: { diskMaxBytes: 0, memorySeconds: 30 } });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    const step = 1000;
    const since = T0 + 500; // within the bucket starting at T0
    const ask = (until: number) =>
      rig.get(
        `/v0/history/p0/probe?signal_id=temp&since_ms=${since}&until_ms=${until}&step_ms=${step}`,
      );
    // Buckets T0, T0 + 1000, ..., T0 + MAX_HISTORY_POINTS * 1000: MAX_HISTORY_POINTS + 1 of them.
    const over = await ask(T0 + MAX_HISTORY_POINTS * step);
    assert.equal(over.status, 400, "MAX_HISTORY_POINTS + 1 buckets must be refused");
    assert.match(
      (await over.json()).status.message,
      new RegExp(`more than ${MAX_HISTORY_POINTS} points \\(MAX_HISTORY_POINTS\\)`),
    );
    // One millisecond less: the last bucket is T0 + (MAX_HISTORY_POINTS - 1) * 1000.
    const at = await ask(T0 + MAX_HISTORY_POINTS * step - 1);
    assert.equal(at.status, 200, "exactly MAX_HISTORY_POINTS buckets are allowed");
    const body = await at.json();
    assert.deepEqual(body.signals[0].points.map((p: { t_ms: number }) => p.t_ms), [T0 + 1000]);
  } finally {
    await rig.rt.stop();
  }
});
