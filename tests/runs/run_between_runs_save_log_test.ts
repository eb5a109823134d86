/**
 * A save of the count of safety events between runs that keeps failing (a full disk) is WARNed
 * once per failing spell, not once per try (every BETWEEN_RUNS_SAVE_MS); a spell after a save
 * that worked is WARNed again. The stop's save (of that count, or of an open run's count of events
 * not recorded) is the last: one that fails, or finds runs.jsonl's queue full, is said in one WARN
 * as not saved at the stop, never as "tried again" (nothing is, after a stop) nor in silence.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import {
  BETWEEN_RUNS_SAVE_MS,
  MAX_PENDING_RUN_RECORDS,
  type RunRegistry,
} from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  recordCallPastMaxRunBytes,
  registryOn,
  RunJournalFaultFiles,
  SMALL_MAX_RUN_BYTES,
} from "./_run_fault_rig.ts";

const TRIES = 5;

/** The fault rig's files, a manual clock, and a registry on them logging into `lines`, started. */
async function loggedRegistry(
  options: Partial<Parameters<typeof registryOn>[1]> = {},
) {
  const files = new RunJournalFaultFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { clock, logger: log, ...options });
  await registry.start();
  return { files, clock, lines, registry };
}

/** `registry` attached to a bus: each call publishes a FAULT entry between runs. */
function faultsOn(registry: RunRegistry, clock: ManualClock): () => void {
  const bus = new EventBus();
  registry.attach(bus);
  return () =>
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "FAULT",
      timestamp_ms: clock.nowMs(),
    });
}

/**
 * A count's first change (`change()`) is saved at once (`saves()` one record); the second waits
 * when runs.jsonl's appends start failing and the registry stops: the stop's save is tried and
 * fails. Answers the lines that speak of the count (`about`): one, none saying "tried again".
 */
async function stopSaveFailed(
  r: Awaited<ReturnType<typeof loggedRegistry>>,
  change: () => void,
  saves: () => string[],
  about: string,
): Promise<string[]> {
  const { files, lines, registry } = r;
  try {
    change();
    await waitFor("the first count saved", () => saves().length === 1);
    change();
    files.journalFails = true;
  } finally {
    await registry.shutdown();
  }
  assert.ok(files.journalAppendFailures >= 1, "the stop's save was tried");
  assert.equal(saves().length, 1);
  const said = lines.filter((l) => l.includes(about));
  // Nothing is tried again after the stop: no line may say so.
  assert.deepEqual(said.filter((l) => l.includes("tried again")), [], lines.join("\n"));
  assert.equal(said.length, 1, lines.join("\n"));
  return said;
}

Deno.test("RunRegistry WARNs a failing save of the count of safety events between runs once per failing spell", async () => {
  const { files, clock, lines, registry } = await loggedRegistry();
  const fault = faultsOn(registry, clock);
  const notSaved = () =>
    lines.filter((l) => l.includes("count of safety events between runs not saved"));
  const failTries = async () => {
    for (let i = 0; i < TRIES; i++) {
      const before = files.journalAppendFailures;
      await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
      await waitFor("the save tried again", () => files.journalAppendFailures > before);
    }
  };
  try {
    files.journalFails = true;
    fault();
    await failTries();
    assert.ok(files.journalAppendFailures >= TRIES);
    assert.equal(notSaved().length, 1, lines.join("\n"));
    assert.match(notSaved()[0]!, /^WARN .*not saved: .*; tried again every \d+ ms$/);

    // The disk works again: the count is saved, without a line of its own.
    files.journalFails = false;
    const saved = files.text("/data/runs.jsonl").split("\n").filter(Boolean).length;
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    await waitFor(
      "the count saved",
      () => files.text("/data/runs.jsonl").split("\n").filter(Boolean).length > saved,
    );
    assert.equal(notSaved().length, 1);

    // A new spell is said again, once.
    files.journalFails = true;
    fault();
    await failTries();
    assert.equal(notSaved().length, 2, lines.join("\n"));
  } finally {
    await registry.shutdown();
  }
  // Each failure is the registry's WARN: runs.jsonl's writer adds no line of its own for the same
  // saves ("written again: N lines were lost before" once the count retried was written -- it is
  // not lost --, nor its ERROR "lines lost" as the stop closes it).
  assert.deepEqual(lines.filter((l) => l.includes("lost")), [], lines.join("\n"));
});

