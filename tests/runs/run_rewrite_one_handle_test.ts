/**
 * A rewrite of runs.jsonl sets its new journal before it opens it, and a save (not in the serial
 * chain) may append to that journal while the open waits on the disk: the file is opened once,
 * and the handle is closed at shutdown (none leaked). In-memory files whose size reads of
 * runs.jsonl wait while held (a slow disk); the handles of runs.jsonl opened and closed counted.
 */
import assert from "node:assert/strict";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  faultsBetweenRuns,
  fillRunsJsonl,
  HeldRewriteFiles,
  registryOn,
  runsJsonlLines as lines,
} from "./_run_fault_rig.ts";

const RUNS = "/data/runs.jsonl";

/** HeldRewriteFiles whose size reads of runs.jsonl also wait for `sizeGate`. */
class HeldFiles extends HeldRewriteFiles {
  sizeGate: Promise<void> | null = null;
  sizeHeld = 0;
  /** Handles of runs.jsonl opened, and closed. */
  opened = 0;
  closed = 0;
  override async fileSize(path: string): Promise<number> {
    if (this.sizeGate !== null && path === RUNS) {
      this.sizeHeld++;
      await this.sizeGate;
    }
    return await super.fileSize(path);
  }
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    const runs = path === RUNS;
    if (runs) this.opened++;
    return {
      ...h,
      close: () => {
        if (runs) this.closed++;
        h.close();
      },
    };
  }
}

Deno.test("RunRegistry: a save appended to the rewritten runs.jsonl while its journal opens opens it once; shutdown leaves no handle open", async () => {
  const files = new HeldFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  const { fault, published } = faultsBetweenRuns(registry, clock);
  const tolerated = 64; // 4 x runs kept (none) + RUNS_COMPACT_SLACK_LINES
  await fillRunsJsonl(files, tolerated, fault, published);
  // The next save makes runs.jsonl long: its rewrite's write is held.
  const releaseTmp = files.holdRewrite();
  await fault();
  await waitFor("the rewrite's write under way", () => files.tmpHeld > 0);
  // The rewrite goes on to rename and open its new journal, whose first size read waits.
  let releaseSize!: () => void;
  files.sizeGate = new Promise((r) => releaseSize = r);
  releaseTmp();
  await waitFor("the new journal's open under way", () => files.sizeHeld > 0);
  // A save meanwhile appends to the new journal (its write begun while the open waits).
  await fault();
  for (let i = 0; i < 20; i++) await flushMicrotasks();
  files.sizeGate = null;
  releaseSize();
  for (let i = 0; i < 20; i++) await flushMicrotasks();
  await registry.shutdown();
  assert.ok(lines(files).length < tolerated, "runs.jsonl rewritten");
  assert.ok(
    lines(files).some((l) => l.includes(`"count":${published()}`)),
    "the save made while the journal opened is in the new runs.jsonl",
  );
  assert.equal(files.opened - files.closed, 0, "a handle of runs.jsonl left open");
});
