/**
 * A start of the run registry that the registry's shutdown overtakes while it closes the run the
 * previous process left open (reading that run's event file, a hung mount): once the disk
 * answers, the stopped registry writes nothing -- no run_closed in the run's event file (a later
 * runtime on the folder closes the run itself), no close record in runs.jsonl.
 */
import assert from "node:assert/strict";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { registryOn } from "./_run_fault_rig.ts";

/**
 * Files whose size of a run's event file waits while `held` is set (a hung mount); append handles
 * counted.
 */
class HeldEventFileFiles extends FaultyMemoryFiles {
  held: Promise<void> | null = null;
  waiting = 0;
  opened = 0;
  closed = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    this.opened++;
    return { ...h, close: () => (this.closed++, h.close()) };
  }
  override async fileSize(path: string): Promise<number> {
    if (this.held !== null && path.startsWith("/data/runs/")) {
      this.waiting++;
      await this.held;
    }
    return await super.fileSize(path);
  }
}

Deno.test("RunRegistry: shut down while its start closes the run left open, once the disk answers it writes neither the run's close nor its record", async () => {
  const files = new HeldEventFileFiles();
  // A run the previous process left open (it crashed): a start closes it as abandoned.
  const earlier = registryOn(files);
  await earlier.start();
  const { run } = await earlier.open({ experiment_label: "left open" });
  const runsBefore = files.text("/data/runs.jsonl");
  const eventsFile = `/data/runs/${run.run_id.slice(-26)}.jsonl`;
  const eventsBefore = files.text(eventsFile);
  const handlesBefore = files.opened - files.closed;

  const { log, lines } = capturingLogger();
  const registry = registryOn(files, { logger: log });
  let release = () => {};
  files.held = new Promise((r) => (release = r));
  const starting = registry.start();
  for (let i = 0; i < 100 && files.waiting < 1; i++) await flushMicrotasks();
  assert.equal(files.waiting, 1, "the start reads the open run's event file");
  await registry.shutdown(); // the runtime stops while the start closes the run
  const linesAtStop = lines.length;
  files.held = null;
  release(); // the hung mount answers at last
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();

  assert.equal(registry.info().available, false, "a stopped registry became available");
  assert.equal(files.text(eventsFile), eventsBefore, "the stopped registry closed the run");
  assert.equal(files.text("/data/runs.jsonl"), runsBefore, "the stopped registry wrote runs.jsonl");
  assert.equal(files.opened - files.closed, handlesBefore, "the stopped registry left a file open");
  assert.deepEqual(lines.slice(linesAtStop), [], "the stopped registry logged its start's end");
});
