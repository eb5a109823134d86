/**
 * The Sparkplug edge node's start waits for its bdSeq save at most BDSEQ_SAVE_WAIT_MS (a hung disk
 * under runtime.data_dir) and goes on; its stop does not wait for it either. Should the disk answer
 * after the stop, that save writes runtime.data_dir/sparkplug/bdseq: the data_dir lock is kept
 * until it ended, or a runtime started meanwhile would have its own bdSeq overwritten with an
 * older one (a reused bdSeq after its restart). Real lock; a bdSeq store whose save answers only
 * when the test lets it (the hung disk); an MQTT session that never connects; the clock moved by
 * hand.
 */
import assert from "node:assert/strict";
import { type DataDirLock, lockDataDir } from "../../src/host/mod.ts";
import { isolated, newKernel, waitFor } from "../helpers/kernel.ts";
import { flushMicrotasks, ManualClock, runToSettle } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { idleMqttSession } from "../helpers/held_mqtt.ts";

/** Whether a second runtime could take the lock of `dir` now (taken, and let go again). */
async function lockFree(dir: string): Promise<boolean> {
  const lock = await lockDataDir(dir);
  if ("heldBy" in lock) return false;
  lock.release();
  return true;
}

Deno.test("Kernel.stop keeps the data_dir lock until a Sparkplug bdSeq save the disk held at start has ended", async () => {
  const clock = new ManualClock();
  const config = isolated(testConfig({
    providers: [],
    sparkplug: { enabled: true, brokerUrl: "mqtt://127.0.0.1:1", groupId: "g" },
  }));
  const dir = config.runtime.dataDir;
  const saveAnswers = Promise.withResolvers<void>();
  let saves = 0;
  let released = false;
  const rt = newKernel(config, {
    clock,
    mqttConnect: () => Promise.resolve(idleMqttSession()),
    bdSeqStore: () => ({
      load: () => Promise.resolve(null),
      save: () => {
        saves++;
        return saveAnswers.promise; // the hung disk: answers when the test says so
      },
    }),
    lockDataDir: async (d): Promise<DataDirLock> => {
      const lock = await lockDataDir(d);
      if ("heldBy" in lock) return lock;
      return {
        release: () => {
          released = true;
          lock.release();
        },
      };
    },
  });
  const starting = rt.start();
  // The folder opened on the real disk first (no time moved meanwhile), up to the bdSeq's save.
  await waitFor("the start's bdSeq save", () => saves === 1);
  // The start goes on past BDSEQ_SAVE_WAIT_MS (virtual time), the save still in the disk's hands.
  await runToSettle(clock, starting, "the start");
  await runToSettle(clock, rt.stop(), "the stop");
  await flushMicrotasks();
  // Before: released here, with the save still to land in the folder.
  assert.equal(released, false, "the lock was released while the bdSeq save could still land");
  assert.equal(await lockFree(dir), false, "a second runtime could take the folder");
  saveAnswers.resolve(); // the disk answers at last
  await waitFor("the data_dir lock released once the save ended", () => released);
  assert.equal(await lockFree(dir), true, "the lock is free once released");
});
