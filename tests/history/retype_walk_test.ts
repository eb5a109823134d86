/**
 * A signal retyped by a rediscovery starts a new series (retype_test.ts): its old type's samples
 * are dropped. A walk over its changes (the Sparkplug replay after an outage) must say so: it holds
 * the signal's changes only from the poll after the retype, not since the device's first poll.
 */
import assert from "node:assert/strict";
import { probeFile, startRig, T0 } from "./_history_helpers.ts";
import { type Inventory, T } from "../helpers/programmable_provider.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";

const inventory = (tempType: number): Inventory => ({
  devices: {
    probe: {
      signals: [{ id: "temp", type: tempType }, { id: "count", type: T.INT64 }],
      values: [],
    },
  },
});

Deno.test("a walk over a retyped signal's changes reaches back only to the retype, not to the dropped samples", async () => {
  const dataDir = tempDir("history-retype-walk-");
  const file = await probeFile(dataDir, inventory(T.DOUBLE));
  const rig = await startRig({ dataDir, inventoryFile: file, restart: true });
  try {
    const count = (n: number) => ({ id: "count", type: T.INT64, int64: String(n), quality: 1 });
    const history = rig.rt.history!;
    await rig.poll(T0 + 1_000, [
      { id: "temp", type: T.DOUBLE, double: 20.5, quality: 1 },
      count(1),
    ]);
    const fromSeq = history.nextPollSeq("p0", "probe") - 1;
    await rig.poll(T0 + 2_000, [
      { id: "temp", type: T.DOUBLE, double: 21.5, quality: 1 },
      count(2),
    ]);
    // The first poll of the new type is this one or later (the rediscovery polls too).
    const afterOld = history.nextPollSeq("p0", "probe");
    await probeFile(dataDir, inventory(T.STRING));
    const host = rig.rt.registry.host("p0")!;
    const pid = host.session!.pid;
    await host.request("call", { device_id: "probe", function_id: 3, args: {} });
    await waitFor("rediscovered", () => host.available && host.session!.pid !== pid);

    await rig.poll(T0 + 3_000, [
      { id: "temp", type: T.STRING, string: "hot", quality: 1 },
      count(3),
    ]);
    const untilSeq = history.nextPollSeq("p0", "probe");
    const walk = history.changes("p0", "probe", ["temp"], fromSeq, untilSeq)!;
    assert.ok(
      walk.reachFromSeq >= afterOld,
      `the walk claims temp's changes from poll ${walk.reachFromSeq} (asked from ${fromSeq}), ` +
        "though the old type's samples were dropped at the retype",
    );
    const seen: unknown[] = [];
    while (walk.next((_id, s) => seen.push(s.timeMs)) !== null) { /* walk */ }
    assert.equal(seen.length, 1, "only the new type's change is walked");
    // A signal whose type held still reaches back to the device's first poll.
    const counts = history.changes("p0", "probe", ["count"], fromSeq, untilSeq)!;
    assert.equal(counts.reachFromSeq, -Infinity);
  } finally {
    await rig.rt.stop();
  }
});
