/**
 * A start of the run registry that the registry's shutdown overtakes while it prunes the oldest
 * closed runs (a hung mount): once the disk answers, the stopped registry removes no further event
 * file, and does not rewrite runs.jsonl over what a later runtime on the folder appends -- that
 * runtime replays the runs still listed and prunes them itself.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { registryOn } from "./_run_fault_rig.ts";

/**
 * Files whose next removal of a path `holding` matches waits while `held` is set (a hung mount);
 * removals asked and renames counted.
 */
class HeldRemoveFiles extends FaultyMemoryFiles {
  held: Promise<void> | null = null;
  holding: (path: string) => boolean = () => false;
  waiting = 0;
  removing = 0;
  renames = 0;
  override async remove(path: string): Promise<void> {
    this.removing++;
    if (this.held !== null && this.holding(path)) {
      const held = this.held;
      this.held = null; // the next removal only
      this.waiting++;
      await held;
    }
    await super.remove(path);
  }
  override async rename(from: string, to: string): Promise<void> {
    this.renames++;
    await super.rename(from, to);
  }
}

const eventFile = (id: string) => `/data/runs/${id.slice(-26)}.jsonl`;

/** Three runs an earlier process opened and closed, kept by its default runs.max_runs. */
async function threeClosedRuns(files: HeldRemoveFiles): Promise<string[]> {
  const earlier = registryOn(files);
  await earlier.start();
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const { run } = await earlier.open({ experiment_label: `run ${i}` });
    await earlier.close(run.run_id);
    ids.push(run.run_id);
  }
  await earlier.shutdown();
  for (const id of ids) assert.notEqual(files.text(eventFile(id)), "", "a run has no event file");
  return ids;
}

/**
 * Starts a registry keeping one run (its start prunes the two oldest) whose removal of the first
 * path `holding` matches hangs; shuts it down meanwhile, then lets the disk answer. Returns the
 * log lines after the stop, and counts taken at the stop.
 */
async function stoppedWhileHeld(files: HeldRemoveFiles, holding: (path: string) => boolean) {
  const { log, lines } = capturingLogger();
  const registry = registryOn(files, { logger: log, maxRuns: 1 });
  let release = () => {};
  files.held = new Promise((r) => (release = r));
  files.holding = holding;
  const starting = registry.start();
  for (let i = 0; i < 100 && files.waiting < 1; i++) await flushMicrotasks();
  assert.equal(files.waiting, 1, "the start's prune waits on the disk");
  await registry.shutdown(); // the runtime stops while the start prunes
  const linesAtStop = lines.length;
  const atStop = { removing: files.removing, renames: files.renames };
  const runsAtStop = files.text("/data/runs.jsonl");
  release(); // the hung mount answers at last
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  assert.equal(registry.info().available, false, "a stopped registry became available");
  return { after: lines.slice(linesAtStop), atStop, runsAtStop };
}

Deno.test("RunRegistry: shut down while its start removes an old run's event file, once the disk answers it removes no further file", async () => {
  const files = new HeldRemoveFiles();
  const ids = await threeClosedRuns(files);
  const runsBefore = files.text("/data/runs.jsonl");
  const kept = [files.text(eventFile(ids[1]!)), files.text(eventFile(ids[2]!))];

  const { after, atStop } = await stoppedWhileHeld(files, (p) => p === eventFile(ids[0]!));

  assert.equal(files.removing, atStop.removing, "the stopped registry removed another file");
  assert.equal(files.text(eventFile(ids[1]!)), kept[0], "the second run's event file is gone");
  assert.equal(files.text(eventFile(ids[2]!)), kept[1], "the kept run's event file is gone");
  assert.equal(files.text("/data/runs.jsonl"), runsBefore, "the stopped registry wrote runs.jsonl");
  assert.deepEqual(after, [], "the stopped registry logged its start's end");
});

Deno.test("RunRegistry: shut down while its start rewrites runs.jsonl after a prune, once the disk answers it does not replace runs.jsonl", async () => {
  const files = new HeldRemoveFiles();
  await threeClosedRuns(files);

  // The rewrite's first step (a temporary file left by a crash removed) hangs.
  const { after, atStop, runsAtStop } = await stoppedWhileHeld(
    files,
    (p) => p === "/data/runs.jsonl.tmp",
  );

  assert.equal(files.renames, atStop.renames, "the stopped registry renamed its rewrite over it");
  assert.equal(files.removing, atStop.removing, "the stopped registry removed runs.jsonl.tmp");
  assert.equal(files.text("/data/runs.jsonl"), runsAtStop, "the stopped registry replaced it");
  assert.equal(files.text("/data/runs.jsonl.tmp"), "", "the stopped registry left its rewrite");
  assert.deepEqual(after, [], "the stopped registry logged its start's end");
});
