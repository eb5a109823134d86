/**
 * A rewrite of runs.jsonl sets its new journal before it opens it, and a save (not in the serial
 * chain) may append to that journal while the open waits on the disk: the file is opened once,
 * and the handle is closed at shutdown (none leaked). In-memory files whose size reads of
 * runs.jsonl wait while held (a slow disk); the handles of runs.jsonl opened and closed counted.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { BETWEEN_RUNS_SAVE_MS } from "../../src/runs/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { waitFor } from "../helpers/kernel.ts";
import { registryOn } from "./_run_fault_rig.ts";

const RUNS = "/data/runs.jsonl";

/** Appends to runs.jsonl.tmp wait for `tmpGate`; size reads of runs.jsonl for `sizeGate`. */
class HeldFiles extends FaultyMemoryFiles {
  tmpGate: Promise<void> | null = null;
  tmpHeld = 0;
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
      append: async (text: string) => {
        if (this.tmpGate !== null && path.endsWith("/runs.jsonl.tmp")) {
          this.tmpHeld++;
          await this.tmpGate;
        }
        await h.append(text);
      },
      close: () => {
        if (runs) this.closed++;
        h.close();
      },
    };
  }
}

function lines(files: FaultyMemoryFiles): string[] {
  return files.text(RUNS).split("\n").filter(Boolean);
}

Deno.test("RunRegistry: a save appended to the rewritten runs.jsonl while its journal opens opens it once; shutdown leaves no handle open", async () => {
  const files = new HeldFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  let published = 0;
  /** A FAULT entry between runs, then the time of the next save of its count. */
  const fault = async () => {
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "FAULT",
      timestamp_ms: ++published,
    });
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
  };
  const tolerated = 64; // 4 x runs kept (none) + RUNS_COMPACT_SLACK_LINES
  for (let i = 0; i < 200 && lines(files).length < tolerated; i++) {
    await fault();
    await waitFor("the count saved", () => lines(files).at(-1)!.includes(`"count":${published}`));
  }
  assert.equal(lines(files).length, tolerated);
  // The next save makes runs.jsonl long: its rewrite's write is held.
  let releaseTmp!: () => void;
  files.tmpGate = new Promise((r) => releaseTmp = r);
  await fault();
  await waitFor("the rewrite's write under way", () => files.tmpHeld > 0);
  // The rewrite goes on to rename and open its new journal, whose first size read waits.
  let releaseSize!: () => void;
  files.sizeGate = new Promise((r) => releaseSize = r);
  files.tmpGate = null;
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
    lines(files).some((l) => l.includes(`"count":${published}`)),
    "the save made while the journal opened is in the new runs.jsonl",
  );
  assert.equal(files.opened - files.closed, 0, "a handle of runs.jsonl left open");
});
