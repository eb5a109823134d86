/**
 * A signal whose declared type changes at a rediscovery (the provider restarted with a new
 * description) starts a new history series: an answer never mixes the old type's samples with the
 * new one's, neither at full rate nor in buckets, from the ring or from the disk tier.
 */
import assert from "node:assert/strict";
import { probeFile, startRig, T0 } from "./_history_helpers.ts";
import { type Inventory, T, TestClock } from "../helpers/programmable_provider.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

const inventory = (tempType: number): Inventory => ({
  devices: {
    probe: {
      signals: [{ id: "temp", type: tempType }, { id: "count", type: T.INT64 }],
      values: [],
    },
  },
});

Deno.test("a signal retyped by a rediscovery starts a new history series: no answer mixes its types", async () => {
  const dataDir = tempDir("history-retype-");
  const file = await probeFile(dataDir, inventory(T.DOUBLE));
  let stringSamples = 0;
  const rig = await startRig({
    dataDir,
    inventoryFile: file,
    restart: true,
    history: { stepMs: 10_000 },
  });
  try {
    const count = (n: number) => ({ id: "count", type: T.INT64, int64: String(n), quality: 1 });
    await rig.poll(T0 + 1_000, [
      { id: "temp", type: T.DOUBLE, double: 20.5, quality: 1 },
      count(1),
    ]);
    await rig.poll(T0 + 2_000, [
      { id: "temp", type: T.DOUBLE, double: 21.5, quality: 1 },
      count(2),
    ]);
    // temp is a string now: the provider restarts (function 3 exits) and describes it so.
    await probeFile(dataDir, inventory(T.STRING));
    const host = rig.rt.registry.host("p0")!;
    const pid = host.session!.pid;
    await host.request("call", { device_id: "probe", function_id: 3, args: {} });
    await waitFor("rediscovered", () => host.available && host.session!.pid !== pid);
    assert.equal(
      rig.rt.registry.host("p0")!.devices[0]!.signals.find((s) => s.signalId === "temp")!
        .valueType,
      "string",
    );
    await rig.poll(T0 + 3_000, [
      { id: "temp", type: T.STRING, string: "hot", quality: 1 },
      count(3),
    ]);
    await rig.poll(T0 + 4_000, [
      { id: "temp", type: T.STRING, string: "hotter", quality: 1 },
      count(4),
    ]);

    const full = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0}`);
    assert.equal(full.signals[0].value_type, "string");
    const lasts = full.signals[0].points.map((p: { last: unknown }) => p.last);
    assert.deepEqual(
      lasts.filter((v: unknown) => typeof v !== "string"),
      [],
      `full rate: only the new type's samples (${JSON.stringify(lasts)})`,
    );
    assert.deepEqual([...new Set(lasts)], ["hot", "hotter"]);
    stringSamples = lasts.length;
    const buckets = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&step_ms=10000`,
    );
    assert.deepEqual(
      buckets.signals[0].points.map((p: { last: unknown; min: unknown }) => [p.last, p.min]),
      [["hotter", null]],
      "a bucket: only the new type's samples",
    );
    // A signal whose type held keeps its whole series.
    const counts = await rig.json(`/v0/history/p0/probe?signal_id=count&since_ms=${T0}`);
    assert.deepEqual(
      [...new Set(counts.signals[0].points.map((p: { last: unknown }) => p.last))],
      [1, 2, 3, 4],
    );
    // Into the next bucket: the T0 bucket's rows (the double one, then the string one) go to disk.
    await rig.poll(T0 + 25_000, [
      { id: "temp", type: T.STRING, string: "x", quality: 1 },
      count(5),
    ]);
    await rig.rt.history!.flushDisk();
  } finally {
    await rig.rt.stop();
  }
  // The runtime starts again: its ring is empty, the disk tier answers the T0 bucket alone.
  const clock = new TestClock();
  clock.wallMs = T0 + 60_000;
  const again = await startRig({
    dataDir,
    inventoryFile: file,
    clock,
    history: { stepMs: 10_000 },
  });
  try {
    const disk = await again.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 9_999}`,
    );
    assert.equal(disk.source, "disk");
    assert.deepEqual(
      disk.signals[0].points.map((p: { last: unknown; count: number; min: unknown }) => [
        p.last,
        p.count,
        p.min,
      ]),
      [["hotter", stringSamples, null]],
      "the disk tier: only the new type's rows",
    );
  } finally {
    await again.rt.stop();
  }
});

Deno.test("a retype gives the old series' bytes back to history.memory_max_bytes before the new ring is made: no 'no room' WARN, the new series kept", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  // Room for the device's first poll entries (128 bytes) and one signal ring's (208) only.
  const { clock, history, declaredTypes, pollSignals, feed } = handFedHistory(
    { memoryMaxBytes: 16 * 8 + 16 * 13, diskMaxBytes: 0 },
    undefined,
    log,
  );
  await history.start();
  try {
    declaredTypes.set("p/d/x", "double");
    const before = ["x"];
    for (let i = 0; i < 3; i++) {
      pollSignals(before, i);
      clock.advance(1000);
    }
    const bytes = history.status().memoryBytes;
    // A rediscovery (a new list) declares x an int64 now: a new series.
    declaredTypes.set("p/d/x", "int64");
    const after = ["x"];
    for (let i = 3; i < 6; i++) {
      feed({
        providerId: "p",
        deviceId: "d",
        pollable: after,
        signals: new Map([["x", {
          value: { type: "int64", int64: i },
          quality: "OK",
          timestampMs: clock.wall,
          receivedMono: clock.mono,
        }]]),
        lastPollMs: clock.wall,
        lastPollMono: clock.mono,
        available: true,
      });
      clock.advance(1000);
    }
    const status = history.status();
    assert.deepEqual(lines.filter((l) => l.includes("has no room")), []);
    assert.equal(status.memoryRoomlessRings, 0, "the new ring has its first entries");
    assert.equal(status.memoryBytes, bytes, "the old ring's bytes given back, the new one's taken");
    const answer = await history.query({ providerId: "p", deviceId: "d", signalIds: ["x"] });
    assert.deepEqual(answer.signals[0]!.points.map((p) => p.last), [3, 4, 5]);
  } finally {
    await history.stop();
  }
});
