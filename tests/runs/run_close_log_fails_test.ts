/**
 * The run registry's lines are lines only: a custom logger that throws on them (a log sink that
 * fails) never replaces the error a failed write answers with, nor skips what the registry does
 * after saying it. Its logger is wrapped as the provider registry's and the incident recorder's
 * are (neverThrowing).
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

/** A logger whose WARN and ERROR lines throw while `throws()` says so; counts those it threw. */
function failingSink(throws: () => boolean): { logger: LineLogger; thrown: () => number } {
  let thrown = 0;
  const logger = new LineLogger({
    level: "debug",
    journald: false,
    now: () => 0,
    write: (line) => {
      if (throws() && /^(WARN|ERROR)/.test(line)) {
        thrown++;
        throw new Error("log sink failed");
      }
    },
  });
  return { logger, thrown: () => thrown };
}

Deno.test("RunRegistry.close whose run_closed fsync failed answers with the write's error (UNAVAILABLE, ENOSPC) when its ERROR line throws (a custom logger)", async () => {
  const files = new RunJournalFaultFiles();
  let throwing = false;
  const sink = failingSink(() => throwing);
  const registry = registryOn(files, { logger: sink.logger });
  await registry.start();
  const { run } = await registry.open({});
  files.syncFails = true;
  throwing = true;
  const err = await registry.close(run.run_id, { close_reason: "completed" }).then(
    () => assert.fail("the close whose fsync failed succeeded"),
    (e: unknown) => e,
  );
  throwing = false;
  files.syncFails = false;
  assert.ok(sink.thrown() > 0, "the failed close's lines were said (and thrown)");
  // Before: Error "log sink failed" -- the logger's, in the place of the write's.
  assert.ok(err instanceof RuntimeError, `not the registry's error: ${err}`);
  assert.equal(err.code, "UNAVAILABLE");
  assert.match(err.message, /^Run journal I\/O failed \(close run\): .*No space left/);
  // The run stays open, and the retry closes it with one run_closed.
  const { run: closed } = await registry.close(run.run_id, { close_reason: "failed" });
  assert.equal(closed.close_reason, "failed");
  assert.deepEqual(eventsOnDisk(files, run.run_id).map(([, c]) => c), ["run_opened", "run_closed"]);
  await registry.shutdown();
});
