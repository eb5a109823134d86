import { deepStrictEqual as deepEqual, strictEqual as equal } from "node:assert/strict";
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

Deno.test("journalFiles.readLinesAt gives byte positions and resumes at any line start", async () => {
  const dir = await Deno.makeTempDir({ prefix: "journal_test_" });
  try {
    const path = `${dir}/j.jsonl`;
    const long = "y".repeat(70_000); // crosses a 64 KiB read chunk
    await Deno.writeTextFile(path, `é1\n${long}\n\nlast`);
    const all = [];
    for await (const l of journalFiles.readLinesAt(path, { maxLineBytes: 10, startByte: 0 })) {
      all.push(l);
    }
    deepEqual(all.map((l) => [l.text, l.start, l.end, l.terminated]), [
      ["é1", 0, 4, true],
      ["y".repeat(10), 4, 70_005, true],
      ["", 70_005, 70_006, true],
      ["last", 70_006, 70_010, false],
    ]);
    const resumed = [];
    for await (const l of journalFiles.readLinesAt(path, { maxLineBytes: 10, startByte: 4 })) {
      resumed.push(l.start);
    }
    deepEqual(resumed, [4, 70_005, 70_006]);
    const missing = journalFiles.readLinesAt(`${dir}/none`, { maxLineBytes: 10, startByte: 0 });
    for await (const _ of missing) throw new Error("a missing file has no lines");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
