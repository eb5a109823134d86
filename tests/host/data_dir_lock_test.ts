/** lockDataDir: one holder per folder, named to the one refused; released at stop or death. */
import assert from "node:assert/strict";
import { DATA_DIR_LOCK_FILE, lockDataDir } from "../../src/host/mod.ts";

Deno.test("lockDataDir refuses a second holder naming the first's pid, and is free again once released", async () => {
  const dir = await Deno.makeTempDir({ prefix: "data-dir-lock-" });
  try {
    const first = await lockDataDir(`${dir}/data`); // the folder is created
    assert.ok("release" in first);
    assert.equal(await Deno.readTextFile(`${dir}/data/${DATA_DIR_LOCK_FILE}`), `pid ${Deno.pid}\n`);
    const second = await lockDataDir(`${dir}/data`);
    assert.deepEqual(second, { heldBy: `pid ${Deno.pid}` });
    first.release();
    const third = await lockDataDir(`${dir}/data`);
    assert.ok("release" in third, "free once released");
    third.release();
    third.release(); // never throws (a stop calls it last): a second call is a no-op
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("lockDataDir takes a folder whose lock file a dead process left behind", async () => {
  const dir = await Deno.makeTempDir({ prefix: "data-dir-lock-" });
  try {
    // The file is there (with a pid long gone) but no process holds the lock: not in use.
    await Deno.writeTextFile(`${dir}/${DATA_DIR_LOCK_FILE}`, "pid 999999999\n");
    const lock = await lockDataDir(dir);
    assert.ok("release" in lock);
    assert.equal(await Deno.readTextFile(`${dir}/${DATA_DIR_LOCK_FILE}`), `pid ${Deno.pid}\n`);
    lock.release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name:
    "lockDataDir keeps the lock when its pid cannot be written (a full disk): a second runtime is still refused",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "data-dir-lock-" });
    try {
      // The lock file on a device where every write fails with ENOSPC, as on a full disk: the
      // lock itself (flock) is taken, the pid is not written.
      await Deno.symlink("/dev/full", `${dir}/${DATA_DIR_LOCK_FILE}`);
      const first = await lockDataDir(dir);
      assert.ok("release" in first, "the lock is taken");
      assert.match(first.holderNotWritten ?? "", /pid not written/);
      const second = await lockDataDir(dir);
      assert.deepEqual(second, { heldBy: "another process" }, "a second holder is refused");
      first.release();
      const third = await lockDataDir(dir);
      assert.ok("release" in third, "free once released");
      third.release();
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
