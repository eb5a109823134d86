/**
 * Two records written close together each prune to incident_max_bytes: a prune waiting for a
 * removal must not go on with a byte total from before the other's removal, which removed one
 * record too many (the newest but one, though the two newest fit).
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { IncidentRecorder } from "../../src/history/mod.ts";
import type { HistoryConfig } from "../../src/config/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { testLogger } from "../helpers/kernel.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** MemoryFiles whose removals wait while `held` is set. */
class HeldRemovals extends MemoryFiles {
  held: Promise<void> | null = null;
  waiting = 0;
  override async remove(path: string): Promise<void> {
    if (this.held !== null) {
      this.waiting++;
      await this.held;
    }
    return super.remove(path);
  }
}

function rig(o: Partial<HistoryConfig>) {
  const files = new HeldRemovals();
  const { clock, history, poll } = handFedHistory({ diskMaxBytes: 0 }, files);
  const config = { ...testConfig().history, incidentBeforeS: 1, incidentAfterS: 1, ...o };
  const bus = new EventBus();
  const incidents = new IncidentRecorder({
    config,
    history,
    files,
    dir: "/data/history/incidents",
    clock,
    log: testLogger(),
  });
  /** `polls` polls of `device` over the last 500 ms, then its loss. */
  const lose = (device: string, polls: number) => {
    for (let i = 0; i < polls; i++) {
      poll("p0", device, i);
      clock.advance(500 / polls);
    }
    bus.publish({
      kind: "device_availability",
      provider_id: "p0",
      device_id: device,
      available: false,
      timestamp_ms: clock.nowMs(),
    });
  };
  const kept = () => incidents.list().map((h) => h.devices[0]).reverse();
  return { files, clock, history, bus, incidents, lose, kept };
}

Deno.test("Two incident records pruned at once to incident_max_bytes remove only the records beyond it", async () => {
  // Measure a small record (one sample) and a big one (200 samples).
  const probe = rig({});
  await probe.history.start();
  await probe.incidents.start(probe.bus);
  probe.lose("s0", 1);
  probe.clock.advance(5_000);
  await probe.incidents.settled();
  probe.lose("bg", 200);
  probe.clock.advance(5_000);
  await probe.incidents.settled();
  const [small, big] = probe.incidents.list().map((h) => h.bytes).reverse() as [number, number];
  await probe.incidents.stop();
  await probe.history.stop();
  assert.ok(big > 3 * small, `${big} ${small}`);

  // Room for the big record and one and a half small ones.
  const max = big + small + small / 2;
  const { files, clock, history, bus, incidents, lose, kept } = rig({ incidentMaxBytes: max });
  await history.start();
  await incidents.start(bus);
  try {
    for (const d of ["s1", "s2", "s3"]) {
      lose(d, 1);
      clock.advance(5_000);
      await incidents.settled();
    }
    assert.deepEqual(kept(), ["p0/s1", "p0/s2", "p0/s3"]);
    // The big record is written and its prune waits on its first removal (s1) when the next
    // small record's prune begins (and waits on its own, s2).
    let release = () => {};
    files.held = new Promise((r) => (release = r));
    lose("bg", 200);
    clock.advance(3_000);
    lose("s4", 1);
    clock.advance(3_000);
    for (let i = 0; i < 1000 && files.waiting < 2; i++) await flushMicrotasks();
    assert.equal(files.waiting, 2, "both prunes wait on a removal");
    files.held = null;
    release();
    await incidents.settled();
    // s1, s2 and s3 must go (bg + s4 fit under the bound); bg must stay.
    assert.deepEqual(kept(), ["p0/bg", "p0/s4"]);
    assert.ok(incidents.status().bytes <= max);
  } finally {
    await incidents.stop();
    await history.stop();
  }
});
