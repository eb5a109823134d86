/**
 * One row of a disk tier file whose time is damaged into the future (a bit flip, a clock jump
 * written to disk) does not end the file's read: the reader stops early at a row past the range
 * only once the row after it is no earlier (rows known in order), so the valid rows after the
 * damaged one are still answered. A real History fed by hand, its disk tier on real files; the
 * first run's file edited on disk between the runs, the second run's disk tier answers.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { RealJournalFiles } from "../helpers/journal_files.ts";
import { tempDir } from "../helpers/kernel.ts";
import { T0 } from "./_history_helpers.ts";

/** Seconds the first run polls (one bucket of a second each). */
const SECONDS = 20;
/** The second whose row of the damaged device gets a time in the future (but the file's first). */
const DAMAGED_AT = 5;

/** The row time `t` as written, and the same digits with the first changed: years ahead. */
function futureOf(t: number): [string, string] {
  const text = String(t);
  const flipped = String((Number(text[0]) + 2) % 10) + text.slice(1);
  assert.ok(Number(flipped) > t, "in the future");
  return [`{"t":${text},`, `{"t":${flipped},`];
}

/**
 * A first run polls p0/d0 and p0/d1 each second for SECONDS and stops; the row of `damaged` at
 * second `atSecond` is edited on disk to a future time (the same length: no other byte moves); a second
 * run asks for p0/d0's `x` over the first run's seconds. The points as `second:value`.
 */
async function askPastDamagedRow(damaged: string, atSecond: number): Promise<string> {
  const dataDir = tempDir("history-future-row-");
  const files = new RealJournalFiles();
  const first = handFedHistory({ stepMs: 1000 }, files, undefined, dataDir);
  first.clock.wall = T0;
  await first.history.start();
  for (let s = 0; s < SECONDS; s++) {
    first.poll("p0", "d0", s);
    first.poll("p0", "d1", 100 + s);
    first.clock.wall += 1000;
  }
  await first.history.stop();
  const names = await files.listNames(`${dataDir}/history`);
  assert.equal(names.length, 1, `one file: ${names}`);
  const path = `${dataDir}/history/${names[0]}`;
  const text = await Deno.readTextFile(path);
  const [was, now] = futureOf(T0 + atSecond * 1000);
  const lines = text.split("\n");
  const at = lines.findIndex((l) => l.startsWith(was) && l.includes(`"d":"${damaged}"`));
  assert.ok(at >= 0, "the row to damage is written");
  assert.ok(atSecond > 0 || at === 0, "the file's first row");
  lines[at] = lines[at]!.replace(was, now);
  await Deno.writeTextFile(path, lines.join("\n"));
  const second = handFedHistory({ stepMs: 1000 }, files, undefined, dataDir);
  second.clock.wall = T0 + SECONDS * 1000;
  await second.history.start();
  try {
    const answer = await second.history.query({
      providerId: "p0",
      deviceId: "d0",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + SECONDS * 1000 - 1,
      stepMs: 1000,
    });
    assert.equal(answer.source, "disk");
    assert.equal(answer.incomplete, null);
    return answer.signals[0]!.points.map((p) => `${(p.t_ms - T0) / 1000}:${p.last}`).join(" ");
  } finally {
    await second.history.stop();
  }
}

/** Every second's point of p0/d0 (its value the second) but those of `without`. */
function expected(without: number[]): string {
  const out: string[] = [];
  for (let s = 0; s < SECONDS; s++) if (!without.includes(s)) out.push(`${s}:${s}`);
  return out.join(" ");
}

Deno.test("a history question reads past another device's disk row whose time was damaged into the future: every row of its device after it answered", async () => {
  assert.equal(await askPastDamagedRow("d1", DAMAGED_AT), expected([]));
});

Deno.test("a history question reads past its own device's disk row whose time was damaged into the future: that row is not in the range, every later row is answered", async () => {
  assert.equal(await askPastDamagedRow("d0", DAMAGED_AT), expected([DAMAGED_AT]));
});

Deno.test("a history question reads a disk file whose first row's time was damaged into the future: the file is not left out, every later row is answered", async () => {
  assert.equal(await askPastDamagedRow("d0", 0), expected([0]));
});
