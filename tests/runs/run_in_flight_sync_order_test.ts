/**
 * The `in_flight` record a failed close saves to runs.jsonl names calls whose `call` events (of
 * outcome `in_flight`) are lines of the run's own event file. A start after a crash skips those
 * calls (they have their ending), so the record must never reach the disk before the lines it
 * names: the run's event file is fsync'd first, then the record is written and fsync'd. Else a
 * power loss in between (not a process crash: the OS has the lines) leaves a listed call with no
 * ending at all. The files here record what each fsync made durable.
 */
import assert from "node:assert/strict";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

/** Fault files that keep, per file, the text its last fsync made durable (a power loss keeps). */
class DurableFiles extends RunJournalFaultFiles {
  readonly durable = new Map<string, string>();
  /** What each fsync made durable, in order: [path, text]. */
  readonly syncs: [string, string][] = [];

  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    return {
      ...h,
      sync: async () => {
        await h.sync();
        const text = this.text(path);
        this.durable.set(path, text);
        this.syncs.push([path, text]);
      },
    };
  }
}

Deno.test("RunRegistry: a failed close fsyncs the run's event file before the in_flight record that names its calls", async () => {
  const files = new DurableFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const registry = registryOn(files, { clock });
  await registry.start();
  try {
    const { run } = await registry.open({});
    const eventFile = `/data/runs/${run.run_id.slice(-26)}.jsonl`;
    registry.recordCall({
      first_time_epoch_ms: clock.nowMs(),
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      outcome: "in_flight",
      intent: "w-7",
    });
    // Written, not fsync'd yet (that comes within BUS_EVENT_SYNC_DELAY_MS; the clock stands).
    await waitFor(
      "the in_flight event written",
      () => eventsOnDisk(files, run.run_id).length === 2,
    );
    files.eventAppendsToFail = 1; // the run_closed
    const err = await registry.close(run.run_id, {}).then(() => null, (e) => e);
    assert.equal(err?.code, "UNAVAILABLE", "the close failed (503), the run stays open");
    const recordSync = files.syncs.findIndex(([path, text]) =>
      path === "/data/runs.jsonl" && text.includes('"op":"in_flight"')
    );
    assert.ok(recordSync >= 0, "the in_flight record was fsync'd");
    const eventsThen = files.syncs.slice(0, recordSync).filter(([p]) => p === eventFile).at(-1);
    assert.ok(
      eventsThen?.[1].includes('"intent":"w-7"'),
      "the in_flight event of w-7 was durable in the run's event file before the runs.jsonl " +
        `record naming it was fsync'd (durable then: ${
          eventsThen?.[1].split("\n").filter(Boolean).length ?? 0
        } event line(s))`,
    );
  } finally {
    await registry.shutdown();
  }
});
