/**
 * What an operator reading a run's timeline gets: events in the order they were recorded
 * (`sequence`, which the pages' cursor follows), each with the time it happened
 * (`occurred_at_epoch_ms`), which may be earlier than an event recorded before it.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

const T = 1_700_000_000_000;

Deno.test("a device loss dated from its first failed read is answered in recording order (sequence), its occurred time earlier than the event before it", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const { run } = await registry.open({});
  bus.publish({ kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: T });
  // The loss is known 3 s after the first read that failed, and dated from that read.
  registry.recordIncident({
    incident_id: "inc-1",
    trigger: "device_loss",
    cause: "sim0/dev unreachable",
    at_epoch_ms: T - 3_000,
  });
  const { events } = await registry.listEvents(run.run_id, {});
  assert.deepEqual(
    events.map((e) => [e.sequence, e.category, e.occurred_at_epoch_ms]),
    [[1, "run_opened", T], [2, "mode_change", T], [3, "incident", T - 3_000]],
  );
  // The page after sequence 2 (a cursor) starts with it: nothing is missed by paging.
  const next = await registry.listEvents(run.run_id, { after_sequence: 2 });
  assert.deepEqual(next.events.map((e) => e.category), ["incident"]);
  await registry.shutdown();
});
