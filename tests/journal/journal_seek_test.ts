/**
 * seekAfter and lastKeyed over real files: the same answer as reading the file from the start,
 * past lines without a key (corrupt, foreign, torn, over-long) and holes in the keys, in reads
 * that do not grow with the file (lines handed over counted).
 */
import assert from "node:assert/strict";
import {
  type JournalLine,
  type KeyedLines,
  lastKeyed,
  SEEK_LINEAR_BYTES,
  seekAfter,
} from "../../src/journal/mod.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";

function key(line: JournalLine): number | null {
  if (!line.terminated) return null;
  try {
    const v = JSON.parse(line.text);
    return typeof v?.k === "number" ? v.k : null;
  } catch {
    return null;
  }
}

async function withFile(
  lines: string[],
  fn: (k: KeyedLines, files: SwitchableFiles, text: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "journal_seek_" });
  try {
    const path = `${dir}/j.jsonl`;
    const text = lines.join("\n") + "\n";
    await Deno.writeTextFile(path, text);
    const files = new SwitchableFiles();
    const end = new TextEncoder().encode(text).length;
    await fn({ files, path, maxLineBytes: 4096, end, key }, files, text);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** What a read from the start finds: the offset of the first line keyed > after. */
function expected(lines: string[], after: number): number {
  let pos = 0;
  for (const l of lines) {
    const k = key({ text: l, start: 0, end: 0, terminated: true });
    if (k !== null && k > after) return pos;
    pos += new TextEncoder().encode(l).length + 1;
  }
  return pos;
}

Deno.test("seekAfter finds the first line keyed above a value past junk and holes, as a full read does", async () => {
  const lines: string[] = [];
  for (let k = 1; k <= 5000; k++) {
    if (k % 700 === 0) continue; // a hole in the keys
    lines.push(JSON.stringify({ k, pad: "p".repeat(k % 50) }));
    if (k % 333 === 0) lines.push("{corrupt");
    if (k % 1000 === 0) lines.push(JSON.stringify({ other: k }), "", "x".repeat(5000));
  }
  await withFile(lines, async (k) => {
    for (const after of [-1, 0, 1, 2, 699, 700, 1399, 2500, 3333, 4999, 5000, 9999]) {
      assert.equal(await seekAfter(k, after), expected(lines, after), `after ${after}`);
    }
  });
});

Deno.test("seekAfter reads O(log size) lines: a seek in 200,000 lines hands over a few thousand at most", async () => {
  const n = 200_000;
  const lines = Array.from({ length: n }, (_, i) => JSON.stringify({ k: i + 1 }));
  await withFile(lines, async (k, files) => {
    for (const after of [0, 100_000, 199_900]) {
      files.linesRead = 0;
      assert.equal(await seekAfter(k, after), expected(lines, after));
      // Two lines per probe (~18 probes), plus the lines of the last SEEK_LINEAR_BYTES read one
      // by one (11 bytes each here): ~6,000 at most, against 200,000 in the file.
      const bound = 2 * 20 + Math.ceil(SEEK_LINEAR_BYTES / 11) + 1;
      assert.ok(files.linesRead <= bound, `${files.linesRead} lines read, bound ${bound}`);
    }
  });
});

Deno.test("lastKeyed finds the last keyed line behind a torn tail and is null for a file without one", async () => {
  const lines = Array.from({ length: 10_000 }, (_, i) => JSON.stringify({ k: i + 1 }));
  lines.push("junk".repeat(40_000), '{"k":'); // an over-long line, then a torn one
  await withFile(lines, async (k) => {
    const last = await lastKeyed(k);
    assert.equal(last?.key, 10_000);
    assert.equal(last?.line.text, '{"k":10000}');
  });
  await withFile(["junk", "{"], async (k) => {
    assert.equal(await lastKeyed(k), null);
    assert.equal(await seekAfter(k, 0), k.end);
  });
});
