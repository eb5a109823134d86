/**
 * The cut a close makes: an event recorded once the close has begun (its run_closed queued)
 * belongs to no run, whatever its time -- nothing follows a run_closed, and the next run has not
 * started. It is not counted as dropped (no run was open to take it), as any event between runs.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";
import { macrotask } from "../helpers/turns.ts";

/** A started registry on `files`, following a bus. */
async function attached(files: RunJournalFaultFiles) {
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  return { registry, bus };
}

/** Holds every append at a gate from now on; the function returned lets them all go on. */
function holdWrites(files: RunJournalFaultFiles): () => void {
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  return () => {
    files.gate = null;
    release();
  };
}

/** A mode change dated `t`: an ordinary event of a run. */
function modeChangeAt(bus: EventBus, t: number): void {
  bus.publish({ kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: t });
}

/** A run whose close has begun, its run_closed's write under way and held until `release`. */
async function closeHeldAtRunClosed() {
  const files = new RunJournalFaultFiles();
  const { registry, bus } = await attached(files);
  const { run } = await registry.open({});
  const release = holdWrites(files);
  const closing = registry.close(run.run_id, { close_reason: "completed" });
  await waitFor("the run_closed write under way", () => files.held > 0);
  return { files, registry, bus, run, closing, release };
}

Deno.test("a bus event recorded while a successful close writes its run_closed belongs to no run: not after run_closed, not in the next run, not counted as dropped", async () => {
  const { files, registry, bus, run, closing, release } = await closeHeldAtRunClosed();
  // Dated before the close's time, recorded after its run_closed was queued.
  modeChangeAt(bus, 1);
  release();
  await closing;
  assert.deepEqual(eventsOnDisk(files, run.run_id).map((e) => e[1]), ["run_opened", "run_closed"]);
  const next = await registry.open({});
  assert.deepEqual(eventsOnDisk(files, next.run.run_id).map((e) => e[1]), ["run_opened"]);
  assert.equal(registry.info().dropped_bus_events, 0);
  await registry.shutdown();
});

/**
 * A run with an event whose write is under way when its close begins; the next `failures` event
 * file appends (that event's, then the run_closed's) fail once the writes go on.
 */
async function closeWithEventWritesFailing(failures: number) {
  const files = new RunJournalFaultFiles();
  const { registry, bus } = await attached(files);
  const { run } = await registry.open({});
  const release = holdWrites(files);
  // Recorded while the run is open: its write is under way when the close begins.
  modeChangeAt(bus, 1);
  await waitFor("the event's write under way", () => files.held > 0);
  const closing = registry.close(run.run_id, { close_reason: "completed" });
  files.eventAppendsToFail = failures;
  release();
  return { files, registry, run, closing };
}

Deno.test("an event of a run whose write fails after the run's close began is counted in its run_closed's events_not_recorded", async () => {
  // The event's write fails, the run_closed's (the next write) does not.
  const { registry, run, closing } = await closeWithEventWritesFailing(1);
  await closing;
  const events = (await registry.listEvents(run.run_id)).events;
  assert.deepEqual(events.map((e) => e.category), ["run_opened", "run_closed"]);
  assert.deepEqual(
    events.at(-1)!.payload,
    { events_not_recorded: 1 },
    "the run's record counts the event its failed write lost",
  );
  await registry.shutdown();
});

