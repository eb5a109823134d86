/**
 * A stop that comes while the start takes the runtime.data_dir lock ends the start at once (its
 * error is the stop's: "the runtime is stopping"). Should the lock then answer that another
 * runtime holds the folder, that failure is the start's own, not one the stop caused: the kernel
 * names it (startFailedOnItsOwn, what runService says in its ERROR after the stop), instead of
 * the process exiting 0 with two runtimes configured on one folder never said. A lock the test
 * answers; real kernel (no provider is spawned before the lock).
 */
import assert from "node:assert/strict";
import type { DataDirLock } from "../../src/host/data_dir_lock.ts";
import { newKernel, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { inertSim } from "../safety/_fixture.ts";

/** How long the kernel is given to note the lock's answer (it is a microtask chain). */
const NOTED_WITHIN_MS = 3000;

Deno.test("Kernel.stop while the start takes the data_dir lock: a lock then held by another runtime is the start's own failure", async () => {
  let asked = false;
  let answer!: (l: DataDirLock) => void;
  const rt = newKernel(testConfig({ providers: [inertSim("sim0")] }), {
    lockDataDir: () => {
      asked = true;
      return new Promise<DataDirLock>((r) => answer = r);
    },
  });
  const starting = rt.start().then(() => null, (e: Error) => e.message);
  await waitFor("the data_dir lock asked", () => asked);
  const stopped = rt.stop();
  assert.match((await starting) ?? "start-up finished", /stopping/);
  assert.equal(rt.startFailedOnItsOwn, null, "nothing of its own before the lock answered");
  answer({ heldBy: "pid 4242" });
  await stopped;
  const own = await waitFor(
    "the start's own failure noted",
    () => rt.startFailedOnItsOwn,
    NOTED_WITHIN_MS,
  ).catch(() => null);
  assert.notEqual(own, null, "the lock held by another runtime was not noted as the start's own");
  assert.match(String((own!.error as Error).message), /in use by another runtime \(pid 4242\)/);
});

Deno.test("Kernel.stop while the start takes the data_dir lock: a lock then taken is no failure of the start's own", async () => {
  let asked = false;
  let released = 0;
  let answer!: (l: DataDirLock) => void;
  const rt = newKernel(testConfig({ providers: [inertSim("sim0")] }), {
    lockDataDir: () => {
      asked = true;
      return new Promise<DataDirLock>((r) => answer = r);
    },
  });
  const starting = rt.start().then(() => null, (e: Error) => e.message);
  await waitFor("the data_dir lock asked", () => asked);
  const stopped = rt.stop();
  assert.match((await starting) ?? "start-up finished", /stopping/);
  answer({ release: () => void released++ });
  await stopped;
  await waitFor("the late lock released", () => released > 0, NOTED_WITHIN_MS);
  assert.equal(rt.startFailedOnItsOwn, null, "the stop's own end said as the start's");
});
