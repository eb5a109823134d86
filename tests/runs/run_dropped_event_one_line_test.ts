/**
 * The first bus event dropped on a failed write of the run's event file is one event: it gives
 * one ERROR line (one event, one line), not the journal writer's and the registry's both.
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

const call = (i: number) => ({
  first_time_epoch_ms: 1_700_000_000_000 + i,
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  outcome: "accepted",
});

/** Lets the registry's writes (promise callbacks on in-memory files) settle. */
async function settle(): Promise<void> {
  for (let i = 0; i < 20; i++) await Promise.resolve();
  await new Promise((r) => setTimeout(r, 0));
}

Deno.test("RunRegistry logs one ERROR line for the first bus event dropped on a failed write", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const errors = () => lines.filter((l) => l.startsWith("ERROR"));
  try {
    const { run } = await registry.open({});
    assert.deepEqual(errors(), []);
    // The event file's writes fail (runs.jsonl, where the count is saved, is written).
    files.eventAppendsToFail = 2;
    registry.recordCall(call(0));
    await settle();
    assert.equal(registry.info().dropped_bus_events, 1);
    assert.equal(errors().length, 1, errors().join("\n"));
    // The one line names what was lost and why (the file and the disk's error).
    assert.match(errors()[0]!, /bus events are being dropped/);
    assert.match(errors()[0]!, /no space left|ENOSPC|space/i);
    // More of the same spell: no more lines.
    registry.recordCall(call(1));
    await settle();
    assert.equal(registry.info().dropped_bus_events, 2);
    assert.equal(errors().length, 1, errors().join("\n"));
    await registry.close(run.run_id, {});
  } finally {
    await registry.shutdown();
  }
});
