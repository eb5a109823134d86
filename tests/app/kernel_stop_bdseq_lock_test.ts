/**
 * The Sparkplug edge node's start waits for its bdSeq save at most BDSEQ_SAVE_WAIT_MS (a hung disk
 * under runtime.data_dir) and goes on; its stop does not wait for it either. Should the disk answer
 * after the stop, that save writes runtime.data_dir/sparkplug/bdseq: the data_dir lock is kept
 * until it ended, or a runtime started meanwhile would have its own bdSeq overwritten with an
 * older one (a reused bdSeq after its restart). A stop while the start still waits for the
 * store's load, the lock released at once (nothing under way then): a load answering after it
 * saves nothing (the node never connected). Real lock; a bdSeq store whose save (or load) answers
 * only when the test lets it (the hung disk), the real file behind it; an MQTT session that never
 * connects; the clock moved by hand.
 */
import assert from "node:assert/strict";
import { type DataDirLock, lockDataDir } from "../../src/host/mod.ts";
import { isolated, newKernel, waitFor } from "../helpers/kernel.ts";
import { flushMicrotasks, ManualClock, runToSettle } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { idleMqttSession } from "../helpers/held_mqtt.ts";
import { bdSeqFile } from "../../src/app/kernel.ts";

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

Deno.test("Kernel.stop during the Sparkplug node's start: a bdSeq load the disk answers after the stop writes nothing to the folder it let go", async () => {
  const clock = new ManualClock();
  const config = isolated(testConfig({
    providers: [],
    sparkplug: { enabled: true, brokerUrl: "mqtt://127.0.0.1:1", groupId: "g" },
  }));
  const dir = config.runtime.dataDir;
  const path = `${dir}/sparkplug/bdseq`;
  const loadAnswers = Promise.withResolvers<void>();
  let loads = 0;
  let loaded = false;
  const saves: Promise<void>[] = [];
  let released = false;
  const rt = newKernel(config, {
    clock,
    mqttConnect: () => Promise.resolve(idleMqttSession()),
    // The real file under data_dir; its load held as on a hung disk, until the test lets it go.
    bdSeqStore: (p) => {
      const file = bdSeqFile(p);
      return {
        load: async () => {
          loads++;
          await loadAnswers.promise;
          const last = await file.load();
          loaded = true;
          return last;
        },
        save: (n) => {
          const saving = file.save(n);
          saves.push(saving);
          return saving;
        },
      };
    },
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
  await Deno.mkdir(`${dir}/sparkplug`, { recursive: true });
  await Deno.writeTextFile(path, "7\n"); // the last process's bdSeq
  const starting = rt.start().then(() => null, (e: Error) => e.message);
  await waitFor("the start's bdSeq load", () => loads === 1);
  // Stopped while the load waits (before BDSEQ_SAVE_WAIT_MS: no time moved): the node never
  // connects, no bdSeq of this process is used.
  await runToSettle(clock, rt.stop(), "the stop");
  assert.match((await starting) ?? "start-up finished", /stopping/);
  // Released without the held load (it is still held: a stop that waited for it never would);
  // waited for, as the release may land a turn after stop() resolved on a loaded machine.
  await waitFor(
    "the stop to release the lock (no disk call of its own was under way)",
    () => released,
    5000,
  );
  assert.equal(await lockFree(dir), true, "a second runtime could not take the folder");
  loadAnswers.resolve(); // the disk answers at last, after `runtime stopped`
  await waitFor("the load read the file", () => loaded);
  await flushMicrotasks();
  await Promise.all(saves);
  // Before: the node went on to save bdSeq 8 here, into a folder whose lock was let go (a runtime
  // started meanwhile would have its own bdSeq overwritten, and reuse one at its restart).
  assert.equal(saves.length, 0, "a bdSeq save after the runtime stopped");
  assert.equal(await Deno.readTextFile(path), "7\n");
});
