/**
 * JournalWriter on in-memory files that fail as a full disk does (tests/helpers/
 * faulty_memory_files.ts): a write the disk cut short leaves none of its lines in the file, so
 * what the writer reports lost is exactly what the file lacks, and a line reported failed never
 * turns up as a valid line later.
 */
import assert from "node:assert/strict";
import { JournalWriter } from "../../src/journal/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import { ManualClock } from "../helpers/clock.ts";
import { closeWhileOpening, writeSegments } from "../helpers/hung_mount.ts";

const PATH = "/data/j.jsonl";

type Target = ConstructorParameters<typeof JournalWriter>[0]["target"];

/**
 * A JournalWriter over `files` on a ManualClock (fsync batched every 1000 ms), its log captured;
 * `target` the file at PATH unless given; a gap line for lost lines unless `gaps` is false.
 */
function writer(files: FaultyMemoryFiles, o: { target?: Target; gaps?: boolean } = {}) {
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new ManualClock();
  const w = new JournalWriter({
    files,
    target: o.target ?? { path: PATH },
    name: "test journal",
    log,
    clock,
    maxQueuedLines: 100,
    syncIntervalMs: 1000,
    ...(o.gaps === false ? {} : { gapLine: (g) => JSON.stringify({ gap: g.lines }) }),
  });
  return { w, logLines: lines, clock };
}

/** The file's lines, without the empty text after its last newline. */
const linesOf = (files: FaultyMemoryFiles) => files.text(PATH).split("\n").slice(0, -1);

Deno.test("JournalWriter: a write cut short by a full disk leaves none of its lines, whole or torn", async () => {
  const files = new FaultyMemoryFiles();
  const { w } = writer(files);
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  // The disk fills in the middle of the next write (two lines, one write): the first line lands
  // whole, the second torn.
  files.full = true;
  files.partialBytes = '{"n":2}\n{"n"'.length;
  const failed = await Promise.all([w.append('{"n":2}'), w.append('{"n":3}')]);
  assert.deepEqual(failed.map((r) => r.ok), [false, false]);
  assert.equal(w.status().lost, 2);
  // Before: '{"n":1}\n{"n":2}\n{"n"' -- a line reported lost was in the file.
  assert.equal(files.text(PATH), '{"n":1}\n', "cut back to what was written before");
  files.full = false;
  assert.deepEqual(await w.append('{"n":4}'), { ok: true });
  assert.deepEqual(linesOf(files), ['{"n":1}', '{"gap":2}', '{"n":4}']);
  await w.close();
});

Deno.test("JournalWriter: a line whose text landed without its newline does not become a valid line at the next write", async () => {
  const files = new FaultyMemoryFiles();
  const { w } = writer(files);
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  files.full = true;
  files.partialBytes = '{"n":2}'.length;
  assert.equal((await w.append('{"n":2}')).ok, false);
  files.full = false;
  assert.deepEqual(await w.append('{"n":3}'), { ok: true });
  // Before: the next open ended the torn text with a newline, and {"n":2} (reported failed) was
  // a valid line.
  assert.deepEqual(linesOf(files), ['{"n":1}', '{"gap":1}', '{"n":3}']);
  await w.close();
});

Deno.test("JournalWriter: when the cut fails too, one WARN says so and the torn line is still ended before the next", async () => {
  const files = new FaultyMemoryFiles();
  const { w, logLines } = writer(files);
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  files.full = true;
  files.truncateFails = true;
  files.partialBytes = 4;
  assert.equal((await w.append('{"n":2}')).ok, false);
  const warned = logLines.filter((l) => l.includes("could not be cut back"));
  assert.equal(warned.length, 1, logLines.join("\n"));
  assert.match(
    warned[0]!,
    /^WARN .*test journal: a failed write could not be cut back \(No space left on device \(os error 28\)\): its whole lines may stay in \/data\/j\.jsonl$/,
  );
  files.full = false;
  files.truncateFails = false;
  assert.deepEqual(await w.append('{"n":3}'), { ok: true });
  assert.deepEqual(linesOf(files), ['{"n":1}', '{"n"', '{"gap":1}', '{"n":3}']);
  await w.close();
});

