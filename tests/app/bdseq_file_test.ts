import assert from "node:assert/strict";
import { bdSeqFile } from "../../src/app/kernel.ts";

Deno.test("bdSeqFile: none recorded until saved; a save replaces the line whole; other text reads as none", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bdseq-" });
  try {
    const path = `${dir}/data/sparkplug/bdseq`;
    const store = bdSeqFile(path);
    assert.equal(await store.load(), null, "missing file (and missing directories)");
    await store.save(7);
    assert.equal(await store.load(), 7);
    await store.save(255);
    assert.equal(await Deno.readTextFile(path), "255\n");
    assert.deepEqual([...Deno.readDirSync(`${dir}/data/sparkplug`)].map((e) => e.name), ["bdseq"]);
    for (const text of ["256\n", "-1\n", "abc", "", "1.5\n", "9".repeat(100)]) {
      await Deno.writeTextFile(path, text);
      assert.equal(await store.load(), null, JSON.stringify(text));
    }
    await Deno.remove(path);
    await Deno.mkdir(path); // a directory where the file should be: unreadable, not fatal
    assert.equal(await store.load(), null);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
