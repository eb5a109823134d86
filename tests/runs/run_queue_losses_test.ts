/**
 * Events of a run lost for the disk's sake -- its writer's queue full (MAX_PENDING_BUS_EVENTS
 * waiting), the queue of its open's window full, a failed write -- are on the run's own record
 * (`events_not_recorded` of its run_closed), not only in the registry-wide `dropped_bus_events`;
 * and a safety event (e-stop, FAULT) still finds room past those queues' bound
 * (RUN_SAFETY_RESERVE_EVENTS).
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import {
  MAX_PENDING_BUS_EVENTS,
  RUN_SAFETY_RESERVE_EVENTS,
  type RunEvent,
  type RunRegistry,
} from "../../src/runs/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

const call = (i: number) => ({
  first_time_epoch_ms: 1_700_000_000_000 + i,
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  outcome: "accepted",
});

const CALLS = MAX_PENDING_BUS_EVENTS + 500;

function estop(bus: EventBus): void {
  bus.publish({
    kind: "estop_change",
    latched: true,
    reason: "leak",
    cause: "api",
    timestamp_ms: 1,
  });
  bus.publish({ kind: "mode_change", previous_mode: "AUTO", new_mode: "FAULT", timestamp_ms: 2 });
}

async function allEvents(registry: RunRegistry, runId: string): Promise<RunEvent[]> {
  return (await registry.listEvents(runId, { limit: 1000 })).events.concat(
    (await registry.listEvents(runId, { limit: 1000, offset: 1000 })).events,
  );
}

function assertRecord(events: RunEvent[], dropped: number): void {
  const calls = events.filter((e) => e.category === "call").length;
  assert.deepEqual(
    events.filter((e) => e.category === "estop" || e.category === "mode_change").map((e) =>
      `${e.category} ${e.type}`
    ),
    ["estop trigger", "mode_change "],
    "the e-stop and the FAULT entry are recorded past the full queue",
  );
  assert.ok(dropped > 0, "the flood dropped events");
  assert.equal(calls + dropped, CALLS);
  assert.deepEqual(
    events.at(-1)!.payload,
    { events_not_recorded: dropped },
    "the run's record counts what its queue dropped",
  );
}

Deno.test("a full queue of a run's writer: dropped events counted by the run, its e-stop still recorded", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  try {
    const { run } = await registry.open({});
    let release!: () => void;
    files.gate = new Promise((r) => release = r);
    registry.recordCall(call(0));
    await waitFor("the first call's write under way", () => files.held > 0);
    for (let i = 1; i < CALLS; i++) registry.recordCall(call(i));
    estop(bus);
    files.gate = null;
    release();
    await registry.close(run.run_id, {});
    assertRecord(await allEvents(registry, run.run_id), registry.info().dropped_bus_events);
  } finally {
    await registry.shutdown();
  }
});

Deno.test("a full queue while a run's open is written: dropped events counted by the run, its e-stop still recorded", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  try {
    let release!: () => void;
    files.gate = new Promise((r) => release = r);
    const opening = registry.open({});
    await waitFor("the open's write under way", () => files.held > 0);
    for (let i = 0; i < CALLS; i++) registry.recordCall(call(i));
    estop(bus);
    files.gate = null;
    release();
    const { run } = await opening;
    await registry.close(run.run_id, {});
    assertRecord(await allEvents(registry, run.run_id), registry.info().dropped_bus_events);
  } finally {
    await registry.shutdown();
  }
});

Deno.test("a run's event whose write failed is counted by the run", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  try {
    const { run } = await registry.open({});
    files.full = true;
    bus.publish({
      kind: "estop_change",
      latched: true,
      reason: "x",
      cause: "api",
      timestamp_ms: 1,
    });
    await waitFor("the failed write counted", () => registry.info().dropped_bus_events === 1);
    files.full = false;
    await registry.close(run.run_id, {});
    const events = await allEvents(registry, run.run_id);
    assert.deepEqual(events.at(-1)!.payload, { events_not_recorded: 1 });
  } finally {
    await registry.shutdown();
  }
});

Deno.test("safety events the queue of a failed open's window dropped are counted by the next run's run_opened", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  try {
    let release!: () => void;
    files.gate = new Promise((r) => release = r);
    const opening = registry.open({});
    await waitFor("the open's write under way", () => files.held > 0);
    for (let i = 0; i < MAX_PENDING_BUS_EVENTS; i++) registry.recordCall(call(i));
    // The reserve's places, and three e-stops more that find none.
    const safety = RUN_SAFETY_RESERVE_EVENTS + 3;
    for (let i = 0; i < safety; i++) {
      bus.publish({
        kind: "estop_change",
        latched: true,
        reason: "leak",
        cause: "api",
        timestamp_ms: 10 + i,
      });
    }
    files.journalFails = true; // its record in runs.jsonl fails: no run
    files.gate = null;
    release();
    await assert.rejects(opening);
    files.journalFails = false;
    const { run } = await registry.open({});
    assert.deepEqual(
      (await registry.listEvents(run.run_id)).events[0]!.payload,
      {
        safety_events_between_runs: {
          count: safety,
          estop_triggers: safety,
          first_at_epoch_ms: 10,
          last_at_epoch_ms: 10 + safety - 1,
        },
      },
      "every e-stop no run recorded is counted, those the full window queue dropped too",
    );
  } finally {
    await registry.shutdown();
  }
});
