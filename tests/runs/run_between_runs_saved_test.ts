/**
 * `safety_events_between_runs` outlives the process: the count of safety events no run recorded
 * is saved to runs.jsonl (a `between_runs` record), so a restart -- a clean one or after a crash
 * -- gives it to the first run opened after it; a run's open takes it, so it is given once.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { BETWEEN_RUNS_SAVE_MS, type RunRegistry } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { waitFor } from "../helpers/kernel.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

function estop(bus: EventBus, t: number): void {
  bus.publish({
    kind: "estop_change",
    latched: true,
    reason: "leak",
    cause: "api",
    timestamp_ms: t,
  });
  bus.publish({
    kind: "mode_change",
    previous_mode: "AUTO",
    new_mode: "FAULT",
    timestamp_ms: t + 1,
  });
}

async function openedPayload(registry: RunRegistry): Promise<Record<string, unknown>> {
  const { run } = await registry.open({});
  const payload = (await registry.listEvents(run.run_id, { limit: 1 })).events[0]!.payload;
  await registry.close(run.run_id, {});
  return payload;
}

/** The count in runs.jsonl's last `op` record ("between_runs", "not_recorded"), or undefined. */
function lastCount(files: FaultyMemoryFiles, op: string): number | undefined {
  const line = files.text("/data/runs.jsonl").split("\n").findLast((l) =>
    l.includes(`"op":"${op}"`)
  );
  return line === undefined ? undefined : JSON.parse(line).count;
}

const COUNTED = {
  safety_events_between_runs: {
    count: 2,
    estop_triggers: 1,
    first_at_epoch_ms: 5,
    last_at_epoch_ms: 6,
  },
};

Deno.test("an e-stop between runs is counted by the first run opened after a restart", async () => {
  const files = new FaultyMemoryFiles();
  const first = registryOn(files);
  await first.start();
  const bus = new EventBus();
  first.attach(bus);
  await first.close((await first.open({})).run.run_id, {});
  estop(bus, 5);
  await first.shutdown();

  const second = registryOn(files);
  await second.start();
  assert.deepEqual(
    await openedPayload(second),
    COUNTED,
    "the restart keeps the count of the safety events no run recorded",
  );
  assert.deepEqual(await openedPayload(second), {}, "given once");
  await second.shutdown();
  const third = registryOn(files);
  await third.start();
  assert.deepEqual(await openedPayload(third), {}, "given once, across a restart too");
  await third.shutdown();
});

Deno.test("an e-stop between runs is counted by the first run opened after a crash", async () => {
  const files = new FaultyMemoryFiles();
  const first = registryOn(files);
  await first.start();
  const bus = new EventBus();
  first.attach(bus);
  estop(bus, 5);
  // No shutdown: the count reaches runs.jsonl without it.
  await waitFor("the count saved", () => files.text("/data/runs.jsonl").includes("between_runs"));

  const second = registryOn(files);
  await second.start();
  assert.deepEqual(await openedPayload(second), COUNTED);
  await second.shutdown();
  await first.shutdown();
});

Deno.test("the count of safety events between runs survives a rewrite of runs.jsonl at start", async () => {
  const files = new FaultyMemoryFiles();
  const first = registryOn(files, { maxRuns: 1 });
  await first.start();
  const bus = new EventBus();
  first.attach(bus);
  for (let i = 0; i < 3; i++) await first.close((await first.open({})).run.run_id, {});
  estop(bus, 5);
  await first.shutdown();

  // Its start removes the runs past runs.max_runs and rewrites runs.jsonl.
  const second = registryOn(files, { maxRuns: 1 });
  await second.start();
  await second.shutdown();
  const records = files.text("/data/runs.jsonl").split("\n").filter(Boolean)
    .map((l) => JSON.parse(l).op);
  assert.deepEqual(records, ["open", "close", "between_runs"], "rewritten, with the count");

  const third = registryOn(files, { maxRuns: 1 });
  await third.start();
  assert.deepEqual(await openedPayload(third), COUNTED);
  await third.shutdown();
});

Deno.test("safety events coming between runs for a long time keep runs.jsonl bounded (rewritten, the count kept)", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const FLAPS = 300;
  for (let i = 0; i < FLAPS; i++) {
    // A FAULT flapping every 10 s, no run ever opened: a new count to save every time.
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "FAULT",
      timestamp_ms: i,
    });
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    await waitFor(`count ${i + 1} saved`, () => lastCount(files, "between_runs") === i + 1);
  }
  await registry.shutdown();
  const lines = files.text("/data/runs.jsonl").split("\n").filter(Boolean);
  assert.ok(lines.length < 100, `runs.jsonl holds ${lines.length} lines for one count`);
  const last = JSON.parse(lines.at(-1)!);
  assert.equal(last.op, "between_runs");
  assert.equal(last.count, FLAPS, "the count reached is kept");
});

