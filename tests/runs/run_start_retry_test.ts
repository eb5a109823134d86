/**
 * A start that fails (a full disk while closing the runs the previous process left open) leaves
 * the registry unavailable only until a retry succeeds: a short disk-full spell at boot must not
 * disable runs for the life of the process.
 */
import assert from "node:assert/strict";
import { RUN_START_RETRY_MAX_MS, type RunRegistry } from "../../src/runs/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { pressEstop, registryOn as registryOnFiles } from "./_run_fault_rig.ts";
import type { LineLogger } from "../../src/host/mod.ts";

/** The fault rig's registry on `files` with `clock`. */
function registryOn(
  files: FaultyMemoryFiles,
  clock: ManualClock,
  more: { maxRuns?: number; logger?: LineLogger } = {},
): RunRegistry {
  return registryOnFiles(files, { clock, ...more });
}

/** Advances `clock` until `cond` holds or `maxMs` of clock time passed. */
async function advanceUntil(clock: ManualClock, cond: () => boolean, maxMs: number) {
  for (let spent = 0; !cond() && spent < maxMs; spent += 100) {
    await clock.advanceAsync(100);
    // Let the file operations of a retry (promise callbacks only) settle.
    for (let i = 0; i < 50 && !cond(); i++) await Promise.resolve();
  }
}

/** A previous process's registry left a run open (opened with `fields`) in `files`: that run. */
async function leaveRunOpen(
  files: FaultyMemoryFiles,
  clock: ManualClock,
  fields: Parameters<RunRegistry["open"]>[0],
): Promise<Awaited<ReturnType<RunRegistry["open"]>>["run"]> {
  const first = registryOn(files, clock);
  await first.start();
  const { run } = await first.open(fields);
  await first.shutdown();
  return run;
}

/** A registry on a bus, started while the disk is full: its start failed, a retry is due. */
async function startOnFullDisk(
  files: FaultyMemoryFiles,
  clock: ManualClock,
  more: { logger?: LineLogger } = {},
): Promise<{ registry: RunRegistry; bus: EventBus }> {
  const registry = registryOn(files, clock, more);
  const bus = new EventBus();
  registry.attach(bus);
  files.syncFails = true;
  await registry.start();
  assert.equal(registry.info().available, false, "unavailable while the disk is full");
  return { registry, bus };
}

/** Advances `clock` until the retried start made `registry` available, at most two retry bounds. */
async function untilRetryAvailable(clock: ManualClock, registry: RunRegistry): Promise<void> {
  await advanceUntil(clock, () => registry.info().available, 2 * RUN_START_RETRY_MAX_MS);
}

/** Files whose listing of the event files a retry can be held in (a slow disk). */
interface HeldListing {
  gate: Promise<void> | null;
  listing: number;
}

/** Holds the next listing of the event files and advances `clock` to the retry making it: the release. */
async function holdRetryListing(files: HeldListing, clock: ManualClock): Promise<() => void> {
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  await advanceUntil(clock, () => files.listing > 0, 2 * RUN_START_RETRY_MAX_MS);
  assert.equal(files.listing, 1, "the retry is listing the event files");
  return () => {
    files.gate = null;
    release();
  };
}

Deno.test("RunRegistry: a start that failed on a full disk is retried, and the registry becomes available once the disk has room", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  const run = await leaveRunOpen(files, clock, { experiment_label: "left open" });

  const registry = registryOn(files, clock);
  files.syncFails = true;
  await registry.start();
  assert.equal(registry.info().available, false, "unavailable while the disk is full");
  await assert.rejects(registry.open({}), /unavailable/i);
  files.syncFails = false;

  await untilRetryAvailable(clock, registry);
  assert.equal(registry.info().available, true, "available again once the disk has room");
  assert.deepEqual(registry.startupReport().abandonedRunIds, [run.run_id]);
  const got = await registry.get(run.run_id);
  assert.equal(got.run.close_reason, "abandoned");
  const { run: next } = await registry.open({});
  assert.equal(registry.openRunId(), next.run_id);
  await registry.shutdown();
  assert.equal(clock.pendingTimers, 0, "no retry left behind");
});

