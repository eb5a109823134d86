/**
 * PointSequencer (src/telemetry/_point_sequencer.ts) alone: what it remembers of one (series,
 * millisecond) pair is bounded (MAX_ROWS_PER_POINT), and rows past the bound share the last point.
 */
import assert from "node:assert/strict";
import {
  MAX_ROWS_PER_POINT,
  PointSequencer,
  SEQ_TAG,
} from "../../src/telemetry/_point_sequencer.ts";

/** The `seq` tag of a formatted line, 0 when it has none. */
function seqOf(line: string): number {
  const m = new RegExp(`,${SEQ_TAG}=(\\d+) `).exec(line);
  return m === null ? 0 : Number(m[1]);
}

const row = (v: number) => `m,runtime=r,signal_id=s value=${v} 1700000000000`;

Deno.test("PointSequencer tells MAX_ROWS_PER_POINT rows of one millisecond apart; those past it share the last point, an identical row still its own", () => {
  const points = new PointSequencer();
  for (let i = 0; i < MAX_ROWS_PER_POINT; i++) assert.equal(seqOf(points.distinct(row(i))), i);
  // Past the bound: not remembered, each on the last point (the limit).
  assert.equal(seqOf(points.distinct(row(MAX_ROWS_PER_POINT))), MAX_ROWS_PER_POINT);
  assert.equal(seqOf(points.distinct(row(MAX_ROWS_PER_POINT + 1))), MAX_ROWS_PER_POINT);
  // A row identical to a remembered one is still written as that one was.
  assert.equal(seqOf(points.distinct(row(0))), 0);
  assert.equal(seqOf(points.distinct(row(7))), 7);
  // Another millisecond of the series starts untagged.
  assert.equal(seqOf(points.distinct(row(1).replace(/ \d+$/, " 1700000000001"))), 0);
});
