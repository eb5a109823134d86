/**
 * A runtime stopping while its history disk hangs (an SD card whose writes stall for seconds, or
 * for good): the history's last rows and its close are waited for at most
 * HISTORY_STOP_BEFORE_PROVIDERS_MS before the providers are stopped, so they still end the way a
 * stop ends them (stdin closed: their own safe state) within the shutdown budget -- not SIGKILLed
 * by the process when the budget runs out behind a write that never ends. Real: the kernel with
 * the simulated provider as a child process; the history's appends held.
 */
import assert from "node:assert/strict";
import { HISTORY_STOP_BEFORE_PROVIDERS_MS } from "../../src/app/kernel.ts";
import { InterceptedAppends } from "../helpers/journal_files.ts";
import { afterPolls, processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel.stop stops the providers while the history disk hangs, and finishes once it writes again", async () => {
  let hung = false;
  const released = Promise.withResolvers<void>();
  let held = 0;
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (hung) {
      held++;
      await released.promise;
    }
    await append(text);
  });
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0")], history: { stepMs: 1000 } }),
    { host: { files } },
  );
  let stopping: Promise<void> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 3);
    const pid = rt.registry.host("sim0")!.session!.pid;
    hung = true;
    stopping = rt.stop();
    await waitFor(
      "the provider stopped while the history's disk hangs",
      () => !processAlive(pid),
      HISTORY_STOP_BEFORE_PROVIDERS_MS + 8000,
    );
    assert.ok(held > 0, "the history's last rows were held by the disk");
    let done = false;
    void stopping.then(() => (done = true));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(done, false, "the stop waits for the history's rows");
  } finally {
    released.resolve();
    await (stopping ?? rt.stop());
  }
});
