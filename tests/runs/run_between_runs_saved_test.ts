/**
 * `safety_events_between_runs` outlives the process: the count of safety events no run recorded
 * is saved to runs.jsonl (a `between_runs` record), so a restart -- a clean one or after a crash
 * -- gives it to the first run opened after it; a run's open takes it, so it is given once.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import type { RunRegistry } from "../../src/runs/mod.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { waitFor } from "../helpers/kernel.ts";
import { registryOn } from "./_run_fault_rig.ts";

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