Deno.test("RunRegistry: shutdown while a failed start waits for its retry cancels the retry", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  await leaveRunOpen(files, clock, {});

  const registry = registryOn(files, clock);
  files.syncFails = true;
  await registry.start();
  assert.equal(registry.info().available, false);
  await registry.shutdown();
  files.syncFails = false;
  await clock.advanceAsync(2 * RUN_START_RETRY_MAX_MS);
  assert.equal(registry.info().available, false, "a stopped registry stays stopped");
  assert.equal(registry.info().unavailable_reason, "run registry stopped");
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("RunRegistry: a retried start writes the interrupted calls of the abandoned run once", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  const run = await leaveRunOpen(files, clock, {});

  const call = {
    first_time_epoch_ms: clock.nowMs(),
    last_time_epoch_ms: clock.nowMs(),
    count: 1,
    device_handle: "sim0/motor0",
    function: "stop",
    outcome: "interrupted",
  };
  const registry = registryOn(files, clock);
  files.syncFails = true;
  await registry.start({ interruptedCalls: [{ call }] });
  assert.equal(registry.info().available, false);
  files.syncFails = false;
  await untilRetryAvailable(clock, registry);
  assert.equal(registry.info().available, true, String(registry.info().unavailable_reason));
  const events = (await registry.listEvents(run.run_id, {})).events;
  assert.deepEqual(
    events.map((e) => [e.sequence, e.category, e.type]),
    [[1, "run_opened", ""], [2, "call", "sim0/motor0 stop"], [3, "run_closed", "abandoned"]],
    "the interrupted call once, then run_closed",
  );
  await registry.shutdown();
});

Deno.test("RunRegistry: an e-stop while a failed start waits for its retry is counted by the first run opened after it", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  await leaveRunOpen(files, clock, { experiment_label: "left open" });

  const { registry, bus } = await startOnFullDisk(files, clock);
  pressEstop(bus, 3);
  files.syncFails = false;
  await untilRetryAvailable(clock, registry);
  assert.equal(registry.info().available, true);
  const { run } = await registry.open({});
  assert.deepEqual(
    (await registry.listEvents(run.run_id)).events[0]!.payload,
    {
      safety_events_between_runs: {
        count: 1,
        estop_triggers: 1,
        first_at_epoch_ms: 3,
        last_at_epoch_ms: 3,
      },
    },
    "the e-stop no run recorded is in the next run's run_opened",
  );
  await registry.shutdown();
});

/** Files whose listing of a folder waits for `gate` while it is set (a slow disk). */
class SlowListingFiles extends FaultyMemoryFiles {
  gate: Promise<void> | null = null;
  listing = 0;

  override async listNames(dir: string): Promise<string[]> {
    if (this.gate) {
      this.listing++;
      await this.gate;
    }
    return await super.listNames(dir);
  }
}

Deno.test("RunRegistry: an e-stop in the last steps of a retried start is counted by the first run opened after it", async () => {
  const files = new SlowListingFiles();
  const clock = new ManualClock();
  await leaveRunOpen(files, clock, { experiment_label: "left open" });

  const { registry, bus } = await startOnFullDisk(files, clock);
  files.syncFails = false;
  // The retry closes the run left open, then looks for event files no run names: held there.
  const release = await holdRetryListing(files, clock);
  pressEstop(bus, 3);
  release();
  await advanceUntil(clock, () => registry.info().available, 1000);
  assert.equal(registry.info().available, true);
  const { run } = await registry.open({});
  assert.deepEqual(
    (await registry.listEvents(run.run_id)).events[0]!.payload.safety_events_between_runs,
    { count: 1, estop_triggers: 1, first_at_epoch_ms: 3, last_at_epoch_ms: 3 },
    "the e-stop no run recorded is in the next run's run_opened",
  );
  await registry.shutdown();
});

/** Files whose listing of the runs' event folder fails `fails` times (an I/O error). */
class FailingListingFiles extends FaultyMemoryFiles {
  fails = 0;

  override async listNames(dir: string): Promise<string[]> {
    if (dir.endsWith("/runs") && this.fails > 0) {
      this.fails--;
      throw new Error("EIO: listing failed");
    }
    return await super.listNames(dir);
  }
}

