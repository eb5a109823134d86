import assert from "node:assert/strict";
import { intervals, median, percentile, slope, summarize } from "../../bench/lib/stats.ts";

Deno.test("percentile uses the nearest rank, so p99 is a sample that really occurred", () => {
  const samples = Array.from({ length: 100 }, (_, i) => 100 - i); // 100..1, unsorted order
  assert.equal(percentile(samples, 50), 50);
  assert.equal(percentile(samples, 99), 99);
  assert.equal(percentile(samples, 100), 100);
  assert.equal(percentile(samples, 0), 1);
  assert.equal(percentile([3, 1, 2], 99), 3);
  assert.equal(percentile([7], 50), 7);
});

Deno.test("percentile of an empty series is NaN and rejects p outside 0..100", () => {
  assert.ok(Number.isNaN(percentile([], 50)));
  assert.throws(() => percentile([1], 101), RangeError);
  assert.throws(() => percentile([1], -1), RangeError);
});

Deno.test("median averages the two middle values of an even series", () => {
  assert.equal(median([4, 1, 3, 2]), 2.5);
  assert.equal(median([5, 1, 3]), 3);
  assert.ok(Number.isNaN(median([])));
});

Deno.test("summarize reports min, median, max and count", () => {
  assert.deepEqual(summarize([3, 9, 1]), { min: 1, median: 3, max: 9, n: 3 });
  const empty = summarize([]);
  assert.equal(empty.n, 0);
  assert.ok(Number.isNaN(empty.median));
});

Deno.test("slope fits a least-squares line", () => {
  assert.equal(slope([0, 1, 2, 3], [10, 12, 14, 16]), 2);
  assert.equal(slope([0, 1, 2], [5, 5, 5]), 0);
  assert.ok(Number.isNaN(slope([1], [1])));
  assert.ok(Number.isNaN(slope([2, 2], [1, 3])));
  assert.throws(() => slope([1, 2], [1]), RangeError);
});

Deno.test("intervals returns consecutive differences", () => {
  assert.deepEqual(intervals([100, 201, 300]), [101, 99]);
  assert.deepEqual(intervals([5]), []);
});