function estopAt(bus: EventBus, t: number): void {
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

Deno.test("an e-stop while a close writes its run_closed is in no run's events: the next run's run_opened counts it", async () => {
  const { files, registry, bus, run, closing, release } = await closeHeldAtRunClosed();
  estopAt(bus, 5);
  modeChangeAt(bus, 9);
  release();
  await closing;
  assert.deepEqual(eventsOnDisk(files, run.run_id).map((e) => e[1]), ["run_opened", "run_closed"]);
  const next = await registry.open({});
  const opened = (await registry.listEvents(next.run.run_id)).events[0]!;
  assert.deepEqual(
    opened.payload,
    {
      safety_events_between_runs: {
        count: 2,
        estop_triggers: 1,
        first_at_epoch_ms: 5,
        last_at_epoch_ms: 6,
      },
    },
    "the next run's run_opened counts the e-stop and the FAULT entry no run recorded",
  );
  await registry.close(next.run.run_id, {});
  const third = await registry.open({});
  assert.deepEqual(
    (await registry.listEvents(third.run.run_id)).events[0]!.payload,
    {},
    "counted once",
  );
  await registry.shutdown();
});

Deno.test("an e-stop while an open that then fails is written is in no run's events: the next run's run_opened counts it", async () => {
  const files = new RunJournalFaultFiles();
  const { registry, bus } = await attached(files);
  const release = holdWrites(files);
  const opening = registry.open({});
  await waitFor("the open's write under way", () => files.held > 0);
  estopAt(bus, 7);
  files.journalFails = true; // its record in runs.jsonl fails: no run
  release();
  await assert.rejects(opening);
  files.journalFails = false;
  const { run } = await registry.open({});
  const events = (await registry.listEvents(run.run_id)).events;
  assert.deepEqual(events.map((e) => e.category), ["run_opened"]);
  assert.deepEqual(
    events[0]!.payload,
    {
      safety_events_between_runs: {
        count: 2,
        estop_triggers: 1,
        first_at_epoch_ms: 7,
        last_at_epoch_ms: 8,
      },
    },
    "the run opened next counts the e-stop and the FAULT entry of the failed open's window",
  );
  await registry.shutdown();
});

Deno.test("a run whose close fails after one of its event writes failed saves that count at once: a crash then closes it as abandoned with it", async () => {
  // The event's write fails, and so does the run_closed's.
  const { files, run, closing } = await closeWithEventWritesFailing(2);
  await assert.rejects(closing);
  // The count is saved to runs.jsonl without waiting for the disk: given the time to get there.
  for (let i = 0; i < 50 && !files.text("/data/runs.jsonl").includes("not_recorded"); i++) {
    await new Promise((r) => setTimeout(r, 2));
  }
  // A crash now (no shutdown): the next start closes the run as abandoned.
  const next = registryOn(files);
  await next.start();
  const closed = (await next.listEvents(run.run_id)).events.at(-1)!;
  assert.equal(closed.type, "abandoned");
  assert.equal(closed.payload.events_not_recorded, 1, "the event its failed write lost");
  await next.shutdown();
});

Deno.test("a call decided once a close has begun is stamped with no run: after a crash before its run_closed landed it is not an interrupted call of the closing run", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const { run } = await registry.open({});
  assert.equal(registry.eventRunId(), run.run_id, "a call decided while it is open is its own");
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  const closing = registry.close(run.run_id, { close_reason: "completed" }).catch(() => {});
  await waitFor("the run_closed write under way", () => files.held > 0);
  // What the audit trail stamps on a call's write-ahead record decided now.
  const stamp = registry.eventRunId();
  assert.equal(
    stamp,
    null,
    "a call decided after the close began belongs to no run (as its outcome's call event)",
  );
  // A crash now: the run_closed never reached the disk; the next start closes the run as
  // abandoned with the calls its process left in flight, by their stamp.
  const call = {
    first_time_epoch_ms: 1_700_000_000_000,
    last_time_epoch_ms: 1_700_000_000_000,
    count: 1,
    device_handle: "sim0/motor0",
    function: "stop",
    outcome: "interrupted",
  };
  files.gate = null; // the next process's writes are not held (the run_closed's still is)
  const next = registryOn(files);
  await next.start({ interruptedCalls: [{ call, runId: stamp }] });
  assert.deepEqual(
    (await next.listEvents(run.run_id)).events.map((e) => [e.category, e.type]),
    [["run_opened", ""], ["run_closed", "abandoned"]],
  );
  await next.shutdown();
  release();
  await closing;
});

Deno.test("an e-stop's incident recorded while a close writes its run_closed is in no run's events: the next run's run_opened counts it", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const { run } = await registry.open({});
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  const closing = registry.close(run.run_id, { close_reason: "completed" });
  await waitFor("the run_closed write under way", () => files.held > 0);
  // The incident recorder tells its listeners a microtask after the e-stop it begins with.
  registry.recordIncident({
    incident_id: "inc-5-1",
    trigger: "estop",
    cause: "api: leak",
    at_epoch_ms: 5,
  });
  files.gate = null;
  release();
  await closing;
  assert.deepEqual(eventsOnDisk(files, run.run_id).map((e) => e[1]), ["run_opened", "run_closed"]);
  const next = await registry.open({});
  assert.deepEqual(
    (await registry.listEvents(next.run.run_id)).events[0]!.payload,
    {
      safety_events_between_runs: {
        count: 1,
        estop_triggers: 0,
        first_at_epoch_ms: 5,
        last_at_epoch_ms: 5,
      },
    },
    "the next run's run_opened counts the e-stop's incident no run recorded",
  );
  await registry.shutdown();
});

Deno.test("an e-stop's reason arriving while the run of its trigger writes its run_closed is counted by the next run's run_opened", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const { run } = await registry.open({});
  let give!: (r: string) => void;
  registry.recordEstopReason(new Promise<string>((r) => give = r), "api");
  bus.publish({ kind: "estop_change", latched: true, reason: null, cause: "api", timestamp_ms: 5 });
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  const closing = registry.close(run.run_id, { close_reason: "completed" });
  await waitFor("the run_closed write under way", () => files.held > 0);
  give("door opened");
  await macrotask();
  files.gate = null;
  release();
  await closing;
  assert.deepEqual(
    eventsOnDisk(files, run.run_id).map((e) => [e[1], e[2]]),
    [["run_opened", ""], ["estop", "trigger"], ["run_closed", "completed"]],
  );
  const next = await registry.open({});
  const between = (await registry.listEvents(next.run.run_id)).events[0]!.payload
    .safety_events_between_runs as Record<string, unknown> | undefined;
  assert.equal(between?.count, 1, "the reason no run recorded is counted");
  await registry.shutdown();
});

Deno.test("an e-stop triggered and its reason arriving while a close writes its run_closed are both counted by the next run's run_opened", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const { run } = await registry.open({});
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  const closing = registry.close(run.run_id, { close_reason: "completed" });
  await waitFor("the run_closed write under way", () => files.held > 0);
  let give!: (r: string) => void;
  registry.recordEstopReason(new Promise<string>((r) => give = r), "api");
  bus.publish({ kind: "estop_change", latched: true, reason: null, cause: "api", timestamp_ms: 5 });
  give("door opened");
  await macrotask();
  files.gate = null;
  release();
  await closing;
  const next = await registry.open({});
  const between = (await registry.listEvents(next.run.run_id)).events[0]!.payload
    .safety_events_between_runs as Record<string, unknown> | undefined;
  assert.equal(between?.count, 2, "the trigger and its reason, neither recorded by a run");
  await registry.shutdown();
});
