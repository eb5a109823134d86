/**
 * What happens while a run's open is being made durable (its run_opened and its record fsync'd):
 * the run has started (started_at is taken before the writes), so a reload that changes the
 * polling interval or swaps the tree, and the bus events of that window, are events of the run.
 */
import assert from "node:assert/strict";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { type AutomationVersion, RunRegistry } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";

/** SwitchableFiles whose fsyncs wait for `syncGate` while it is set (a slow disk). */
class SlowSyncFiles extends SwitchableFiles {
  syncGate: Promise<void> | null = null;
  syncsWaiting = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await super.openAppend(path);
    return {
      ...handle,
      sync: async () => {
        if (this.syncGate !== null) {
          this.syncsWaiting++;
          await this.syncGate;
          this.syncsWaiting--;
        }
        await handle.sync();
      },
    };
  }
}

const V1: AutomationVersion = {
  engine_kind: "behavior_tree",
  id: "a",
  digest: "1",
  digest_scope: "x",
};
const V2: AutomationVersion = { ...V1, id: "b", digest: "2" };

Deno.test("RunRegistry records as events of the run what a reload and the bus did while its open was being fsync'd", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_open_window_" });
  const files = new SlowSyncFiles();
  const clock = new ManualClock();
  let version = V1;
  const registry = new RunRegistry({
    dataDir: dir,
    runtimeName: "t",
    pollingIntervalMs: 500,
    files,
    clock,
    logger: testLogger(),
    automationVersion: () => version,
  });
  const bus = new EventBus();
  try {
    await registry.start();
    registry.attach(bus);
    let release = () => {};
    files.syncGate = new Promise<void>((r) => (release = r));
    const opening = registry.open({});
    for (let i = 0; i < 1000 && files.syncsWaiting === 0; i++) {
      await new Promise((r) => setTimeout(r, 1));
    }
    assert.equal(files.syncsWaiting, 1, "the open waits for its fsync");
    // A reload while the disk is slow: another interval, another tree; and a mode change.
    registry.setPollingIntervalMs(1000);
    version = V2;
    registry.recordAutomationChange(V1, V2);
    bus.publish({
      kind: "mode_change",
      previous_mode: "IDLE",
      new_mode: "MANUAL",
      timestamp_ms: clock.nowMs(),
    });
    files.syncGate = null;
    release();
    const { run } = await opening;
    assert.equal(run.polling_interval_ms, 500, "the run records the interval it opened with");
    assert.deepEqual(run.automation_version, V1);
    await registry.close(run.run_id, {});
    const events = (await registry.listEvents(run.run_id, {})).events;
    assert.deepEqual(
      events.map((e) => [e.sequence, e.category]),
      [
        [1, "run_opened"],
        [2, "polling_change"],
        [3, "automation_change"],
        [4, "mode_change"],
        [5, "run_closed"],
      ],
      "what changed while the open was fsync'd is on the run's record",
    );
  } finally {
    await registry.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
