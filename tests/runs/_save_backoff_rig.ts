/**
 * The rig of the tests of saves that back off while runs.jsonl's rewrite fails
 * (run_between_runs_save_backoff_test.ts, run_not_recorded_save_backoff_test.ts; the rename fault
 * also serves run_compact_retry_test.ts): run-journal fault files whose rename can be refused, a
 * started registry on them with a manual clock, the records of one kind in runs.jsonl, and the
 * saves a doubling backoff makes at the most.
 */
import type { RunRegistry } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

/** Run-journal fault files whose rename (the rewrite of runs.jsonl) fails while `renameFails`. */
export class RenameFaults extends RunJournalFaultFiles {
  renameFails = false;
  renames = 0;
  override rename(from: string, to: string): Promise<void> {
    this.renames++;
    if (this.renameFails) return Promise.reject(new Error("EIO: rename refused"));
    return super.rename(from, to);
  }
}

/** A started registry on RenameFaults files with a manual clock, and runs.jsonl's records. */
export interface SaveBackoffRig {
  files: RenameFaults;
  clock: ManualClock;
  registry: RunRegistry;
  /** The lines of runs.jsonl whose record is `op` ("between_runs", "not_recorded"). */
  records(op: string): string[];
}

/** A SaveBackoffRig whose registry takes `options` (its clock is the rig's). */
export async function saveBackoffRig(
  options: Partial<ConstructorParameters<typeof RunRegistry>[0]> = {},
): Promise<SaveBackoffRig> {
  const files = new RenameFaults();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock, ...options });
  await registry.start();
  return {
    files,
    clock,
    registry,
    records: (op) =>
      files.text("/data/runs.jsonl").split("\n").filter((l) => l.includes(`"op":"${op}"`)),
  };
}

/**
 * The saves a backoff doubling from `firstMs` up to `maxMs` makes in `ms`, plus one (a save
 * already due as the backoff begins).
 */
export function backedOffSaves(ms: number, firstMs: number, maxMs: number): number {
  let saves = 1;
  for (let t = 0, gap = firstMs;;) {
    gap = Math.min(2 * gap, maxMs);
    t += gap;
    if (t > ms) return saves;
    saves++;
  }
}
