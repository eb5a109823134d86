/**
 * A question without `signal_id` answers every signal of the range, also those only the disk tier
 * holds: a signal a rediscovery removed, every signal of a device the runtime no longer has (its
 * provider removed by a reload, or not in the config after a restart). A device neither the
 * runtime nor the range holds anything of is 404 (docs/history.md).
 */
import assert from "node:assert/strict";
import { HISTORY_SWEEP_EVERY_MS } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { startRuntime, tempDir, waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { type Inventory, type Sample, T, TestClock } from "../helpers/programmable_provider.ts";
import { probeFile, startRig, T0 } from "./_history_helpers.ts";

Deno.test("without signal_id, a signal a rediscovery removed is answered from the disk tier", async () => {
  const { clock, history, pollSignals: poll } = handFedHistory({
    stepMs: 1000,
    diskMaxBytes: 1 << 20,
  });
  await history.start();
  try {
    const t0 = clock.wall;
    for (let i = 0; i < 5; i++) {
      poll(["x", "y"], i);
      clock.advance(1000);
    }
    for (let i = 5; i < 8; i++) {
      poll(["x"], i); // a rediscovery: y is no longer declared
      clock.advance(1000);
    }
    await history.flushDisk();
    const answer = await history.query({
      providerId: "p",
      deviceId: "d",
      signalIds: [],
      sinceMs: t0,
      untilMs: clock.wall,
    });
    assert.deepEqual(answer.signals.map((s) => s.signal_id), ["x", "y"]);
    assert.deepEqual(answer.signals[1]!.points.map((p) => p.last), [0, 1, 2, 3, 4]);
    assert.deepEqual(answer.signals[0]!.points.map((p) => p.last), [0, 1, 2, 3, 4, 5, 6, 7]);
    // Within the ring's reach only, no disk is read: the ring's signals.
    const recent = await history.query({
      providerId: "p",
      deviceId: "d",
      signalIds: [],
      sinceMs: t0 + 6000,
      untilMs: clock.wall,
    });
    assert.deepEqual(recent.signals.map((s) => s.signal_id), ["x"]);
  } finally {
    await history.stop();
  }
});

Deno.test("without signal_id, a device whose ring was let go is answered from the disk tier", async () => {
  const { clock, history, known, poll } = handFedHistory({ memorySeconds: 20, stepMs: 10_000 });
  await history.start();
  try {
    const t0 = clock.wall;
    for (let i = 0; i < 30; i++) {
      poll("keep", "d", i);
      poll("gone", "d", i);
      clock.wall += 1000;
      clock.mono += 1000;
    }
    known.delete("gone/d"); // a reload removed its provider
    for (let i = 0; i < 20 + HISTORY_SWEEP_EVERY_MS / 1000 + 1; i++) {
      poll("keep", "d", 100 + i);
      clock.wall += 1000;
      clock.mono += 1000;
    }
    assert.equal(history.knows("gone", "d"), false, "its ring let go");
    await history.flushDisk();
    const answer = await history.query({
      providerId: "gone",
      deviceId: "d",
      signalIds: [],
      sinceMs: t0,
      untilMs: clock.wall,
    });
    assert.equal(answer.source, "disk");
    assert.deepEqual(answer.signals.map((s) => s.signal_id), ["x"]);
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => [(p.t_ms - t0) / 1000, p.min, p.max, p.count]),
      [[0, 0, 9, 10], [10, 10, 19, 10], [20, 20, 29, 10]],
    );
  } finally {
    await history.stop();
  }
});

