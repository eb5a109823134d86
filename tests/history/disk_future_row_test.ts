/**
 * One row of a disk tier file whose time is damaged into the future (a bit flip, a clock jump
 * written to disk) does not end the file's read: the reader stops early at a row past the range
 * only once the row after it is no earlier (rows known in order), so the valid rows after the
 * damaged one are still answered. A real History fed by hand, its disk tier on real files; the
 * first run's file edited on disk between the runs, the second run's disk tier answers.
 */
import assert from "node:assert/strict";
import { T0 } from "./_history_helpers.ts";
import { askSecondRun, damageRow, expected, firstRun, futureOf } from "./_damaged_row_rig.ts";

/** Seconds the first run polls (one bucket of a second each). */
const SECONDS = 20;
/** The second whose row of the damaged device gets a time in the future (but the file's first). */
const DAMAGED_AT = 5;

/**
 * A first run polls p0/d0 and p0/d1 each second for SECONDS and stops; the row of `damaged` at
 * second `atSecond` is edited on disk to a future time; a second run asks for p0/d0's `x` over
 * the first run's seconds. The points as `second:value`.
 */
async function askPastDamagedRow(damaged: string, atSecond: number): Promise<string> {
  const run = await firstRun(SECONDS);
  assert.equal(run.paths.length, 1, `one file: ${run.paths}`);
  const row = await damageRow(run.paths[0]!, (lines) => {
    const t = `{"t":${T0 + atSecond * 1000},`;
    const at = lines.findIndex((l) => l.startsWith(t) && l.includes(`"d":"${damaged}"`));
    assert.ok(atSecond > 0 || at === 0, "the file's first row");
    return at;
  }, futureOf);
  assert.deepEqual(row, { device: damaged, second: atSecond });
  return await askSecondRun(run);
}

Deno.test("a history question reads past another device's disk row whose time was damaged into the future: every row of its device after it answered", async () => {
  assert.equal(await askPastDamagedRow("d1", DAMAGED_AT), expected(SECONDS, []));
});

Deno.test("a history question reads past its own device's disk row whose time was damaged into the future: that row is not in the range, every later row is answered", async () => {
  assert.equal(await askPastDamagedRow("d0", DAMAGED_AT), expected(SECONDS, [DAMAGED_AT]));
});

Deno.test("a history question reads a disk file whose first row's time was damaged into the future: the file is not left out, every later row is answered", async () => {
  assert.equal(await askPastDamagedRow("d0", 0), expected(SECONDS, [0]));
});
