/**
 * One row of a disk tier file whose time is damaged on disk into another bucket of the range (a
 * bit flip in a digit of its `t`: the same length, another second) costs at most itself: rows
 * ascend within a file, so a row out of order with the rows around it is counted unreadable, not
 * merged into the bucket its time now names -- which answered that bucket's point with a count
 * twice its polls, its min, max or last another second's, and its own bucket missing, unsaid. A
 * time damaged within its bucket still answers that bucket. A real History fed by hand, its disk
 * tier on real files; the first run's file edited on disk between the runs, the second run's
 * disk tier answers.
 */
import assert from "node:assert/strict";
import { T0 } from "./_history_helpers.ts";
import { damageRow, type FirstRun, firstRun, secondRunAnswer } from "./_damaged_row_rig.ts";

/** Seconds the first run polls (one bucket of a second each). */
const SECONDS = 20;

/**
 * A second run asks for `device`'s `x` over the first run's seconds: its points as
 * `second:last/count`, and the rows its disk tier found unreadable.
 */
async function ask(run: FirstRun, device: string) {
  const { points, unreadable } = await secondRunAnswer(run, device);
  return {
    points: points.map((p) => `${(p.t_ms - T0) / 1000}:${p.last}/${p.count}`).join(" "),
    unreadable,
  };
}

/** Every second's point of p0/d<k> (its value 100 * k + the second, one poll) but `without`'s. */
function expected(k: number, without: number[]): string {
  const out: string[] = [];
  for (let s = 0; s < SECONDS; s++) if (!without.includes(s)) out.push(`${s}:${100 * k + s}/1`);
  return out.join(" ");
}

/**
 * A first run polls p0/d0 and p0/d1 each second for SECONDS; the row of p0/`device` at second
 * `atSecond` is edited on disk to `movedMs` later (the same length); each device is asked for.
 */
async function askAfterMoving(device: string, atSecond: number, movedMs: number) {
  const run = await firstRun(SECONDS);
  assert.equal(run.paths.length, 1, `one file: ${run.paths}`);
  const row = await damageRow(
    run.paths[0]!,
    (lines) =>
      lines.findIndex((l) =>
        l.startsWith(`{"t":${T0 + atSecond * 1000},`) && l.includes(`"d":"${device}"`)
      ),
    (t) => t + movedMs,
  );
  assert.deepEqual(row, { device, second: atSecond });
  return { d0: await ask(run, "d0"), d1: await ask(run, "d1") };
}

Deno.test("a history question leaves out a disk row whose time was damaged into an earlier bucket of its range, and counts it: the bucket it names is answered as polled", async () => {
  const { d0, d1 } = await askAfterMoving("d0", 15, -2_000);
  assert.deepEqual(d0, { points: expected(0, [15]), unreadable: 1 }, "p0/d0: second 13 as polled");
  assert.deepEqual(d1, { points: expected(1, []), unreadable: 1 }, "p0/d1: every row");
});

Deno.test("a history question leaves out a disk row whose time was damaged into a later bucket of its range, and counts it: the bucket it names is answered as polled", async () => {
  const { d0, d1 } = await askAfterMoving("d0", 5, 2_000);
  assert.deepEqual(d0, { points: expected(0, [5]), unreadable: 1 }, "p0/d0: second 7 as polled");
  assert.deepEqual(d1, { points: expected(1, []), unreadable: 1 }, "p0/d1: every row");
});

Deno.test("a history question answers a disk row whose time was damaged within its own bucket: nothing left out", async () => {
  const { d0, d1 } = await askAfterMoving("d1", 5, 300);
  assert.deepEqual(d0, { points: expected(0, []), unreadable: 0 });
  assert.deepEqual(d1, { points: expected(1, []), unreadable: 0 });
});
