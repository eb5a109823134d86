/**
 * A run whose close fails on a full disk stays open: the bus events that came while its
 * run_closed event was being written (and were left out for that reason) are lost with the
 * failed close, and must be counted as dropped like any other lost event.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

Deno.test("a bus event that comes while a failing close is written is counted as dropped", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const { run } = await registry.open({});
  // The disk is full and the run_closed write is under way when a mode change comes.
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  files.full = true;
  const closing = registry.close(run.run_id, { close_reason: "completed" }).then(
    () => null,
    (err: Error) => err.message,
  );
  await waitFor("the run_closed write under way", () => files.held > 0);
  bus.publish({ kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 1 });
  files.gate = null;
  release();
  assert.match((await closing) ?? "", /close run.*No space left on device/);
  assert.equal(registry.info().open_run_id, run.run_id, "the run stays open");
  // Not written, so counted (before: 0, a silent loss).
  assert.equal(registry.info().dropped_bus_events, 1);
  await registry.shutdown();
});

Deno.test("a close whose run_closed was written but whose runs.jsonl record failed is finished by the retry: one run_closed, nothing after it", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const { run } = await registry.open({});
  files.journalFails = true;
  const first = await registry.close(run.run_id, { close_reason: "completed" }).then(
    () => null,
    (err: Error) => err.message,
  );
  assert.match(first ?? "", /close run.*No space left on device/);
  files.journalFails = false;
  // The run is not closed in runs.jsonl: an event that comes now must not follow run_closed.
  bus.publish({ kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 1 });
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await assert.rejects(registry.addMarker(run.run_id, { type: "after the end" }));
  const { run: closed } = await registry.close(run.run_id, { close_reason: "failed" });
  assert.equal(closed.state, "closed");
  // The answer says what the event file holds: the run_closed written first.
  assert.equal(closed.close_reason, "completed");
  assert.deepEqual(eventsOnDisk(files, run.run_id), [
    [1, "run_opened", ""],
    [2, "run_closed", "completed"],
  ]);
  const journal = files.text("/data/runs.jsonl").split("\n").filter(Boolean).map((l) =>
    JSON.parse(l)
  );
  assert.deepEqual(journal.map((r) => [r.op, r.close_reason]), [
    ["open", undefined],
    ["close", "completed"],
  ]);
  assert.equal(registry.info().dropped_bus_events, 1, "the event after run_closed is counted");
  await registry.shutdown();
});

Deno.test("a run whose run_closed was written but whose runs.jsonl record failed is closed by the next start as its event file says, not closed again as abandoned", async () => {
  const files = new RunJournalFaultFiles();
  const a = registryOn(files);
  await a.start();
  const { run } = await a.open({});
  files.journalFails = true;
  await assert.rejects(a.close(run.run_id, { close_reason: "completed" }), /No space left/);
  await a.shutdown();
  files.journalFails = false;

  const b = registryOn(files);
  await b.start();
  const got = (await b.get(run.run_id)).run;
  assert.equal(got.state, "closed");
  assert.equal(got.close_reason, "completed");
  assert.equal(got.ended_at_epoch_ms, 1_700_000_000_000);
  assert.deepEqual(eventsOnDisk(files, run.run_id), [
    [1, "run_opened", ""],
    [2, "run_closed", "completed"],
  ]);
  assert.deepEqual(b.startupReport().abandonedRunIds, []);
  await b.shutdown();
});

Deno.test("a close whose run_closed fsync failed is cut back: the retry's reason is recorded, one run_closed", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const { run } = await registry.open({});
  files.syncFails = true;
  await assert.rejects(registry.close(run.run_id, { close_reason: "completed" }), /No space left/);
  files.syncFails = false;
  assert.deepEqual(eventsOnDisk(files, run.run_id), [[1, "run_opened", ""]]);
  const { run: closed } = await registry.close(run.run_id, { close_reason: "failed" });
  assert.equal(closed.close_reason, "failed");
  assert.deepEqual(eventsOnDisk(files, run.run_id), [
    [1, "run_opened", ""],
    [3, "run_closed", "failed"],
  ]);
  await registry.shutdown();
});

Deno.test("a close whose run_closed reached the event file but whose fsync and cut failed is finished by the retry without a second run_closed", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const { run } = await registry.open({});
  files.syncFails = true;
  files.truncateFails = true;
  await assert.rejects(registry.close(run.run_id, { close_reason: "completed" }), /No space left/);
  files.syncFails = false;
  files.truncateFails = false;
  // The line is in the file (the OS has it, and it could not be cut back); only its fsync failed.
  assert.deepEqual(eventsOnDisk(files, run.run_id), [
    [1, "run_opened", ""],
    [2, "run_closed", "completed"],
  ]);
  const { run: closed } = await registry.close(run.run_id, { close_reason: "failed" });
  assert.equal(closed.close_reason, "completed");
  assert.deepEqual(eventsOnDisk(files, run.run_id), [
    [1, "run_opened", ""],
    [2, "run_closed", "completed"],
  ]);
  await registry.shutdown();
});

Deno.test("a failed close's retry counts the events that come while it writes, as the events between the failure and the retry are", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const { run } = await registry.open({});
  files.journalFails = true;
  await assert.rejects(registry.close(run.run_id, { close_reason: "completed" }), /No space/);
  files.journalFails = false;
  // Between the failure and the retry: the run has ended on disk, its events are dropped.
  bus.publish({ kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 1 });
  await waitFor("the event between counted", () => registry.info().dropped_bus_events === 1);
  // The retry's record write is under way when the next event comes: dropped just the same.
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  const retry = registry.close(run.run_id, {});
  await waitFor("the retry's record write under way", () => files.held > 0);
  bus.publish({ kind: "mode_change", previous_mode: "MANUAL", new_mode: "IDLE", timestamp_ms: 2 });
  files.gate = null;
  release();
  assert.equal((await retry).run.state, "closed");
  assert.deepEqual(eventsOnDisk(files, run.run_id), [
    [1, "run_opened", ""],
    [2, "run_closed", "completed"],
  ]);
  assert.equal(
    registry.info().dropped_bus_events,
    2,
    "the event during the retry is counted like the one before it",
  );
  await registry.shutdown();
});