Deno.test("RunRegistry: a start that failed after rewriting runs.jsonl still starts the next run no earlier than the safety events this process noted before it", async () => {
  const files = new FailingListingFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const first = registryOn(files, clock);
  await first.start();
  for (let i = 0; i < 3; i++) {
    const { run } = await first.open({});
    await first.close(run.run_id, {});
  }
  await first.shutdown();

  // Kept: one closed run, so the start removes two and rewrites runs.jsonl with the count of the
  // e-stop below; then the listing of the event files fails: the start is retried.
  const registry = registryOn(files, clock, { maxRuns: 1 });
  const bus = new EventBus();
  registry.attach(bus);
  const estopAt = clock.wall;
  pressEstop(bus, estopAt);
  files.fails = 1;
  await registry.start();
  assert.equal(registry.info().available, false, "the listing failed");
  await untilRetryAvailable(clock, registry);
  assert.equal(registry.info().available, true);
  clock.wall = estopAt - 60_000; // NTP steps the wall clock back before the open
  const { run } = await registry.open({});
  const opened = (await registry.listEvents(run.run_id)).events[0]!.payload;
  assert.deepEqual(opened.safety_events_between_runs, {
    count: 1,
    estop_triggers: 1,
    first_at_epoch_ms: estopAt,
    last_at_epoch_ms: estopAt,
  });
  assert.ok(
    run.started_at_epoch_ms >= estopAt,
    `started ${estopAt - run.started_at_epoch_ms} ms before the e-stop its run_opened lists`,
  );
  await registry.shutdown();
});

Deno.test("RunRegistry: a shutdown while a retried start runs (in turn with it) keeps the e-stops counted meanwhile for the next process", async () => {
  const files = new SlowListingFiles();
  const clock = new ManualClock();
  await leaveRunOpen(files, clock, { experiment_label: "left open" });

  const { registry, bus } = await startOnFullDisk(files, clock);
  // Between runs while the registry is unavailable: counted for the first run opened after it.
  pressEstop(bus, 3);
  files.syncFails = false;
  // The retry (in turn with shutdown) is listing the event files, a slow disk, when the stop comes.
  const release = await holdRetryListing(files, clock);
  const stopping = registry.shutdown();
  release(); // the disk answers: the retry is not hung, the shutdown waits its turn
  await stopping;
  assert.equal(clock.pendingTimers, 0, "no retry left behind");

  const next = registryOn(files, clock);
  await next.start();
  const { run } = await next.open({});
  assert.deepEqual(
    (await next.listEvents(run.run_id)).events[0]!.payload.safety_events_between_runs,
    { count: 1, estop_triggers: 1, first_at_epoch_ms: 3, last_at_epoch_ms: 3 },
    "the e-stop counted before the stop is lost for the next process",
  );
  await next.shutdown();
});

/**
 * Files whose listing of the runs' event folder fails once `failListing` is set (an I/O error);
 * that failure holds the fsyncs of runs.jsonl from then on until `release` (a slow disk).
 */
class FailThenSlowSyncFiles extends FaultyMemoryFiles {
  failListing = false;
  syncsHeld = 0;
  release = () => {};
  #gate: Promise<void> | null = null;

  override async listNames(dir: string): Promise<string[]> {
    if (dir.endsWith("/runs") && this.failListing) {
      this.failListing = false;
      this.#gate = new Promise((r) => this.release = () => (this.#gate = null, r()));
      throw new Error("EIO: listing failed");
    }
    return await super.listNames(dir);
  }

  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    if (!path.endsWith("/runs.jsonl")) return h;
    return {
      ...h,
      sync: async () => {
        if (this.#gate !== null) {
          this.syncsHeld++;
          await this.#gate;
        }
        await h.sync();
      },
    };
  }
}

Deno.test("RunRegistry: a shutdown while a failed start closes its runs.jsonl leaves no retry behind, nor says one", async () => {
  const files = new FailThenSlowSyncFiles();
  const clock = new ManualClock();
  await leaveRunOpen(files, clock, { experiment_label: "left open" });

  const { log, lines } = capturingLogger();
  const registry = registryOn(files, clock, { logger: log });
  files.failListing = true;
  const starting = registry.start();
  // The start failed at its last step; closing runs.jsonl, its fsync waits on the disk.
  for (let i = 0; i < 100 && files.syncsHeld < 1; i++) await flushMicrotasks();
  assert.equal(files.syncsHeld, 1, "the failed start's close of runs.jsonl waits on the disk");
  const stopping = registry.shutdown(); // the runtime stops meanwhile
  files.release();
  await starting;
  await stopping;
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  assert.equal(clock.pendingTimers, 0, "a retry of the stopped registry's start is left behind");
  assert.deepEqual(
    lines.filter((l) => l.includes("retrying in")),
    [],
    "the stopped registry says it retries",
  );
});

