/**
 * RunRegistry's openRefusal (the kernel's stop: docs/http-api.md "Runs"): a POST /v0/runs is
 * refused when it is asked and again at its turn in the write queue -- an open that waited behind
 * a slow write while the stop began opens no run.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

Deno.test("RunRegistry.open waiting its turn behind a held close is refused when openRefusal gives a reason meanwhile", async () => {
  const files = new RunJournalFaultFiles();
  let why: string | null = null;
  const registry = registryOn(files, { openRefusal: () => why });
  await registry.start();
  try {
    const { run } = await registry.open({});
    const release = Promise.withResolvers<void>();
    files.gate = release.promise;
    const closed = registry.close(run.run_id, {});
    await waitFor("the close's write held", () => files.held > 0);
    const opened = registry.open({ experiment_label: "late" });
    why = "the runtime is stopping";
    files.gate = null;
    release.resolve();
    await closed;
    await assert.rejects(opened, (err: Error & { code?: string }) => {
      assert.equal(err.code, "FAILED_PRECONDITION");
      assert.match(err.message, /^refusing to open a run: the runtime is stopping$/);
      return true;
    });
    assert.equal(registry.openRunId(), null);
    // Asked at once too: nothing waits for the queue.
    await assert.rejects(registry.open({}), /refusing to open a run: the runtime is stopping/);
    assert.equal(registry.info().run_count, 1, "only the run closed before");
  } finally {
    await registry.shutdown();
  }
});
