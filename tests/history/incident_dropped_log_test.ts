/**
 * An incident the recorder cannot take (MAX_PENDING_INCIDENTS waiting for their window) is
 * logged (WARN), not only counted: once per time the waiting list fills, whatever was dropped or
 * failed before -- a record that could not be written counts in the same `dropped`.
 */
import assert from "node:assert/strict";
import { MAX_PENDING_INCIDENTS, MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { incidentRig } from "./_incident_rig.ts";

Deno.test("an incident dropped for a full waiting list is logged after a record failed to be written, and again each time the list fills", async () => {
  const files = new FaultyMemoryFiles();
  const { log, lines } = capturingLogger({ level: "warn" });
  const { clock, incidents, loss, session } = incidentRig({
    config: { incidentAfterS: 60 },
    files,
    log,
  });
  const notCaptured = () => lines.filter((l) => l.includes("incident not captured"));
  /** Losses of distinct devices, each an incident of its own (beyond the merge window). */
  const losses = (n: number, from: number) => {
    for (let i = 0; i < n; i++) {
      loss(`d${from + i}`);
      clock.advance(MERGE_WINDOW_MS + 100);
    }
  };
  await session(async () => {
    // A record that cannot be written (the disk full): counted as dropped, its own WARN.
    files.full = true;
    loss("gone");
    clock.advance(60_000);
    await incidents.settled();
    files.full = false;
    assert.equal(incidents.status().dropped, 1);
    assert.ok(lines.some((l) => l.includes("not written")), lines.join("\n"));

    // The waiting list fills and one more comes: dropped, and said.
    losses(MAX_PENDING_INCIDENTS + 1, 0);
    assert.equal(incidents.status().dropped, 2);
    assert.equal(notCaptured().length, 1, lines.join("\n"));
    losses(3, 100); // still full: counted, not said again
    assert.equal(incidents.status().dropped, 5);
    assert.equal(notCaptured().length, 1);

    // The list empties (their windows pass) and fills again: said again.
    clock.advance(60_000);
    await incidents.settled();
    assert.equal(incidents.status().pending, 0);
    losses(MAX_PENDING_INCIDENTS + 1, 200);
    assert.equal(notCaptured().length, 2, lines.join("\n"));
  });
});
