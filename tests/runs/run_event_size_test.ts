/**
 * A bus event whose text is longer than a stored line may be (an alarm message from the
 * configuration, a provider's error string, an e-stop reason) is recorded with its long strings
 * cut, and says so: the reader never skips it as a corrupt line.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { MAX_RECORD_BYTES } from "../../src/runs/mod.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

Deno.test("a bus event whose text passes the reader's line limit is read back, its long strings cut and marked truncated", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const bus = new EventBus();
  registry.attach(bus);
  const { run } = await registry.open({});
  const huge = "E".repeat(300 * 1024); // past the reader's 256 KiB line limit
  bus.publish({ kind: "automation_fault", locus: "tick", error: huge, timestamp_ms: 5 });
  bus.publish({ kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 6 });
  const { events } = await registry.listEvents(run.run_id, {});
  assert.deepEqual(
    events.map((e) => e.category),
    ["run_opened", "automation_fault", "mode_change"],
    "the long event is read back",
  );
  const fault = events[1]!;
  assert.equal(fault.payload.truncated, true);
  const message = fault.payload.message as string;
  assert.ok(message.startsWith("EEEE") && message.length < huge.length, "its message is cut");
  assert.ok(JSON.stringify(fault).length <= MAX_RECORD_BYTES, "it fits a record");
  assert.equal(events[2]!.payload.truncated, undefined, "a short event is not marked");
  await registry.shutdown();
});

Deno.test("a bus event too large even with its strings cut keeps its category and type, its payload replaced by the truncation note", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  const { run } = await registry.open({});
  // Thousands of members: no cut of strings makes it fit.
  const args: Record<string, number> = {};
  for (let i = 0; i < 20_000; i++) args[`argument_${i}`] = i;
  registry.recordCall({
    first_time_epoch_ms: 7,
    device_handle: "sim0/dev",
    function: "set",
    args,
  });
  const { events } = await registry.listEvents(run.run_id, {});
  assert.deepEqual(events.map((e) => [e.category, e.type]), [["run_opened", ""], [
    "call",
    "sim0/dev set",
  ]]);
  assert.equal(events[1]!.payload.truncated, true);
  assert.equal(typeof events[1]!.payload.original_bytes, "number");
  await registry.shutdown();
});
