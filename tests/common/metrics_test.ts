/**
 * The exposition writer and Histogram against the text format, read back by the strict parser
 * of tests/helpers/prometheus_text.ts: escaping, bucket placement at the exact bound, cumulative
 * buckets, and the programmer errors (bad names, undeclared families, non-_total counters).
 */
import assert from "node:assert/strict";
import {
  ExpositionWriter,
  formatMetricValue,
  Histogram,
  LATENCY_BUCKETS_SECONDS,
} from "../../src/common/mod.ts";
import { checkHistogram, parsePrometheusText, sampleValue } from "../helpers/prometheus_text.ts";

Deno.test("ExpositionWriter escapes label values and HELP text so a strict parser reads them back", () => {
  const nasty = 'a\\b"c\nd}e,f=g';
  const help = 'line one\nback\\slash "quoted"';
  const text = new ExpositionWriter()
    .family("x_total", "counter", help)
    .sample("x_total", 3, { provider: nasty, code: "OK" })
    .sample("x_total", 4, { provider: "plain", code: "OK" })
    .text();
  assert.ok(text.includes('provider="a\\\\b\\"c\\nd}e,f=g"'), text);
  const families = parsePrometheusText(text);
  const f = families.get("x_total")!;
  assert.equal(f.type, "counter");
  assert.equal(f.help, help);
  assert.equal(sampleValue(families, "x_total", { provider: nasty }), 3);
  assert.equal(sampleValue(families, "x_total", { provider: "plain" }), 4);
});

Deno.test("Histogram puts a value equal to a bound in that bound's bucket and exposes cumulative buckets", () => {
  const h = new Histogram([0.1, 1]);
  for (const v of [0.1, 0.1000001, 1, 5, 0]) h.observe(v);
  assert.deepEqual([h.bucket(0), h.bucket(1), h.bucket(2)], [2, 2, 1]);
  assert.equal(h.count, 5);
  assert.ok(Math.abs(h.sum - 6.2000001) < 1e-9);
  const text = new ExpositionWriter().family("d_seconds", "histogram", "d")
    .histogram("d_seconds", h, { provider: "p" }).text();
  const families = parsePrometheusText(text);
  assert.equal(sampleValue(families, "d_seconds_bucket", { le: "0.1" }), 2);
  assert.equal(sampleValue(families, "d_seconds_bucket", { le: "1" }), 4);
  assert.equal(sampleValue(families, "d_seconds_bucket", { le: "+Inf" }), 5);
  assert.equal(sampleValue(families, "d_seconds_count"), 5);
  assert.deepEqual([...checkHistogram(families.get("d_seconds")!).values()].map((s) => s.count), [
    5,
  ]);
  assert.equal(
    text.split("\n").filter((l) => l.startsWith("d_seconds_bucket")).length,
    3,
    "two bounds + Inf",
  );
});

Deno.test("Histogram refuses bounds that are not ascending; the default bounds are ascending", () => {
  assert.throws(() => new Histogram([1, 1]), RangeError);
  assert.throws(() => new Histogram([2, 1]), RangeError);
  new Histogram(LATENCY_BUCKETS_SECONDS);
});

Deno.test("ExpositionWriter refuses invalid names, undeclared families and counters without _total", () => {
  const w = new ExpositionWriter();
  assert.throws(() => w.family("9bad", "gauge", "h"), /invalid metric name/);
  assert.throws(() => w.family("runtime_x", "counter", "h"), /_total/);
  assert.throws(() => w.sample("runtime_y", 1), /undeclared/);
  w.family("runtime_g", "gauge", "h");
  assert.throws(() => w.family("runtime_g", "gauge", "h"), /twice/);
  assert.throws(() => w.sample("runtime_g", 1, { "bad-name": "v" }), /invalid label name/);
  assert.throws(() => w.sample("runtime_g", 1, { le: "1" }), /invalid label name/);
  assert.throws(() => w.histogram("runtime_g", new Histogram()), /histogram/);
});

Deno.test("formatMetricValue writes the format's special values", () => {
  assert.equal(formatMetricValue(Infinity), "+Inf");
  assert.equal(formatMetricValue(-Infinity), "-Inf");
  assert.equal(formatMetricValue(NaN), "NaN");
  assert.equal(formatMetricValue(0.25), "0.25");
  assert.equal(formatMetricValue(1e-7), "1e-7");
});

Deno.test("Histogram.observe allocates nothing (it sits on the poll path)", () => {
  const h = new Histogram();
  const values = new Float64Array(1000).map((_, i) => i * 0.0137);
  const rounds = 20; // 20 000 observations: little enough that no scavenge hides garbage
  const run = () => {
    for (let r = 0; r < rounds; r++) {
      for (let i = 0; i < values.length; i++) h.observe(values[i]!);
    }
  };
  for (let i = 0; i < 20; i++) run(); // optimised before measuring
  // The median change of three passes (one can see a scavenge or code installed by V8); a
  // change either way counts: garbage shows as growth, or as a drop when it set off a scavenge.
  const growths: number[] = [];
  for (let pass = 0; pass < 3; pass++) {
    const before = Deno.memoryUsage().heapUsed;
    run();
    growths.push(Deno.memoryUsage().heapUsed - before);
  }
  const grown = growths.map(Math.abs).sort((a, b) => a - b)[1];
  // One 16-byte object per observation would be 320 KB per pass.
  assert.ok(grown! < 100_000, `heap grew by ${growths.join(", ")} bytes over 20000 observations`);
  assert.equal(h.count, 23 * rounds * values.length);
});
