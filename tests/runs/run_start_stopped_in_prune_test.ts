/**
 * A start of the run registry that the registry's shutdown overtakes while it prunes the oldest
 * closed runs (a hung mount): once the disk answers, the stopped registry removes no further event
 * file, and does not rewrite runs.jsonl over what a later runtime on the folder appends -- that
 * runtime replays the runs still listed and prunes them itself.
 */
import assert from "node:assert/strict";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { HeldCountedFiles, openedAfterRestart, pressEstop, registryOn } from "./_run_fault_rig.ts";
import { EventBus } from "../../src/events/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";

/**
 * Files whose next removal of a path `holding` matches waits while `held` is set (a hung mount);
 * removals asked and renames counted; a rename waits while `renameHeld` is set, an fsync of
 * runs.jsonl while `journalSyncHeld` is; append handles counted (`opened`, `closed`).
 */
class HeldRemoveFiles extends HeldCountedFiles {
  holding: (path: string) => boolean = () => false;
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
  /** While set, a rename waits for it, then renames (a hung mount that answers at last). */
  renameHeld: Promise<void> | null = null;
  /** While set, a rename fails (after `renameHeld`): the old file is kept. */
  renameFails = false;
  /** Renames that waited for `renameHeld`. */
  renaming = 0;
  override async rename(from: string, to: string): Promise<void> {
    this.renames++;
    if (this.renameHeld !== null) {
      this.renaming++;
      await this.renameHeld;
    }
    if (this.renameFails) throw new Deno.errors.PermissionDenied(`rename ${from}: refused`);
    await super.rename(from, to);
  }
  /** While set, an fsync of runs.jsonl waits for it (a hung mount that answers at last). */
  journalSyncHeld: Promise<void> | null = null;
  /** fsyncs of runs.jsonl that waited for `journalSyncHeld`. */
  journalSyncing = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    if (path !== "/data/runs.jsonl") return h;
    return {
      ...h,
      sync: async () => {
        const held = this.journalSyncHeld;
        if (held !== null) {
          this.journalSyncing++;
          await held;
        }
        await h.sync();
      },
    };
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

/**
 * An e-stop between runs, then a start on `files` (keeping one run: it prunes and rewrites
 * runs.jsonl, the count in the rewrite) whose rename of the rewrite hangs; the runtime stops
 * meanwhile, then the rename lands (or fails: `renameFails`). Answers the log lines and the count
 * of safety events between runs the next start's first run gives.
 */
async function stoppedWhileRenaming(files: HeldRemoveFiles, renameFails: boolean) {
  await threeClosedRuns(files);
  const { log, lines } = capturingLogger();
  const registry = registryOn(files, { logger: log, maxRuns: 1 });
  const bus = new EventBus();
  registry.attach(bus);
  pressEstop(bus, 3); // between runs: taken by the start, written in its rewrite
  let release = () => {};
  files.renameHeld = new Promise((r) => (release = r));
  files.renameFails = renameFails;
  const starting = registry.start();
  for (let i = 0; i < 100 && files.renaming < 1; i++) await flushMicrotasks();
  assert.equal(files.renaming, 1, "the start's rewrite waits on the disk, renaming its file");
  await registry.shutdown(); // the runtime stops while the rename is under way
  files.renameHeld = null;
  release(); // the hung mount answers at last
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  files.renameFails = false;
  const opened = await openedAfterRestart(files, new ManualClock(0, 1_700_000_100_000));
  const between = opened.payload.safety_events_between_runs as { count: number } | undefined;
  return { lines, countedNext: between?.count ?? 0 };
}

Deno.test("RunRegistry: shut down while its start's rewrite of runs.jsonl, holding the count of safety events between runs, is being renamed into place, no WARN calls the count not recorded once it is in the file", async () => {
  const { lines, countedNext } = await stoppedWhileRenaming(new HeldRemoveFiles(), false);

  assert.equal(countedNext, 1, "the rewrite in place: the next start's first run counts it");
  assert.deepEqual(
    lines.filter((l) => l.includes("not recorded")),
    [],
    "a WARN called the count not recorded that the rewrite put in runs.jsonl",
  );
});

Deno.test("RunRegistry: shut down while its start's rewrite of runs.jsonl, holding the count of safety events between runs, is being renamed into place, a rename that fails has the count said not recorded, once", async () => {
  const { lines, countedNext } = await stoppedWhileRenaming(new HeldRemoveFiles(), true);

  assert.equal(countedNext, 0, "the old runs.jsonl kept: the next start counts none");
  const warned = lines.filter((l) => l.startsWith("WARN"));
  assert.equal(warned.length, 1, lines.join("\n"));
  assert.match(
    warned[0]!,
    /^WARN .*1 safety events between runs \(1 e-stop triggers\) not recorded: run registry stopped while it started$/,
  );
});

/**
 * A registry over three closed runs whose start rewrites runs.jsonl (an e-stop between runs taken
 * into it), that rewrite's rename held on the disk: `releaseRename` lets it land.
 */
async function startRenaming() {
  const files = new HeldRemoveFiles();
  await threeClosedRuns(files);
  const handlesBefore = files.opened - files.closed;
  const { log, lines } = capturingLogger();
  const registry = registryOn(files, { logger: log, maxRuns: 1 }); // its start rewrites runs.jsonl
  const bus = new EventBus();
  registry.attach(bus);
  pressEstop(bus, 3); // between runs: taken by the start, written in its rewrite
  let releaseRename = () => {};
  files.renameHeld = new Promise((r) => (releaseRename = r));
  const starting = registry.start();
  for (let i = 0; i < 100 && files.renaming < 1; i++) await flushMicrotasks();
  assert.equal(files.renaming, 1, "the start's rewrite waits on the disk, renaming its file");
  return { files, handlesBefore, lines, registry, starting, releaseRename };
}

Deno.test("RunRegistry: shut down while its start's rewrite of runs.jsonl is being renamed into place, a rename landing while the stop closes runs.jsonl leaves no handle to it open once the stop resolves", async () => {
  const { files, handlesBefore, lines, registry, starting, releaseRename } = await startRenaming();
  // The runtime stops; its close of runs.jsonl waits on the disk (the fsync at the close).
  let releaseSync = () => {};
  files.journalSyncHeld = new Promise((r) => (releaseSync = r));
  const stopping = registry.shutdown();
  for (let i = 0; i < 100 && files.journalSyncing < 1; i++) await flushMicrotasks();
  assert.equal(files.journalSyncing, 1, "the stop's close of runs.jsonl waits on the disk");
  // The rename lands while the stop closes runs.jsonl; then the disk answers the close.
  files.renameHeld = null;
  releaseRename();
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  files.journalSyncHeld = null;
  releaseSync();
  await stopping;
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  const handlesAtStop = files.opened - files.closed;
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();

  assert.equal(handlesAtStop, handlesBefore, "a handle to runs.jsonl open after the stop");
  assert.equal(files.opened - files.closed, handlesBefore, "a handle to runs.jsonl left open");
  assert.equal(registry.info().available, false, "a stopped registry became available");
  assert.deepEqual(lines.filter((l) => l.includes("not recorded")), [], lines.join("\n"));
  const opened = await openedAfterRestart(files, new ManualClock(0, 1_700_000_100_000));
  const between = opened.payload.safety_events_between_runs as { count: number } | undefined;
  assert.equal(between?.count, 1, "the rewrite in place: the next start's first run counts it");
});

Deno.test("RunRegistry: shut down after its start's rewrite of runs.jsonl was renamed into place, while the replaced file's close waits on the disk, resolves only once that close ended", async () => {
  const { files, handlesBefore, lines, registry, starting, releaseRename } = await startRenaming();
  // The rename lands; the start's close of the replaced runs.jsonl waits on the disk (its fsync).
  let releaseSync = () => {};
  files.journalSyncHeld = new Promise((r) => (releaseSync = r));
  files.renameHeld = null;
  releaseRename();
  for (let i = 0; i < 100 && files.journalSyncing < 1; i++) await flushMicrotasks();
  assert.equal(files.journalSyncing, 1, "the replaced runs.jsonl's close waits on the disk");
  // The runtime stops meanwhile (its data_dir lock is released once the stop resolves).
  let stopped = false;
  const stopping = registry.shutdown().then(() => (stopped = true));
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  const handlesAtStop = stopped ? files.opened - files.closed : handlesBefore;
  files.journalSyncHeld = null;
  releaseSync();
  await stopping;
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();

  assert.equal(handlesAtStop, handlesBefore, "the stop resolved with runs.jsonl's handle open");
  assert.equal(files.opened - files.closed, handlesBefore, "a handle to runs.jsonl left open");
  assert.equal(registry.info().available, false, "a stopped registry became available");
  assert.deepEqual(lines.filter((l) => l.includes("not recorded")), [], lines.join("\n"));
  const opened = await openedAfterRestart(files, new ManualClock(0, 1_700_000_100_000));
  const between = opened.payload.safety_events_between_runs as { count: number } | undefined;
  assert.equal(between?.count, 1, "the rewrite in place: the next start's first run counts it");
});