Deno.test("GET /v0/history of a device no longer configured answers its disk rows; an unknown device is 404", async () => {
  const dataDir = tempDir("history-gone-");
  const first = await startRuntime(testConfig({ runtime: { dataDir } }));
  const t0 = Date.now();
  try {
    await waitFor("sim0's device in the ring", () => first.history!.knows("sim0", "tempctl0"));
  } finally {
    await first.stop(); // its open buckets are written at stop
  }
  // The next start's config no longer has sim0.
  const fx = await startHttpFixture({
    config: { runtime: { dataDir }, providers: [simProvider("other")] },
  });
  try {
    const res = await fx.request("GET", `/v0/history/sim0/tempctl0?since_ms=${t0 - 60_000}`);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.json.source, "disk");
    assert.ok(res.json.signals.length > 0, JSON.stringify(res.json));
    assert.ok(res.json.signals.every((s: { points: unknown[] }) => s.points.length > 0));
    const unknown = await fx.request("GET", `/v0/history/sim0/nosuch0?since_ms=${t0 - 60_000}`);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.status.message, "Device not found: sim0/nosuch0");
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/history of a device no longer configured names each signal's value_type from its disk rows", async () => {
  const dataDir = tempDir("history-gone-types-");
  const first = await startRuntime(testConfig({ runtime: { dataDir } }));
  const t0 = Date.now();
  let declared: Record<string, string | null> = {};
  try {
    await waitFor("sim0's device in the ring", () => first.history!.knows("sim0", "tempctl0"));
    declared = Object.fromEntries(
      first.inventory.capabilities("sim0", "tempctl0")!.signals.map((s) => [
        s.signalId,
        s.valueType,
      ]),
    );
  } finally {
    await first.stop(); // its open buckets are written at stop
  }
  const fx = await startHttpFixture({
    config: { runtime: { dataDir }, providers: [simProvider("other")] },
  });
  try {
    const res = await fx.request("GET", `/v0/history/sim0/tempctl0?since_ms=${t0 - 60_000}`);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.json.source, "disk");
    assert.deepEqual(
      Object.fromEntries(
        res.json.signals.map((s: { signal_id: string; value_type: string }) => [
          s.signal_id,
          s.value_type,
        ]),
      ),
      declared,
      "its rows' types, not 'unknown'",
    );
  } finally {
    await fx.close();
  }
});

Deno.test("a signal only on disk, retyped while the runtime was stopped, answers its newest rows' type alone", async () => {
  const dataDir = tempDir("history-gone-retyped-");
  const probe = (type: number): Inventory => ({
    devices: { probe: { signals: [{ id: "temp", type }], values: [] } },
  });
  const run = async (atMs: number, inventory: Inventory, values: Sample[]) => {
    const clock = new TestClock();
    clock.wallMs = atMs;
    const inventoryFile = await probeFile(dataDir, inventory);
    const rig = await startRig({ dataDir, inventoryFile, clock, history: { stepMs: 10_000 } });
    try {
      await rig.poll(atMs + 1_000, values);
    } finally {
      await rig.rt.stop(); // its open bucket is written at stop
    }
  };
  await run(T0, probe(T.DOUBLE), [{ id: "temp", type: T.DOUBLE, double: 20.5, quality: 1 }]);
  await run(T0 + 60_000, probe(T.INT64), [{ id: "temp", type: T.INT64, int64: "7", quality: 1 }]);
  // The next start lists no probe: temp's declaration is not known.
  const clock = new TestClock();
  clock.wallMs = T0 + 120_000;
  const inventoryFile = await probeFile(dataDir, {
    devices: { other: { signals: [{ id: "x", type: T.DOUBLE }], values: [] } },
  });
  const rig = await startRig({ dataDir, inventoryFile, clock, history: { stepMs: 10_000 } });
  try {
    const answer = await rig.json(`/v0/history/p0/probe?since_ms=${T0}&until_ms=${T0 + 119_999}`);
    assert.equal(answer.source, "disk", JSON.stringify(answer));
    const temp = answer.signals.find((s: { signal_id: string }) => s.signal_id === "temp");
    assert.deepEqual(
      [temp.value_type, temp.points.map((p: { last: unknown }) => p.last)],
      ["int64", [7]],
      "the newest rows' type, none of the older type's rows",
    );
  } finally {
    await rig.rt.stop();
  }
});
