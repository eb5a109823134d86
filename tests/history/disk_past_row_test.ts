/**
 * One row of a disk tier file whose time is damaged into the past (a bit flip, a clock jump
 * written to disk) costs at most itself: the bisection for a question's first row does not jump
 * past the valid rows before it, and a file whose last row it is is not left out of a question
 * after that time. A real History fed by hand, its disk tier on real files; the first run's file
 * edited on disk between the runs, the second run's disk tier answers.
 */
import assert from "node:assert/strict";
import { SEEK_LINEAR_BYTES } from "../../src/journal/mod.ts";
import { askSecondRun, damageRow, expected, firstRun, pastOf } from "./_damaged_row_rig.ts";

/** A row line (a gap line is not one). */
const ROW = /^\{"t":\d+,/;

Deno.test("a history question's bisection for its first disk row does not jump past valid rows when a row in the middle of the file was damaged into the past", async () => {
  // Devices polled each second, and seconds: a file several times SEEK_LINEAR_BYTES long, so its
  // first row in range is found by bisection.
  const run = await firstRun(400, 10);
  assert.equal(run.paths.length, 1, `one file: ${run.paths}`);
  const path = run.paths[0]!;
  const size = (await Deno.stat(path)).size;
  assert.ok(size > 3 * SEEK_LINEAR_BYTES, `a file long enough to bisect: ${size} bytes`);
  // The row the first probe reads: the first that starts at or after the middle of the file.
  const row = await damageRow(path, (lines) => {
    let start = 0;
    for (let i = 0; i < lines.length; i++) {
      if (start >= Math.floor(size / 2) && ROW.test(lines[i]!)) return i;
      start += new TextEncoder().encode(lines[i]!).length + 1;
    }
    return -1;
  }, pastOf);
  // Asked from well before it: every row from there to the probe's is in range.
  const sinceS = 50;
  assert.ok(row.second > sinceS + 50, `the probe's row is at ${row.second} s`);
  assert.equal(
    await askSecondRun(run, sinceS),
    expected(run.seconds, row.device === "d0" ? [row.second] : [], sinceS),
  );
});

Deno.test("a history question does not leave out a disk file whose last row's time was damaged into the past: its rows in range are answered", async () => {
  // 1 MiB of disk: a file is begun anew past 64 KiB; devices and seconds fill more than one.
  const run = await firstRun(200, 10, 1024 * 1024);
  assert.ok(run.paths.length >= 2, `more than one file: ${run.paths}`);
  const row = await damageRow(
    run.paths[0]!,
    (lines) => lines.findLastIndex((l) => ROW.test(l)),
    pastOf,
  );
  // Asked from a few seconds before that row: the first file holds rows in range.
  const sinceS = row.second - 3;
  assert.ok(sinceS > 0);
  assert.equal(
    await askSecondRun(run, sinceS),
    expected(run.seconds, row.device === "d0" ? [row.second] : [], sinceS),
  );
});
