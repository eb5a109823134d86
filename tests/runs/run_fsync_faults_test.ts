/**
 * A marker or a run open whose fsync fails is answered 503: the file must then not hold its line,
 * or a client's retry duplicates the marker, and an open reported failed becomes a run (closed as
 * abandoned) at the next start.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

Deno.test("RunRegistry: a marker whose fsync failed is not in the event file, so the client's retry records it once", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const { run } = await registry.open({});
  files.syncFails = true;
  await assert.rejects(registry.addMarker(run.run_id, { type: "sample in" }), /No space left/);
  files.syncFails = false;
  assert.deepEqual(
    eventsOnDisk(files, run.run_id),
    [[1, "run_opened", ""]],
    "a marker answered 503 is not in the file",
  );
  const { event } = await registry.addMarker(run.run_id, { type: "sample in" });
  const markers = eventsOnDisk(files, run.run_id).filter(([, c]) => c === "annotation");
  assert.deepEqual(markers, [[event.sequence, "annotation", "sample in"]]);
  await registry.shutdown();
});

Deno.test("RunRegistry: an open whose runs.jsonl fsync failed leaves no run for the next start to close as abandoned", async () => {
  const files = new RunJournalFaultFiles();
  const a = registryOn(files);
  await a.start();
  files.journalSyncFails = true;
  await assert.rejects(a.open({ experiment_label: "ghost" }), /No space left/);
  files.journalSyncFails = false;
  assert.deepEqual((await a.list()).runs, [], "the failed open is no run");
  assert.deepEqual(await files.listNames("/data/runs"), [], "nor an orphaned event file");
  await a.shutdown();

  const b = registryOn(files);
  await b.start();
  assert.deepEqual(b.startupReport().abandonedRunIds, [], "no ghost run abandoned at start");
  assert.deepEqual((await b.list()).runs.map((r) => r.experiment_label), []);
  await b.shutdown();
});

Deno.test("RunRegistry: bus events whose write failed do not count toward runs.max_run_bytes (markers are not refused for bytes the file never held)", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files, { maxRunBytes: 4096 });
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const { run } = await registry.open({});
  files.full = true;
  for (let i = 0; i < 40; i++) {
    bus.publish({
      kind: "mode_change",
      previous_mode: "IDLE",
      new_mode: "MANUAL",
      timestamp_ms: i,
    });
    await registry.listEvents(run.run_id, {}); // waits for its write
  }
  files.full = false;
  // Before: 16 -- past 4096 bytes of lines never written, the rest counted as over the bound.
  assert.equal(registry.info().dropped_bus_events, 40);
  const size = files.text(`/data/runs/${run.run_id.slice(-26)}.jsonl`).length;
  assert.ok(size < 512, `the file holds run_opened only (${size} bytes)`);
  // Before: 409 "reached runs.max_run_bytes" -- the 40 lost events were counted as written.
  await registry.addMarker(run.run_id, { type: "after the full disk" });
  await registry.shutdown();
});
