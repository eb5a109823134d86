/**
 * Disk tier rows whose time is damaged on disk (a bit flip, a clock jump written to disk): a
 * first run of a real History fed by hand writes real files, one row's `t` is edited in place to
 * another time of the same length (no other byte moves), and a second run's disk tier answers.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { RealJournalFiles } from "../helpers/journal_files.ts";
import { tempDir } from "../helpers/kernel.ts";
import type { HistoryPoint } from "../../src/history/mod.ts";
import { T0 } from "./_history_helpers.ts";

/** What a first run wrote: its files, oldest first. */
export interface FirstRun {
  readonly dataDir: string;
  readonly files: RealJournalFiles;
  readonly paths: readonly string[];
  /** Seconds it polled (one bucket of a second each), from T0. */
  readonly seconds: number;
}

/**
 * A first run polls p0/d0 (`x` = the second) and p0/d1 .. p0/d<devices-1> (`x` = 100 * k + the
 * second) each second for `seconds`, and stops. `diskMaxBytes`: the disk tier's bytes (a file is
 * begun anew past a 1/16 share).
 */
export async function firstRun(
  seconds: number,
  devices = 2,
  diskMaxBytes?: number,
): Promise<FirstRun> {
  const dataDir = tempDir("history-damaged-row-");
  const files = new RealJournalFiles();
  const o = diskMaxBytes === undefined ? { stepMs: 1000 } : { stepMs: 1000, diskMaxBytes };
  const first = handFedHistory(o, files, undefined, dataDir);
  first.clock.wall = T0;
  await first.history.start();
  for (let s = 0; s < seconds; s++) {
    for (let k = 0; k < devices; k++) first.poll("p0", `d${k}`, k === 0 ? s : 100 * k + s);
    first.clock.wall += 1000;
  }
  await first.history.stop();
  const names = (await files.listNames(`${dataDir}/history`)).sort();
  return { dataDir, files, paths: names.map((n) => `${dataDir}/history/${n}`), seconds };
}

/** The row time `t` with its first digit 2 higher: years ahead, the same length. */
export function futureOf(t: number): number {
  const text = String(t);
  const moved = Number(String((Number(text[0]) + 2) % 10) + text.slice(1));
  assert.ok(moved > t && String(moved).length === text.length, "in the future");
  return moved;
}

/** The row time `t` with its second digit 1 lower: years behind, the same length. */
export function pastOf(t: number): number {
  const text = String(t);
  assert.ok(text[1] !== "0");
  const moved = Number(text[0] + String(Number(text[1]) - 1) + text.slice(2));
  assert.ok(moved < t && String(moved).length === text.length, "in the past");
  return moved;
}

/** A damaged row: its device and the second its time was before the edit. */
export interface Damaged {
  readonly device: string;
  readonly second: number;
}

/**
 * Edits the `t` of the row at line `pick(lines)` of `path` to `to(t)` (the same length).
 */
export async function damageRow(
  path: string,
  pick: (lines: readonly string[]) => number,
  to: (t: number) => number,
): Promise<Damaged> {
  const lines = (await Deno.readTextFile(path)).split("\n");
  const at = pick(lines);
  const m = /^\{"t":(\d+),"p":"[^"]*","d":"([^"]*)"/.exec(lines[at] ?? "");
  assert.ok(m !== null, `line ${at} is a row`);
  const t = Number(m[1]);
  lines[at] = lines[at]!.replace(`{"t":${t},`, `{"t":${to(t)},`);
  await Deno.writeTextFile(path, lines.join("\n"));
  return { device: m[2]!, second: (t - T0) / 1000 };
}

/**
 * A second run asks for p0/`device`'s `x` over seconds [sinceS, run.seconds): its points, from
 * the disk (asserted, and not incomplete), and the rows its disk tier found unreadable.
 */
export async function secondRunAnswer(
  run: FirstRun,
  device = "d0",
  sinceS = 0,
): Promise<{ points: readonly HistoryPoint[]; unreadable: number }> {
  const second = handFedHistory({ stepMs: 1000 }, run.files, undefined, run.dataDir);
  second.clock.wall = T0 + run.seconds * 1000;
  await second.history.start();
  try {
    const answer = await second.history.query({
      providerId: "p0",
      deviceId: device,
      signalIds: ["x"],
      sinceMs: T0 + sinceS * 1000,
      untilMs: T0 + run.seconds * 1000 - 1,
      stepMs: 1000,
    });
    assert.equal(answer.source, "disk");
    assert.equal(answer.incomplete, null);
    return {
      points: answer.signals[0]!.points,
      unreadable: second.history.status().disk.rowsUnreadable,
    };
  } finally {
    await second.history.stop();
  }
}

/**
 * A second run asks for p0/d0's `x` over seconds [sinceS, run.seconds): the points as
 * `second:value` (secondRunAnswer).
 */
export async function askSecondRun(run: FirstRun, sinceS = 0): Promise<string> {
  const { points } = await secondRunAnswer(run, "d0", sinceS);
  return points.map((p) => `${(p.t_ms - T0) / 1000}:${p.last}`).join(" ");
}

/** Every second's point of p0/d0 (its value the second) in [sinceS, seconds) but `without`'s. */
export function expected(seconds: number, without: number[], sinceS = 0): string {
  const out: string[] = [];
  for (let s = sinceS; s < seconds; s++) if (!without.includes(s)) out.push(`${s}:${s}`);
  return out.join(" ");
}