Deno.test("RunRegistry: a shutdown that cancels the retry of a failed start WARNs once how many e-stops between runs it could not record, and why", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  await leaveRunOpen(files, clock, { experiment_label: "left open" });

  const { log, lines } = capturingLogger({ level: "debug" });
  const { registry, bus } = await startOnFullDisk(files, clock, { logger: log });
  pressEstop(bus, 3);
  pressEstop(bus, 4);
  await registry.shutdown(); // the retry's timer is pending: cancelled
  assert.equal(clock.pendingTimers, 0, "no retry left behind");

  const warned = lines.filter((l) => l.startsWith("WARN"));
  assert.equal(warned.length, 1, lines.join("\n"));
  assert.match(
    warned[0]!,
    /^WARN .*2 safety events between runs \(2 e-stop triggers\) not recorded: .*run journal \/data\/runs\.jsonl: /,
  );
  const notRetried = lines.filter((l) => l.includes("not retried"));
  assert.equal(notRetried.length, 1, lines.join("\n"));
  assert.match(notRetried[0]!, /^INFO /, "a start not retried because of a stop is said at INFO");
});

Deno.test("RunRegistry: an e-stop's reason arriving as the stop of a registry never available begins is said with what it could not record", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock();
  const first = registryOn(files, clock);
  await first.start();
  await first.open({ experiment_label: "left open" });
  await first.shutdown();

  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, clock, { logger: log });
  const bus = new EventBus();
  registry.attach(bus);
  files.syncFails = true;
  await registry.start();
  assert.equal(registry.info().available, false, "unavailable while the disk is full");
  pressEstop(bus, 3);
  pressEstop(bus, 4);
  // The reason of the last e-stop (its HTTP body read after the latch) arrives as the stop begins:
  // no run records it, so it is counted between runs -- and not recorded, as the triggers are.
  let arrive!: (reason: string) => void;
  registry.recordEstopReason(new Promise((r) => arrive = r), "api", 4);
  const stopping = registry.shutdown();
  arrive("leak");
  await stopping;
  for (let i = 0; i < 100; i++) await flushMicrotasks();

  // Noted before the registry stopped (after the stop's WARN of the two triggers): said likewise,
  // not lost without a line.
  const warned = lines.filter((l) => l.startsWith("WARN"));
  const said = warned.map((l) =>
    /^WARN .*: (\d+) safety events between runs \((\d+) e-stop triggers\) not recorded: .*run journal \/data\/runs\.jsonl: /
      .exec(l)
  );
  assert.ok(said.every((m) => m !== null), lines.join("\n"));
  const sum = (i: number) => said.reduce((n, m) => n + Number(m![i]), 0);
  assert.deepEqual([sum(1), sum(2)], [3, 2], lines.join("\n"));
});

/**
 * Files whose listing of the runs' event folder waits for `gate` while it is set (a slow disk),
 * then fails while `fails` is above 0 (an I/O error).
 */
class SlowFailingListingFiles extends FaultyMemoryFiles {
  gate: Promise<void> | null = null;
  listing = 0;
  fails = 0;

  override async listNames(dir: string): Promise<string[]> {
    if (dir.endsWith("/runs")) {
      if (this.gate) {
        this.listing++;
        await this.gate;
      }
      if (this.fails > 0) {
        this.fails--;
        throw new Error("EIO: listing failed");
      }
    }
    return await super.listNames(dir);
  }
}

Deno.test("RunRegistry: a retried start that fails after the shutdown was asked WARNs once how many e-stops between runs it could not record, at INFO that it is not retried", async () => {
  const files = new SlowFailingListingFiles();
  const clock = new ManualClock();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, clock, { logger: log });
  const bus = new EventBus();
  registry.attach(bus);
  files.fails = 2; // the start and its first retry fail at their listing of the event files
  await registry.start();
  assert.equal(registry.info().available, false, "the listing failed");
  pressEstop(bus, 3);
  // The retry is listing the event files, a slow disk, when the stop comes; then its listing fails.
  const release = await holdRetryListing(files, clock);
  const stopping = registry.shutdown();
  release();
  await stopping;
  assert.equal(files.fails, 0, "the retry failed after the stop was asked");
  assert.equal(clock.pendingTimers, 0, "no retry left behind");

  const warned = lines.filter((l) => l.startsWith("WARN"));
  assert.equal(warned.length, 1, lines.join("\n"));
  assert.match(
    warned[0]!,
    /^WARN .*1 safety events between runs \(1 e-stop triggers\) not recorded: .*EIO: listing failed/,
  );
  const notRetried = lines.filter((l) => l.includes("not retried"));
  assert.equal(notRetried.length, 1, lines.join("\n"));
  assert.match(notRetried[0]!, /^INFO /, "a start not retried because of a stop is said at INFO");
});
