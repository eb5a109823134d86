/**
 * history.memory_max_bytes holds for a device of many signals, through the real runtime and the
 * programmable provider: the rings' first entries are counted only when they fit (ring.ts), so
 * the memory ring never holds more than the bound, the signals it has no room for are still in
 * the disk tier's buckets, one WARN names the provider, and GET /metrics counts the rings left
 * without room. Before, each new signal's ring added its first 16 entries (208 bytes) whatever the
 * budget: 400 signals passed the 64 KiB minimum from their starting sizes alone.
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { type Inventory, type Sample, T } from "../helpers/programmable_provider.ts";
import { probeFile, startRig, T0 } from "./_history_helpers.ts";
import { tempDir } from "../helpers/kernel.ts";

/** Signals of the probe: 400 first rings of 208 bytes are 83,200 bytes, past 65,536. */
const SIGNALS = 400;
const MAX = 65_536;

const MANY: Inventory = {
  devices: {
    probe: {
      signals: Array.from({ length: SIGNALS }, (_, k) => ({ id: `s${k}`, type: T.DOUBLE })),
      values: [],
    },
  },
};

function manyValues(x: number): Sample[] {
  return Array.from({ length: SIGNALS }, (_, k) => ({
    id: `s${k}`,
    type: T.DOUBLE,
    double: x * 1000 + k,
    quality: 1,
  }));
}

Deno.test("History counts the rings' first entries only within history.memory_max_bytes: the signals it has no room for go to the disk tier, a WARN and a metric say so", async () => {
  const dataDir = tempDir("history-first-room-");
  const { log, lines } = capturingLogger({ level: "info" });
  const rig = await startRig({
    dataDir,
    inventoryFile: await probeFile(dataDir, MANY),
    history: { memoryMaxBytes: MAX, stepMs: 1000 },
    host: { log },
  });
  try {
    for (let i = 1; i <= 4; i++) {
      await rig.poll(T0 + i * 1000, manyValues(i));
      const status = rig.rt.history!.status();
      assert.ok(
        status.memoryBytes <= MAX,
        `poll ${i}: the ring counts ${status.memoryBytes} bytes, memory_max_bytes ${MAX}`,
      );
    }
    const status = rig.rt.history!.status();
    assert.ok(status.memoryRoomlessRings > 0, "some signal rings are left without room");
    const warns = lines.filter((l) => l.includes("has no room for the ring"));
    assert.equal(warns.length, 1, warns.join("\n"));
    assert.match(warns[0]!, /^WARN .*memory_max_bytes \(65536\) .*"p0\/probe\/s\d+"/);
    const metrics = await (await rig.get("/metrics")).text();
    assert.match(
      metrics,
      new RegExp(`^runtime_history_memory_roomless_rings ${status.memoryRoomlessRings}$`, "m"),
    );
    // The last signal has no ring room: its samples are in the disk tier's buckets all the same.
    const last = `s${SIGNALS - 1}`;
    await rig.rt.history!.flushDisk();
    const answer = await rig.json(
      `/v0/history/p0/probe?signal_id=${last}&since_ms=${T0}&until_ms=${T0 + 4000}`,
    );
    assert.equal(answer.status.code, "OK", JSON.stringify(answer.status));
    const points = answer.signals[0].points as { t_ms: number; last: number }[];
    assert.deepEqual(
      points.map((p) => [p.t_ms, p.last]),
      [1, 2, 3].map((i) => [T0 + i * 1000, i * 1000 + SIGNALS - 1]),
      "the closed buckets of a signal the ring keeps nothing of",
    );
    // A signal with room answers from the ring at full rate.
    const first = await rig.json(`/v0/history/p0/probe?signal_id=s0&since_ms=${T0 + 4000}`);
    assert.deepEqual(first.signals[0].points.map((p: { last: number }) => p.last), [4000]);
  } finally {
    await rig.rt.stop();
  }
});
