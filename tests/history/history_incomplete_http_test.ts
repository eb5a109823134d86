/**
 * A history answer the disk tier could not fully give says so to the client, not only in the log:
 * JSON `incomplete`, the CSV header `X-History-Incomplete`, and the read errors in GET /metrics.
 * A runtime whose `<data_dir>/history` is a file, over real HTTP.
 */
import assert from "node:assert/strict";
import { probeFile, probeValues, startRig, T0 } from "./_history_helpers.ts";
import { T } from "../helpers/programmable_provider.ts";
import { tempDir } from "../helpers/kernel.ts";

/** A runtime over the probe (a double and an int64 signal) with its data in a new folder. */
async function probeRig(prefix: string, before?: (dataDir: string) => Promise<void>) {
  const dataDir = tempDir(prefix);
  const inventoryFile = await probeFile(dataDir, {
    devices: {
      probe: {
        signals: [{ id: "temp", type: T.DOUBLE }, { id: "count", type: T.INT64 }],
        values: [],
      },
    },
  });
  await before?.(dataDir);
  return await startRig({ dataDir, inventoryFile });
}

Deno.test("GET /v0/history marks an answer the disk tier failed to give: JSON incomplete, the CSV header, the metric", async () => {
  // A file where the disk tier's folder should be: every read of it fails.
  const rig = await probeRig(
    "history-incomplete-",
    (dir) => Deno.writeTextFile(`${dir}/history`, "not a folder\n"),
  );
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    const answer = await rig.json("/v0/history/p0/probe?signal_id=temp&since_ms=0");
    assert.equal(answer.status.code, "OK");
    assert.equal(answer.incomplete, "disk_unreadable");
    assert.equal(answer.signals[0].points.length, 1, "the ring's sample is given");
    const csv = await rig.get("/v0/history/p0/probe?signal_id=temp&since_ms=0&format=csv");
    assert.equal(csv.headers.get("x-history-incomplete"), "disk_unreadable");
    await csv.body?.cancel();
    const metrics = await (await rig.get("/metrics")).text();
    assert.match(metrics, /^runtime_history_disk_read_errors_total 2$/m);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("GET /v0/history: a whole answer has incomplete null and no header", async () => {
  const rig = await probeRig("history-complete-");
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    const answer = await rig.json("/v0/history/p0/probe?signal_id=temp&since_ms=0");
    assert.equal(answer.incomplete, null);
    const csv = await rig.get("/v0/history/p0/probe?signal_id=temp&since_ms=0&format=csv");
    assert.equal(csv.headers.get("x-history-incomplete"), null);
    await csv.body?.cancel();
  } finally {
    await rig.rt.stop();
  }
});
