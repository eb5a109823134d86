import { deepStrictEqual as deepEqual, ok, strictEqual as equal } from "node:assert/strict";
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

Deno.test("journalFiles: an append handle cuts its file back, and appends after the cut land at the new end", async () => {
  const dir = await Deno.makeTempDir({ prefix: "journal_test_" });
  try {
    const path = `${dir}/j.jsonl`;
    const h = await journalFiles.openAppend(path);
    await h.append('{"a":1}\n{"torn');
    await h.truncate('{"a":1}\n'.length);
    await h.append('{"b":2}\n');
    h.close();
    equal(await Deno.readTextFile(path), '{"a":1}\n{"b":2}\n');
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

Deno.test("journalFiles.readLines and readLinesAt give every line of a file as split would, lines within and across 64 KiB chunks, cut to maxLineBytes", async () => {
  const dir = await Deno.makeTempDir({ prefix: "journal_test_" });
  try {
    const path = `${dir}/j.jsonl`;
    // Lines of 0 to ~3000 characters (some two-byte), so that many end near a chunk's edge.
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648;
    const lines: string[] = [];
    for (let i = 0; i < 400; i++) {
      const n = Math.floor(rand() * 3000);
      lines.push(`${i}:${"ab".repeat(n >> 1)}${i % 7 === 0 ? "é" : ""}`);
    }
    const text = lines.join("\n") + "\n";
    await Deno.writeTextFile(path, text);
    const bytes = new TextEncoder().encode(text);
    ok(bytes.length > 5 * 64 * 1024, `${bytes.length} bytes`);
    const max = 1000;
    const cut = (l: string) => new TextDecoder().decode(new TextEncoder().encode(l).slice(0, max));
    deepEqual(await collect(journalFiles.readLines(path, max)), lines.map(cut));
    const at = [];
    for await (const l of journalFiles.readLinesAt(path, { maxLineBytes: max, startByte: 0 })) {
      at.push(l);
    }
    deepEqual(at.map((l) => l.text), lines.map(cut));
    let offset = 0;
    for (const [i, l] of at.entries()) {
      const size = new TextEncoder().encode(lines[i]!).length + 1;
      deepEqual([l.start, l.end, l.terminated], [offset, offset + size, true], `line ${i}`);
      offset += size;
    }
    equal(offset, bytes.length);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
