/**
 * A run whose close fails on a full disk stays open: the bus events that came while its
 * run_closed event was being written (and were left out for that reason) are lost with the
 * failed close, and must be counted as dropped like any other lost event.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { RunRegistry } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";

/** Faulty in-memory files whose appends wait while `gate` is set (a write under way). */
class HeldFiles extends FaultyMemoryFiles {
  gate: Promise<void> | null = null;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    return {
      ...h,
      append: async (text: string) => {
        if (this.gate) await this.gate;
        await h.append(text);
      },
    };
  }
}

Deno.test("a bus event that comes while a failing close is written is counted as dropped", async () => {
  const files = new HeldFiles();
  const registry = new RunRegistry({
    dataDir: "/data",
    runtimeName: "lab1",
    pollingIntervalMs: 500,
    files,
    clock: new ManualClock(0, 1_700_000_000_000),
    logger: testLogger(),
    automationVersion: () => null,
    telemetrySink: () => {},
    random: (b) => b.fill(1),
  });
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
  for (let i = 0; i < 20; i++) await Promise.resolve();
  bus.publish({ kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 1 });
  files.gate = null;
  release();
  assert.match((await closing) ?? "", /close run.*No space left on device/);
  assert.equal(registry.info().open_run_id, run.run_id, "the run stays open");
  // Not written, so counted (before: 0, a silent loss).
  assert.equal(registry.info().dropped_bus_events, 1);
  await registry.shutdown();
});
