import assert from "node:assert/strict";
import { fmt, markdownTable, Recorder, round } from "../../bench/lib/results.ts";

const KEY = { workload: 1, name: "calls", unit: "calls/s" };

Deno.test("Recorder summarizes each runtime and computes median(B)/median(A)", () => {
  const r = new Recorder();
  for (const v of [100, 300, 200]) r.add("A", KEY, v);
  for (const v of [50, 150]) r.add("B", KEY, v);
  r.add("A", KEY, NaN); // a window without samples is dropped, not averaged in
  const [rec] = r.records();
  assert.deepEqual(rec!.runtimes.A, {
    values: [100, 300, 200],
    min: 100,
    median: 200,
    max: 300,
    n: 3,
  });
  assert.equal(rec!.runtimes.B?.median, 100);
  assert.equal(rec!.ratioBA, 0.5);
});

Deno.test("Recorder orders rows by workload, keeping first-seen order within one", () => {
  const r = new Recorder();
  r.add("A", { workload: 3, name: "x", unit: "%" }, 1);
  r.add("A", { workload: 1, name: "b", unit: "ms" }, 1);
  r.add("A", { workload: 1, name: "a", unit: "ms" }, 1);
  assert.deepEqual(r.records().map((x) => `${x.workload}${x.name}`), ["1b", "1a", "3x"]);
});

Deno.test("markdownTable shows the ratio column only when comparing", () => {
  const r = new Recorder();
  r.add("A", KEY, 10);
  r.add("B", KEY, 20);
  const single = markdownTable(r.records(), false);
  assert.match(single, /\| 1 \| call round trip \| calls \| calls\/s \| 10\.0 \| 1 \|/);
  const both = markdownTable(r.records(), true);
  assert.match(both, /\| 10\.0 \| 20\.0 \| 2\.00 \|$/m);
});

Deno.test("round keeps 4 significant digits and fmt 3", () => {
  assert.equal(round(123.456), 123.5);
  assert.equal(round(0.00012346), 0.0001235);
  assert.equal(fmt(1234.5), "1235");
  assert.equal(fmt(12.345), "12.3");
  assert.equal(fmt(0.01234), "0.012");
  assert.equal(fmt(undefined), "–");
});
