import { deepEqual, equal } from "node:assert/strict";
import { journalFiles } from "../../src/host/mod.ts";

async function collect(it: AsyncIterable<string>): Promise<string[]> {
  const out: string[] = [];
  for await (const l of it) out.push(l);
  return out;
}

Deno.test("journalFiles appends, syncs and reads lines back including a torn last line", async () => {
  const dir = await Deno.makeTempDir({ prefix: "journal_test_" });
  try {
    await journalFiles.ensureDir(`${dir}/a/b`);
    const path = `${dir}/a/b/j.jsonl`;
    equal(await journalFiles.endsWithNewline(path), true, "missing file");
    deepEqual(await collect(journalFiles.readLines(path, 100)), []);
    const h = await journalFiles.openAppend(path);
    await h.append('{"a":1}\n{"b":"é"}\n');
    await h.append("torn");
    await h.sync();
    h.close();
    equal(await journalFiles.endsWithNewline(path), false);
    deepEqual(await collect(journalFiles.readLines(path, 100)), ['{"a":1}', '{"b":"é"}', "torn"]);
    await journalFiles.rename(path, `${dir}/moved.jsonl`);
    deepEqual(await collect(journalFiles.readLines(path, 100)), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("journalFiles.readLines cuts over-long lines and reads across chunk boundaries", async () => {
  const dir = await Deno.makeTempDir({ prefix: "journal_test_" });
  try {
    const path = `${dir}/j.jsonl`;
    const long = "x".repeat(200_000);
    await Deno.writeTextFile(path, `short\n${long}\nafter\n`);
    const lines = await collect(journalFiles.readLines(path, 1000));
    deepEqual(lines.map((l) => l.length), [5, 1000, 5]);
    equal(lines[2], "after");
    equal(await journalFiles.endsWithNewline(path), true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
