/**
 * Incident records that cannot be written (a full or read-only disk) are said once per failing
 * spell, not once per record: a flapping device on a full disk would otherwise log a WARN every
 * few seconds, and each line (journald included) takes more of the disk that is full. The first
 * record written again says how many were lost meanwhile; every lost one is counted.
 */
import assert from "node:assert/strict";
import { MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { incidentRig, INCIDENTS_DIR } from "./_incident_rig.ts";

Deno.test("IncidentRecorder says records not written once per failing spell, and how many were lost once one is written again", async () => {
  const files = new FaultyMemoryFiles();
  const { log, lines } = capturingLogger({ level: "info" });
  const { clock, incidents, loss, session } = incidentRig({
    config: { incidentAfterS: 1 },
    files,
    log,
  });
  const notWritten = () => lines.filter((l) => /incident inc-\S+ not written/.test(l));
  /** One incident of its own (beyond the merge window), its record written or failed. */
  const incident = async (device: string) => {
    loss(device);
    clock.advance(1000 + MERGE_WINDOW_MS + 100);
    await incidents.settled();
  };
  await session(async () => {
    files.full = true;
    files.partialBytes = 10;
    for (let i = 0; i < 5; i++) await incident(`d${i}`);
    assert.equal(incidents.status().dropped, 5);
    assert.equal(incidents.status().count, 0);
    assert.equal(notWritten().length, 1, lines.join("\n"));
    assert.match(notWritten()[0]!, /^WARN /);
    // What the short writes left is removed: no torn record is listed at the next start.
    assert.deepEqual(await files.listNames(INCIDENTS_DIR), []);

    // The disk has room again: the next record is written, and one line says what was lost.
    files.full = false;
    await incident("d9");
    assert.equal(incidents.status().count, 1);
    const again = lines.filter((l) => l.includes("incident records written again"));
    assert.equal(again.length, 1, lines.join("\n"));
    assert.match(again[0]!, /5 not written/);

    // A new spell is said again.
    files.full = true;
    await incident("d10");
    await incident("d11");
    assert.equal(notWritten().length, 2, lines.join("\n"));
    assert.equal(incidents.status().dropped, 7);
  });
});
