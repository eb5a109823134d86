/**
 * A run's events that cannot be written (a full disk) are said in one ERROR per failing spell:
 * the first spell's line is not the last word for the life of the process. A disk that fills
 * again days later must be said again, with its own reason.
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

Deno.test("RunRegistry says run events being dropped once per failing spell, again in a later spell", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "error" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const dropped = () => lines.filter((l) => l.includes("bus events are being dropped"));
  try {
    const { run } = await registry.open({});
    files.full = true;
    for (let i = 0; i < 3; i++) {
      registry.recordCall(call(i));
      await settle();
    }
    assert.equal(registry.info().dropped_bus_events, 3);
    assert.equal(dropped().length, 1, lines.join("\n"));

    // The disk has room again: events are written.
    files.full = false;
    registry.recordCall(call(10));
    await settle();
    assert.equal(registry.info().dropped_bus_events, 3);

    // It fills again: a new spell, said again.
    files.full = true;
    registry.recordCall(call(20));
    registry.recordCall(call(21));
    await settle();
    assert.equal(registry.info().dropped_bus_events, 5);
    assert.equal(dropped().length, 2, lines.join("\n"));
    files.full = false;
    await registry.close(run.run_id, {});
  } finally {
    await registry.shutdown();
  }
});