Deno.test("JournalWriter: a write whose fsync failed for a sync line is cut back and all its lines reported failed; lines written before stay", async () => {
  const files = new FaultyMemoryFiles();
  const { w } = writer(files);
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  files.syncFails = true;
  // One write: a line without sync and one with it; the fsync fails.
  const results = await Promise.all([w.append('{"n":2}'), w.append('{"n":3}', { sync: true })]);
  assert.deepEqual(results.map((r) => r.ok), [false, false]);
  assert.equal(w.status().lost, 2);
  // Before: '{"n":1}\n{"n":2}\n{"n":3}\n' -- a line answered failed was in the file.
  assert.equal(files.text(PATH), '{"n":1}\n', "cut back to what was written before");
  files.syncFails = false;
  assert.deepEqual(await w.append('{"n":4}', { sync: true }), { ok: true });
  assert.deepEqual(linesOf(files), ['{"n":1}', '{"gap":2}', '{"n":4}']);
  await w.close();
});

Deno.test("JournalWriter: lines reported written before a failed write are fsync'd, though the failed write dropped the file", async () => {
  const files = new FaultyMemoryFiles();
  const { w, clock } = writer(files, { gaps: false });
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  assert.equal(files.durableText(PATH), "", "not fsync'd yet: the fsync is batched");
  // The next write fails (a full disk at write(2); an fsync of what is written still works).
  files.full = true;
  assert.equal((await w.append('{"n":2}')).ok, false);
  // The batched fsync comes, then the journal is closed.
  await clock.advanceAsync(1000);
  await w.close();
  assert.equal(files.text(PATH), '{"n":1}\n');
  // Before: "" -- the failed write dropped the handle, and the batched fsync and close found
  // none to sync, so {"n":1}, reported written, was never made durable.
  assert.equal(files.durableText(PATH), '{"n":1}\n', "the line reported written is fsync'd");
  assert.equal(w.status().writeErrors, 1, "the write's failure only");
});

Deno.test("JournalWriter: when that fsync fails too, it is counted and logged once, and not retried", async () => {
  const files = new FaultyMemoryFiles();
  const { w, logLines, clock } = writer(files, { gaps: false });
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  files.full = true;
  files.syncFails = true;
  assert.equal((await w.append('{"n":2}')).ok, false);
  await clock.advanceAsync(1000);
  await w.close();
  assert.equal(files.syncFailures, 1, "one fsync attempt");
  assert.equal(w.status().writeErrors, 2, "the write and the fsync");
  const errors = logLines.filter((l) => l.includes("written before a failed write"));
  assert.equal(errors.length, 1, logLines.join("\n"));
  assert.match(
    errors[0]!,
    /^ERROR .*test journal: fsync of lines written before a failed write failed too \(test journal \(\/data\/j\.jsonl\): No space left on device \(os error 28\)\): they may not survive a machine crash$/,
  );
});

Deno.test("JournalWriter: a failed fsync at segment rotation is logged once naming the file, and not retried", async () => {
  const files = new FaultyMemoryFiles();
  const segments = { dir: "/data/seg", prefix: "seg", maxFileBytes: 20, maxFiles: 10 };
  const { w, logLines, clock } = writer(files, { gaps: false, target: { segments } });
  const first = "/data/seg/seg-00000001.jsonl";
  // Two lines of 8 bytes fill the first file (20 bytes at most); its fsync is batched.
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  assert.deepEqual(await w.append('{"n":2}'), { ok: true });
  // The next line rotates: the fsync of the first file before it is let go fails. It is the
  // write's failure (the line is reported failed), and it is not retried.
  files.syncFails = true;
  assert.equal((await w.append('{"n":3}')).ok, false);
  files.syncFails = false;
  assert.deepEqual(await w.append('{"n":4}'), { ok: true });
  await clock.advanceAsync(1000);
  await w.close();
  assert.equal(files.syncFailures, 1, "one fsync attempt of the first file");
  assert.equal(files.durableText(first), "", "the first file is not fsync'd again");
  assert.equal(files.text(first), '{"n":1}\n{"n":2}\n');
  assert.equal(files.text("/data/seg/seg-00000002.jsonl"), '{"n":4}\n');
  assert.equal(w.status().writeErrors, 1, "the failed fsync, counted once");
  const errors = logLines.filter((l) => l.includes("may not survive"));
  // Before: [] -- counted, but no line said that lines reported written may be lost.
  assert.equal(errors.length, 1, logLines.join("\n"));
  assert.match(
    errors[0]!,
    /^ERROR .*test journal: fsync of \/data\/seg\/seg-00000001\.jsonl before rotation failed \(No space left on device \(os error 28\)\): the lines written to it may not survive a machine crash$/,
  );
});

