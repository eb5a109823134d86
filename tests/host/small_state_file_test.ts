/**
 * smallStateFile (src/host/files.ts: the Sparkplug bdSeq file) on a disk that refuses the write:
 * the old text stays, and no temporary file is left behind (a full card keeps one more stray
 * file per failed save otherwise, and the next save's open may then fail on it too). The full
 * disk is /dev/full, linked where the temporary file goes (Linux).
 */
import assert from "node:assert/strict";
import { smallStateFile } from "../../src/host/mod.ts";

const noDevFull = (() => {
  try {
    return !Deno.statSync("/dev/full").isCharDevice;
  } catch {
    return true;
  }
})();

Deno.test({
  name:
    "smallStateFile.write on a full disk keeps the old text and leaves no temporary file behind",
  ignore: noDevFull,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "small-state-" });
    try {
      const path = `${dir}/bdseq`;
      const file = smallStateFile(path);
      await file.write("7\n");
      // The next save's temporary file lands on a device that has no space.
      await Deno.symlink("/dev/full", `${path}.tmp`);
      await assert.rejects(file.write("8\n"), /space/i);
      assert.equal(await file.read(), "7\n", "the old text stays");
      const left = [...Deno.readDirSync(dir)].map((e) => e.name).sort();
      assert.deepEqual(left, ["bdseq"], "no temporary file left behind");
      // Space again: the next save is written.
      await file.write("9\n");
      assert.equal(await file.read(), "9\n");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