Deno.test("a run left open past runs.max_run_bytes for a long time keeps runs.jsonl bounded (rewritten, its count of events left out kept)", async () => {
  const files = new FaultyMemoryFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock, maxRunBytes: 400 });
  await registry.start();
  const { run } = await registry.open({});
  const LEFT_OUT = 300;
  for (let i = 0; i < LEFT_OUT; i++) {
    // A call every 10 s, none recorded past the bound: a new count to save every time.
    registry.recordCall({
      first_time_epoch_ms: clock.nowMs(),
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      outcome: "ok",
      args: { duty: "x".repeat(400) },
    });
    await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
    await waitFor(`count ${i + 1} saved`, () => lastCount(files, "not_recorded") === i + 1);
  }
  const lines = files.text("/data/runs.jsonl").split("\n").filter(Boolean);
  assert.ok(lines.length < 100, `runs.jsonl holds ${lines.length} lines for one open run`);
  // A crash now: the next start closes the run with the count saved last.
  const next = registryOn(files, { clock });
  await next.start();
  const closed = (await next.listEvents(run.run_id)).events.at(-1)!;
  assert.equal(closed.type, "abandoned");
  assert.equal(closed.payload.events_not_recorded, LEFT_OUT);
  await next.shutdown();
  await registry.shutdown();
});

/** In-memory files whose append of a run's open record to runs.jsonl waits for `gate`. */
class HeldOpenRecord extends FaultyMemoryFiles {
  gate: Promise<void> | null = null;
  held = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    return {
      ...h,
      append: async (text: string) => {
        if (this.gate !== null && path.endsWith("/runs.jsonl") && text.includes('"op":"open"')) {
          this.held++;
          await this.gate;
        }
        await h.append(text);
      },
    };
  }
}

Deno.test("a save of the count due while a run's open record is written does not follow that record: a restart does not count them again", async () => {
  const files = new HeldOpenRecord();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const first = registryOn(files, { clock });
  await first.start();
  const bus = new EventBus();
  first.attach(bus);
  estop(bus, 5); // saved at once
  await waitFor("the count saved", () => lastCount(files, "between_runs") === 2);
  // The re-arm: saved when BETWEEN_RUNS_SAVE_MS is up.
  bus.publish({
    kind: "estop_change",
    latched: false,
    reason: null,
    cause: "api",
    timestamp_ms: 7,
  });
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  const opening = first.open({});
  await waitFor("the open record's write under way", () => files.held > 0);
  await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
  files.gate = null;
  release();
  const { run } = await opening;
  const counted = (await first.listEvents(run.run_id, { limit: 1 })).events[0]!.payload;
  assert.deepEqual(
    (counted.safety_events_between_runs as Record<string, unknown>).count,
    3,
    "the run opened counts them",
  );
  await first.close(run.run_id, {});
  await first.shutdown();

  const second = registryOn(files, { clock });
  await second.start();
  assert.deepEqual(await openedPayload(second), {}, "counted once, not again after a restart");
  await second.shutdown();
});

Deno.test("an e-stop in the window of an open that failed is saved: a restart counts it", async () => {
  const files = new RunJournalFaultFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const first = registryOn(files, { clock });
  await first.start();
  const bus = new EventBus();
  first.attach(bus);
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  const opening = first.open({});
  await waitFor("the open's write under way", () => files.held > 0);
  estop(bus, 5);
  files.journalFails = true; // its record in runs.jsonl fails: no run
  files.gate = null;
  release();
  await assert.rejects(opening);
  files.journalFails = false;
  // The disk that failed the open failed its save too: saved again BETWEEN_RUNS_SAVE_MS later.
  await clock.advanceAsync(BETWEEN_RUNS_SAVE_MS);
  // A crash now: the count reaches runs.jsonl without a shutdown.
  await waitFor("the count saved", () => files.text("/data/runs.jsonl").includes("between_runs"));
  const second = registryOn(files);
  await second.start();
  assert.deepEqual(await openedPayload(second), COUNTED);
  await second.shutdown();
  await first.shutdown();
});