Deno.test("JournalWriter: a failed batched fsync is logged once naming the file: the lines written before may not survive", async () => {
  const files = new FaultyMemoryFiles();
  const { w, logLines, clock } = writer(files, { gaps: false });
  // Reported written; their fsync is batched, and it fails when its timer fires.
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  assert.deepEqual(await w.append('{"n":2}'), { ok: true });
  files.syncFails = true;
  await clock.advanceAsync(1000);
  files.syncFails = false;
  assert.equal(files.syncFailures, 1);
  assert.equal(files.durableText("/data/j.jsonl"), "");
  const errors = logLines.filter((l) => l.includes("may not survive"));
  // Before: [] -- the write's ERROR ("lines dropped until it works again") said nothing of the
  // lines already reported written.
  assert.equal(errors.length, 1, logLines.join("\n"));
  assert.match(
    errors[0]!,
    /^ERROR .*test journal: fsync of \/data\/j\.jsonl failed \(No space left on device \(os error 28\)\): the lines written to it since its last fsync may not survive a machine crash$/,
  );
  // Written again afterwards, and fsync'd.
  assert.deepEqual(await w.append('{"n":3}'), { ok: true });
  await clock.advanceAsync(1000);
  await w.close();
  assert.match(files.durableText("/data/j.jsonl"), /\{"n":3\}\n$/);
});

Deno.test("JournalWriter: a failed batched fsync drops no line: its one ERROR, no write-failed ERROR, the journal failing until an fsync works again", async () => {
  const files = new FaultyMemoryFiles();
  const { log, lines } = capturingLogger({ level: "info" });
  const clock = new ManualClock();
  const w = new JournalWriter({
    files,
    target: { path: PATH },
    name: "test journal",
    log,
    clock,
    maxQueuedLines: 100,
    syncIntervalMs: 1000,
  });
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  files.syncFails = true;
  await clock.advanceAsync(1000);
  files.syncFails = false;
  assert.equal(files.syncFailures, 1);
  assert.equal(w.status().state, "failing", "the last fsync failed");
  assert.equal(w.status().writeErrors, 1);
  assert.equal(w.status().lost, 0, "no line was dropped");
  // Before: a second ERROR, "test journal write failed (lines dropped until it works again)",
  // though every line was written and reported so; and "written again" at the next write.
  assert.deepEqual(
    lines.filter((l) => l.startsWith("ERROR")).map((l) => l.replace(/^ERROR +\S+ +/, "")),
    [
      "test journal: fsync of /data/j.jsonl failed (No space left on device (os error 28)): the " +
      "lines written to it since its last fsync may not survive a machine crash",
    ],
  );
  assert.deepEqual(await w.append('{"n":2}'), { ok: true });
  await clock.advanceAsync(1000);
  assert.equal(w.status().state, "ok");
  assert.deepEqual(
    lines.filter((l) => l.startsWith("INFO")).map((l) => l.replace(/^INFO +\S+ +/, "")),
    [
      "test journal: fsync of /data/j.jsonl works again (1 failed before)",
    ],
  );
  await w.close();
  assert.deepEqual(linesOf(files), ['{"n":1}', '{"n":2}']);
});

