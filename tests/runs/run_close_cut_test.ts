/**
 * The cut a close makes: an event recorded once the close has begun (its run_closed queued)
 * belongs to no run, whatever its time -- nothing follows a run_closed, and the next run has not
 * started. It is not counted as dropped (no run was open to take it), as any event between runs.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

Deno.test("a bus event recorded while a successful close writes its run_closed belongs to no run: not after run_closed, not in the next run, not counted as dropped", async () => {
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
  // Dated before the close's time, recorded after its run_closed was queued.
  bus.publish({ kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 1 });
  files.gate = null;
  release();
  await closing;
  assert.deepEqual(eventsOnDisk(files, run.run_id).map((e) => e[1]), ["run_opened", "run_closed"]);
  const next = await registry.open({});
  assert.deepEqual(eventsOnDisk(files, next.run.run_id).map((e) => e[1]), ["run_opened"]);
  assert.equal(registry.info().dropped_bus_events, 0);
  await registry.shutdown();
});

/** Fails the next `failNext` appends to event files once the gate (a write under way) opens. */
class FailAfterGate extends RunJournalFaultFiles {
  failNext = 0;
  override async openAppend(path: string) {
    const h = await super.openAppend(path);
    return {
      ...h,
      append: async (text: string) => {
        if (this.gate) {
          this.held++;
          await this.gate.finally(() => this.held--);
        }
        if (!path.endsWith("/runs.jsonl") && this.failNext > 0) {
          this.failNext--;
          throw new Deno.errors.WriteZero("no space left on device");
        }
        await h.append(text);
      },
    };
  }
}

Deno.test("an event of a run whose write fails after the run's close began is counted in its run_closed's events_not_recorded", async () => {
  const files = new FailAfterGate();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const { run } = await registry.open({});
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  // Recorded while the run is open: its write is under way when the close begins.
  bus.publish({ kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 1 });
  await waitFor("the event's write under way", () => files.held > 0);
  const closing = registry.close(run.run_id, { close_reason: "completed" });
  files.failNext = 1; // the event's write fails, the run_closed's (the next write) does not
  files.gate = null;
  release();
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
