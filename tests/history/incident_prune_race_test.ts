/**
 * Two records written close together each prune to incident_max_bytes: a prune waiting for a
 * removal must not go on with a byte total from before the other's removal, which removed one
 * record too many (the newest but one, though the two newest fit).
 */
import assert from "node:assert/strict";
import type { HistoryConfig } from "../../src/config/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { HeldRemovals, incidentRig } from "./_incident_rig.ts";

function rig(config: Partial<HistoryConfig>) {
  const files = new HeldRemovals();
  const base = incidentRig({ config, files });
  const { clock, incidents, poll, loss } = base;
  /** `polls` polls of `device` over the last 500 ms, then its loss. */
  const lose = (device: string, polls: number) => {
    for (let i = 0; i < polls; i++) {
      poll("p0", device, i);
      clock.advance(500 / polls);
    }
    loss(device);
  };
  const kept = () => incidents.list().map((h) => h.devices[0]).reverse();
  return { ...base, files, lose, kept };
}

Deno.test("Two incident records pruned at once to incident_max_bytes remove only the records beyond it", async () => {
  // Measure a small record (one sample) and a big one (200 samples).
  const probe = rig({});
  let [small, big] = [0, 0];
  await probe.session(async () => {
    probe.lose("s0", 1);
    probe.clock.advance(5_000);
    await probe.incidents.settled();
    probe.lose("bg", 200);
    probe.clock.advance(5_000);
    await probe.incidents.settled();
    [small, big] = probe.incidents.list().map((h) => h.bytes).reverse() as [number, number];
  });
  assert.ok(big > 3 * small, `${big} ${small}`);

  // Room for the big record and one and a half small ones.
  const max = big + small + small / 2;
  const { files, clock, incidents, lose, kept, session } = rig({ incidentMaxBytes: max });
  await session(async () => {
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
  });
});