/** FaultyMemoryFiles whose first size read of a segment waits while `held` is set (a hung mount). */
class HeldSizeFiles extends FaultyMemoryFiles {
  held: Promise<void> | null = null;
  waiting = 0;
  override async fileSize(path: string): Promise<number> {
    if (this.held !== null) {
      this.waiting++;
      await this.held;
    }
    return await super.fileSize(path);
  }
}

Deno.test("JournalWriter: closed while open() waits on the disk, it removes no segment and creates no file once the disk answers", async () => {
  // Three segments of an earlier run; the newest is past maxFileBytes (a line longer than a
  // file, or a bound lowered since): an open now would begin segment 4 and prune by maxFiles 2.
  const files = new HeldSizeFiles();
  const dir = "/data/j";
  const seg = (n: number) => `${dir}/seg-0000000${n}.jsonl`;
  await writeSegments(
    files,
    [1, 2, 3].map((n) => [seg(n), { n, pad: "x".repeat(n === 3 ? 200 : 10) }] as const),
  );
  const before = (await files.listNames(dir)).sort();
  const segments = { dir, prefix: "seg", maxFileBytes: 100, maxFiles: 2 };
  const { w } = writer(files, { target: { segments } });
  await closeWhileOpening(
    files,
    () => w.open().catch(() => {}),
    () => w.close(), // the owner stops while the open waits
    "the open waits on the disk",
  );
  assert.deepEqual(
    (await files.listNames(dir)).sort(),
    before,
    "the closed writer's open went on: it pruned segments or began a new one",
  );
});

for (
  const [what, target] of [
    ["one file", { path: PATH }],
    ["segments", { segments: { dir: "/data/s", prefix: "seg", maxFileBytes: 1000, maxFiles: 3 } }],
  ] as const
) {
  Deno.test(`JournalWriter (${what}): an open() and a write begun together open one file handle, closed at close()`, async () => {
    // The run registry's rewrite opens its new runs file while a save may append to it.
    const files = new FaultyMemoryFiles();
    await files.ensureDir("/data");
    let handles = 0;
    const openAppend = files.openAppend.bind(files);
    files.openAppend = async (path: string) => {
      const h = await openAppend(path);
      handles++;
      return { ...h, close: () => (handles--, h.close()) };
    };
    const { w } = writer(files, { target });
    const appended = w.append('{"n":1}');
    await w.open();
    assert.deepEqual(await appended, { ok: true });
    await w.close();
    assert.equal(handles, 0, "a file handle of the closed writer is still open");
  });
}

Deno.test("JournalWriter: open() once closed makes no folder and opens no file", async () => {
  // An owner stopped before its opening began (the audit trail closed while it searched its
  // journal on a hung mount): the opening ends before any call on the disk.
  const files = new FaultyMemoryFiles();
  const segments = { dir: "/data/s", prefix: "seg", maxFileBytes: 1000, maxFiles: 3 };
  const { w } = writer(files, { target: { segments } });
  await w.close();
  await w.open();
  assert.deepEqual(await files.listNames("/data"), [], "the closed writer made its folder");
});

Deno.test("JournalWriter: two close() calls at once close once: one ERROR for the lines lost, the second waits for the first", async () => {
  const files = new FaultyMemoryFiles();
  const { w, logLines } = writer(files, { gaps: false });
  assert.deepEqual(await w.append('{"n":1}'), { ok: true });
  files.full = true; // the next write fails: its line is lost, its gap still to be said
  assert.equal((await w.append('{"n":2}')).ok, false);
  files.full = false;
  let firstDone = false;
  const first = w.close().then(() => (firstDone = true));
  const second = w.close().then(() => firstDone);
  assert.equal(await second, true, "the second close() resolved before the first");
  await first;
  // Before: the same ERROR twice (the second close ran the whole close again).
  assert.deepEqual(
    logLines.filter((l) => l.includes("lost and not recorded")).length,
    1,
    logLines.join("\n"),
  );
  await w.close(); // once closed: nothing more
  assert.equal(logLines.filter((l) => l.includes("lost and not recorded")).length, 1);
});
