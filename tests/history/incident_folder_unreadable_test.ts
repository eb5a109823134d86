/**
 * A folder of incident records that cannot be read (`<data_dir>/history/incidents` is a file, an
 * I/O error) is the recorder's own trouble, as a disk tier that cannot be opened is the history's:
 * the runtime starts, lists no record, and an incident that cannot be written is counted as
 * dropped. Real files in a temporary folder, the real runtime over the programmable provider.
 */
import assert from "node:assert/strict";
import { tempDir } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";

Deno.test("the runtime starts when the incidents folder cannot be read, and counts the records it cannot write", async () => {
  const dataDir = tempDir("incident-folder-");
  await Deno.mkdir(`${dataDir}/history`);
  await Deno.writeTextFile(`${dataDir}/history/incidents`, "not a folder\n");
  const rig = await startRig({ dataDir });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    const list = await rig.json("/v0/incidents");
    assert.equal(list.status.code, "OK");
    assert.deepEqual(list.incidents, [], "no record is listed");
    // An e-stop still latches; its record cannot be written and is counted as dropped.
    const estop = await apiFetch(`${rig.base}/v0/estop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(estop.status, 200);
    await rig.rt.incidents!.stop();
    assert.equal(rig.rt.incidents!.status().dropped, 1, "the record not written is counted");
    assert.equal(rig.rt.incidents!.status().count, 0);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("a record that cannot be read is left out at start, the others listed", async () => {
  const dataDir = tempDir("incident-file-");
  const dir = `${dataDir}/history/incidents`;
  await Deno.mkdir(dir, { recursive: true });
  const header = (id: string, at: number) =>
    JSON.stringify({
      incident_id: id,
      trigger: "device_loss",
      cause: "device p0/probe lost",
      at_epoch_ms: at,
      also: [],
      scope: "devices",
      devices: ["p0/probe"],
      from_epoch_ms: at - 1000,
      until_epoch_ms: at + 1000,
      signals: 0,
      samples: 0,
      bytes: 0,
    });
  await Deno.writeTextFile(`${dir}/inc-${T0}-1.jsonl`, `${header(`inc-${T0}-1`, T0)}\n`);
  // An entry of the record's name that no read can open as a file (EISDIR).
  await Deno.mkdir(`${dir}/inc-${T0 + 1}-2.jsonl`);
  const rig = await startRig({ dataDir });
  try {
    const list = await rig.json("/v0/incidents");
    assert.deepEqual(
      list.incidents.map((h: { incident_id: string }) => h.incident_id),
      [`inc-${T0}-1`],
      "the readable record is listed",
    );
  } finally {
    await rig.rt.stop();
  }
});
