/**
 * A marker the disk refuses (a failed write or fsync: answered 503) is one event: one line, not the
 * journal writer's and the registry's; a disk that stays full gives one ERROR for its failing
 * spell, not one per request, and one INFO once a marker is written again. A refused marker takes
 * no sequence number (the run's events stay without holes) and is not "lost" in any log line: its
 * client was told and may send it again.
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

Deno.test("RunRegistry logs a marker whose fsync failed in one ERROR line, which names the fsync", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const { run } = await registry.open({});
  lines.length = 0;
  files.syncFails = true;
  await assert.rejects(registry.addMarker(run.run_id, { type: "a" }), /No space left/);
  files.syncFails = false;
  const errors = lines.filter((l) => l.startsWith("ERROR"));
  assert.equal(errors.length, 1, lines.join("\n"));
  assert.match(errors[0]!, /^ERROR .*run journal: write marker failed: .*fsync failed.*No space/);
  assert.equal(lines.length, 1, lines.join("\n"));
  await registry.shutdown();
});

Deno.test("RunRegistry logs one ERROR per failing spell of markers, opens and closes, and one INFO when one is written again", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "info" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const { run } = await registry.open({});
  lines.length = 0;
  files.full = true;
  for (const type of ["a", "b", "c"]) {
    await assert.rejects(registry.addMarker(run.run_id, { type }), /No space left/);
  }
  await assert.rejects(registry.close(run.run_id, {}), /No space left/);
  files.full = false;
  const errors = lines.filter((l) => l.startsWith("ERROR"));
  assert.equal(errors.length, 1, lines.join("\n"));
  assert.match(errors[0]!, /run journal: write marker failed: .*logged at DEBUG until/);
  lines.length = 0;
  await registry.addMarker(run.run_id, { type: "d" });
  // (The failed close's run_closed line is counted lost by its writer: a WARN of its own.)
  assert.deepEqual(
    lines.filter((l) => !l.includes("lines were lost")).map((l) =>
      l.replace(/^(\S+)\s+\S+ /, "$1 ")
    ),
    ["INFO run journal written again (4 marker, open or close requests failed before)"],
  );
  // A new spell is said again.
  files.full = true;
  await assert.rejects(registry.addMarker(run.run_id, { type: "e" }), /No space left/);
  files.full = false;
  assert.equal(lines.filter((l) => l.startsWith("ERROR")).length, 1, lines.join("\n"));
  await registry.shutdown();
});

Deno.test("RunRegistry: markers refused on a full disk take no sequence number and are not counted lost", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "info" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const { run } = await registry.open({});
  files.full = true;
  for (const type of ["a", "b", "c"]) {
    await assert.rejects(registry.addMarker(run.run_id, { type }), /No space left/);
  }
  files.syncFails = true;
  files.full = false;
  await assert.rejects(registry.addMarker(run.run_id, { type: "d" }), /No space left/);
  files.syncFails = false;
  const { event } = await registry.addMarker(run.run_id, { type: "e" });
  assert.equal(event.sequence, 2, "the refused markers took none");
  assert.deepEqual(eventsOnDisk(files, run.run_id), [[1, "run_opened", ""], [
    2,
    "annotation",
    "e",
  ]]);
  const { events } = await registry.listEvents(run.run_id, { after_sequence: 1 });
  assert.deepEqual(events.map((e) => [e.sequence, e.type]), [[2, "e"]]);
  assert.deepEqual(lines.filter((l) => /lost/.test(l)), [], "a refused marker is not lost");
  await registry.shutdown();
});