Deno.test("RunRegistry says a failed save of the count of safety events between runs at the stop as not saved, not as tried again", async () => {
  const r = await loggedRegistry();
  const { files, lines } = r;
  const records = () =>
    files.text("/data/runs.jsonl").split("\n").filter((l) => l.includes('"between_runs"'));
  // The first change is saved at once; the second waits for BETWEEN_RUNS_SAVE_MS, or the stop.
  const said = await stopSaveFailed(
    r,
    faultsOn(r.registry, r.clock),
    records,
    "safety events between runs",
  );
  assert.match(
    said[0]!,
    /^WARN .*run registry stopping: count of safety events between runs not saved \(2, 0 e-stop triggers; .*\): .*no space left/i,
  );
  // One failure, one line: not also runs.jsonl's writer's ERROR "1 lines lost" as it closes.
  assert.deepEqual(lines.filter((l) => /^(WARN|ERROR)/.test(l)), said, lines.join("\n"));
});

Deno.test("RunRegistry says a count of safety events between runs its stop cannot queue (runs.jsonl's queue full) as not saved", async () => {
  const { files, clock, lines, registry } = await loggedRegistry();
  // Closed runs kept: runs.jsonl may hold the queue's lines without being rewritten (a rewrite
  // would wait for the stalled disk ahead of the stop).
  for (let i = 0; i < 4; i++) {
    const { run } = await registry.open({});
    await registry.close(run.run_id, {});
  }
  const fault = faultsOn(registry, clock);
  let release!: () => void;
  let stopping: Promise<void> | null = null;
  try {
    // runs.jsonl's disk stalls: the count's saves (one every BETWEEN_RUNS_SAVE_MS while it grows)
    // wait behind it until its queue is full -- one write under way, MAX_PENDING_RUN_RECORDS queued.
    files.gate = new Promise((r) => release = r);
    for (let i = 0; i <= MAX_PENDING_RUN_RECORDS; i++) {
      fault();
      await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    }
    await waitFor("a write under way", () => files.held === 1);
    fault(); // counted after the last save that found room: the stop's save has none
    let stopped = false;
    stopping = registry.shutdown().then(() => void (stopped = true));
    // Said while the stop still runs (its files wait for the stalled disk): "stopping", not
    // "stopped" (before: "run registry stopped: ..." of a stop not ended).
    await waitFor(
      "the stop's save said",
      () => lines.some((l) => l.includes("count of safety events between runs not saved")),
    );
    assert.equal(stopped, false, "the stop ended before its held write was released");
  } finally {
    release();
    await (stopping ?? registry.shutdown());
  }
  const said = lines.filter((l) => l.includes("safety events between runs"));
  assert.equal(said.length, 1, lines.join("\n"));
  assert.match(
    said[0]!,
    new RegExp(
      `^WARN .*run registry stopping: count of safety events between runs not saved \\(${
        MAX_PENDING_RUN_RECORDS + 2
      }, 0 e-stop triggers; .*\\): .*runs\\.jsonl has ${MAX_PENDING_RUN_RECORDS} records waiting`,
    ),
  );
});

Deno.test("RunRegistry says a failed save of an open run's count of events not recorded at the stop as not saved, not as tried again", async () => {
  const r = await loggedRegistry({ maxRunBytes: SMALL_MAX_RUN_BYTES });
  const { files, clock, lines, registry } = r;
  const { run } = await registry.open({});
  const saves = () =>
    files.text("/data/runs.jsonl").split("\n").filter((l) => l.includes('"op":"not_recorded"'));
  // Past runs.max_run_bytes: the first event left out is saved at once, the second waits for
  // RUN_NOT_RECORDED_SAVE_MS, or the stop (whose save also dates the run's end).
  const said = await stopSaveFailed(
    r,
    () => recordCallPastMaxRunBytes(registry, clock),
    saves,
    "count of events not recorded",
  );
  assert.match(
    said[0]!,
    new RegExp(
      `^WARN .*run ${run.run_id}: count of events not recorded not saved at the stop \\(2; .*\\): ` +
        `.*no space left`,
      "i",
    ),
  );
  // One failure, one line: not also runs.jsonl's writer's ERROR "1 lines lost" as it closes.
  assert.deepEqual(lines.filter((l) => l.includes("lost")), [], lines.join("\n"));
});
