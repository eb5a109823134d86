/**
 * A start whose runtime.data_dir hangs while it opens a journal's folder is abandoned (the
 * start-up budget, or stop()); should the hung mount answer at last, the opening removes what its
 * late call made (an empty folder: JournalWriter.open). The data_dir lock is kept until it has:
 * released at the stop, a runtime started right after on the folder could have its own fresh
 * folder removed under it (its open failing). Real files and the real lock; the calls on the held
 * folder wait until the test lets them go; the kernel's clock moved by hand.
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { type DataDirLock, lockDataDir } from "../../src/host/mod.ts";
import { LateFiles } from "../helpers/journal_files.ts";
import { isolated, newKernel, waitFor } from "../helpers/kernel.ts";
import { flushMicrotasks, ManualClock, runToSettle, settleOn } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** The start-up budget of these tests (virtual time: none of it is waited for). */
const BUDGET_MS = 5000;

/** Whether a second runtime could take the lock of `dir` now (taken, and let go again). */
async function lockFree(dir: string): Promise<boolean> {
  const lock = await lockDataDir(dir);
  if ("heldBy" in lock) return false;
  lock.release();
  return true;
}

const STAGES = [
  { stage: "opening the history disk tier", folder: "history" },
  { stage: "opening the audit journal", folder: "audit" },
] as const;

for (const { stage, folder } of STAGES) {
  for (const ended of ["the start-up budget ran out", "stop() ended the start"] as const) {
    Deno.test(`Kernel: after ${ended} while ${stage} hung, the data_dir lock is kept until the late open answered and removed the folder it made`, async () => {
      const clock = new ManualClock();
      const files = new LateFiles("every call", `/${folder}`);
      const config = isolated(
        testConfig({ providers: [], runtime: { startupTimeoutMs: BUDGET_MS } }),
      );
      const dir = config.runtime.dataDir;
      // What runtime.data_dir held when the kernel released its lock (null: not released yet).
      let heldAtRelease: string[] | null = null;
      const rt = newKernel(config, {
        clock,
        files,
        lockDataDir: async (d): Promise<DataDirLock> => {
          const lock = await lockDataDir(d);
          if ("heldBy" in lock) return lock;
          return {
            release: () => {
              heldAtRelease = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
              lock.release();
            },
          };
        },
      });
      const starting = rt.start().then(() => "started" as const, (err: unknown) => err);
      await waitFor(`a call on ${dir}/${folder} held`, () => files.held > 0);
      const outcome = ended === "the start-up budget ran out"
        ? await runToSettle(clock, starting, "the start to end")
        : (rt.stop(), await settleOn(clock, starting, "the start to end on stop()"));
      assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
      await runToSettle(clock, rt.stop(), "the stop after the failed start");
      await flushMicrotasks();
      // Before: released here, the held call still waiting (a later runtime could start).
      assert.equal(heldAtRelease, null, "the lock was released while the open's call still waited");
      assert.equal(await lockFree(dir), false, "a second runtime could take the folder");
      files.release(); // the hung mount answers at last
      await waitFor("the data_dir lock released", () => heldAtRelease !== null);
      assert.equal(files.answered, files.held);
      assert.ok(
        !heldAtRelease!.includes(folder),
        `the lock was released before the late open removed ${folder}/: ${heldAtRelease}`,
      );
      assert.equal(await lockFree(dir), true, "the lock is free once released");
    });
  }
}
