/**
 * WatchedJournalFiles (src/journal/watched_files.ts): while watched, the calls under way are
 * listed, oldest first, until they settle (a line reader's step by step); once unwatched, calls
 * go straight to the port it wraps. Over real files, one path hung (HungFiles).
 */
import assert from "node:assert/strict";
import { WatchedJournalFiles } from "../../src/journal/mod.ts";
import { HungFiles } from "../helpers/journal_files.ts";
import { tempDir } from "../helpers/kernel.ts";

Deno.test("WatchedJournalFiles lists the calls under way, oldest first, until they settle", async () => {
  const dir = tempDir();
  const files = new WatchedJournalFiles(new HungFiles("/hung"));
  assert.equal(files.oldestUnderWay(), null);
  void files.listNames(`${dir}/hung`);
  void files.fileSize(`${dir}/hung/b.jsonl`);
  assert.deepEqual(files.oldestUnderWay(), { op: "list", path: `${dir}/hung` });
  await files.ensureDir(`${dir}/ok`);
  assert.equal(await files.fileSize(`${dir}/ok/a.jsonl`), 0);
  assert.deepEqual(files.oldestUnderWay(), { op: "list", path: `${dir}/hung` });
  const lines = files.readLines(`${dir}/hung/c.jsonl`, 100)[Symbol.asyncIterator]();
  void lines.next();
  files.unwatch();
  assert.equal(files.oldestUnderWay(), null);
  void files.listNames(`${dir}/hung`);
  assert.equal(files.oldestUnderWay(), null, "not kept once unwatched");
});

Deno.test("WatchedJournalFiles reads lines through, and a reader's step is a read under way", async () => {
  const dir = tempDir();
  await Deno.writeTextFile(`${dir}/a.jsonl`, "one\ntwo\n");
  const files = new WatchedJournalFiles(new HungFiles("/hung"));
  const read: string[] = [];
  for await (const line of files.readLines(`${dir}/a.jsonl`, 100)) read.push(line);
  assert.deepEqual(read, ["one", "two"]);
  assert.equal(files.oldestUnderWay(), null);
  const hung = files.readLinesAt(`${dir}/hung.jsonl`, { maxLineBytes: 100, startByte: 0 });
  void hung[Symbol.asyncIterator]().next();
  assert.deepEqual(files.oldestUnderWay(), { op: "read", path: `${dir}/hung.jsonl` });
});
