/**
 * A start of the run registry that the registry's shutdown overtakes while it closes the run the
 * previous process left open (reading that run's event file, a hung mount): once the disk
 * answers, the stopped registry writes nothing -- no run_closed in the run's event file (a later
 * runtime on the folder closes the run itself), no close record in runs.jsonl.
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  HeldCountedFiles,
  registryOn,
  runLeftOpen,
  stoppedWhileStartHeld,
} from "./_run_fault_rig.ts";

/**
 * Files whose size of a run's event file waits while `held` is set (a hung mount); append handles
 * counted.
 */
class HeldEventFileFiles extends HeldCountedFiles {
  override async fileSize(path: string): Promise<number> {
    if (path.startsWith("/data/runs/")) await this.hold();
    return await super.fileSize(path);
  }
}

Deno.test("RunRegistry: shut down while its start closes the run left open, once the disk answers it writes neither the run's close nor its record", async () => {
  const files = new HeldEventFileFiles();
  // A run the previous process left open (it crashed): a start closes it as abandoned.
  const { runsBefore, eventsFile, eventsBefore, handlesBefore } = await runLeftOpen(files);

  const { log, lines } = capturingLogger();
  const registry = registryOn(files, { logger: log });
  let linesAtStop = 0;
  // The runtime stops while the start closes the run; the hung mount answers at last.
  await stoppedWhileStartHeld(
    registry,
    files,
    () => files.waiting,
    "the start reads the open run's event file",
    { afterStop: () => (linesAtStop = lines.length) },
  );

  assert.equal(registry.info().available, false, "a stopped registry became available");
  assert.equal(files.text(eventsFile), eventsBefore, "the stopped registry closed the run");
  assert.equal(files.text("/data/runs.jsonl"), runsBefore, "the stopped registry wrote runs.jsonl");
  assert.equal(files.opened - files.closed, handlesBefore, "the stopped registry left a file open");
  assert.deepEqual(lines.slice(linesAtStop), [], "the stopped registry logged its start's end");
});
