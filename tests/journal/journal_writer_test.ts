/**
 * JournalWriter over real files: one write per tick of appends, fsync before an answer only when
 * asked (else batched by timer), a torn last line never spoils the next, rotation with max files
 * kept, the queue bound, a full disk (an injected file port) that drops, counts and records the
 * gap once writing resumes, and close.
 */
import assert from "node:assert/strict";
import {
  type JournalAppendHandle,
  type JournalGap,
  JournalLineCount,
  JournalWriter,
} from "../../src/journal/mod.ts";
import { journalFiles } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  InterceptedAppends,
  type RealJournalFiles,
  SwitchableFiles,
} from "../helpers/journal_files.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "journal_writer_" });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function writer(
  files: RealJournalFiles,
  target: ConstructorParameters<typeof JournalWriter>[0]["target"],
  o: {
    clock?: ManualClock;
    maxQueuedLines?: number;
    gapLine?: (g: JournalGap) => string;
    gapMark?: () => number;
    level?: "info" | "warn";
  } = {},
) {
  const { log, lines } = capturingLogger({ level: o.level ?? "warn" });
  const w = new JournalWriter({
    files,
    target,
    name: "test journal",
    log,
    clock: o.clock ?? new ManualClock(),
    maxQueuedLines: o.maxQueuedLines ?? 100,
    syncIntervalMs: 1000,
    gapLine: o.gapLine,
    gapMark: o.gapMark,
  });
  return { w, logLines: lines };
}

const fileLines = async (path: string) => (await Deno.readTextFile(path)).split("\n");

Deno.test("JournalWriter writes the lines appended in one tick with one write and resolves them once written", async () => {
  await withDir(async (dir) => {
    const files = new SwitchableFiles();
    const clock = new ManualClock();
    const { w } = writer(files, { path: `${dir}/j.jsonl` }, { clock });
    const results = await Promise.all([w.append('{"a":1}'), w.append('{"b":2}'), w.append("{}")]);
    assert.deepEqual(results, [{ ok: true }, { ok: true }, { ok: true }]);
    assert.equal(files.appends, 1);
    assert.deepEqual(await fileLines(`${dir}/j.jsonl`), ['{"a":1}', '{"b":2}', "{}", ""]);
    // Not fsync'd yet: the fsync is batched by the timer.
    assert.equal(files.syncs, 0);
    assert.deepEqual(clock.pendingDueTimes(), [clock.mono + 1000]);
    await clock.advanceAsync(999);
    assert.equal(files.syncs, 0);
    await clock.advanceAsync(1);
    assert.equal(files.syncs, 1, "the batched fsync, syncIntervalMs after the write");
    await w.close();
    assert.ok(files.syncs >= 1);
    assert.equal(clock.pendingTimers, 0);
    assert.equal(w.status().linesWritten, 3);
  });
});

Deno.test("JournalWriter with sync resolves only after the fsync", async () => {
  await withDir(async (dir) => {
    const files = new SwitchableFiles();
    const { w } = writer(files, { path: `${dir}/j.jsonl` });
    const result = await w.append('{"marker":1}', { sync: true });
    assert.deepEqual(result, { ok: true });
    assert.equal(files.syncs, 1);
    await w.close();
  });
});

Deno.test("JournalWriter starts on a new line after a torn last line and says so once in an INFO naming the file", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/j.jsonl`;
    await Deno.writeTextFile(path, '{"ok":1}\n{"to');
    const { w, logLines } = writer(new SwitchableFiles(), { path }, { level: "info" });
    await w.append('{"next":2}');
    await w.append('{"next":3}');
    await w.close();
    assert.deepEqual(await fileLines(path), ['{"ok":1}', '{"to', '{"next":2}', '{"next":3}', ""]);
    assert.deepEqual(logLines.map((l) => l.replace(/^(\S+)\s+\S+\s+/, "$1 ")), [
      `INFO test journal: ${path} ended in a torn last line (no newline, as a crash leaves it): ` +
      "ended it with a newline, readers skip that line as unreadable",
    ]);
    // The file now ends with a newline: a writer opening it again has nothing to say.
    const again = writer(new SwitchableFiles(), { path }, { level: "info" });
    await again.w.append('{"next":4}');
    await again.w.close();
    assert.deepEqual(again.logLines, []);
    assert.equal((await fileLines(path)).length, 6);
  });
});

Deno.test("JournalWriter says nothing of a segment that ends with a newline, and names the torn one", async () => {
  await withDir(async (dir) => {
    const segments = { dir: `${dir}/j`, prefix: "seg", maxFileBytes: 100, maxFiles: 3 };
    const files = new SwitchableFiles();
    const first = writer(files, { segments }, { level: "info" });
    await first.w.append('{"n":1}');
    await first.w.close();
    assert.deepEqual(first.logLines, []);
    const [name] = [...Deno.readDirSync(segments.dir)].map((e) => e.name);
    const path = `${segments.dir}/${name}`;
    await Deno.writeTextFile(path, '{"t', { append: true });
    const second = writer(files, { segments }, { level: "info" });
    await second.w.append('{"n":2}');
    await second.w.append('{"n":3}');
    await second.w.close();
    assert.deepEqual(await fileLines(path), ['{"n":1}', '{"t', '{"n":2}', '{"n":3}', ""]);
    assert.equal(second.logLines.length, 1);
    assert.match(second.logLines[0]!, /^INFO\b/);
    assert.ok(second.logLines[0]!.includes(`test journal: ${path} ended in a torn last line`));
  });
});

Deno.test("JournalWriter refuses an append past maxQueuedLines at once and counts it", async () => {
  await withDir(async (dir) => {
    const files = new SwitchableFiles();
    let release!: () => void;
    files.gate = null;
    const { w, logLines } = writer(files, { path: `${dir}/j.jsonl` }, { maxQueuedLines: 2 });
    // The first write is held in the file system; two more wait in the queue.
    const held = new Promise<void>((r) => release = r);
    const original = files.openAppend.bind(files);
    files.openAppend = async (p: string) => {
      const h = await original(p);
      return { ...h, append: async (t: string) => (await held, h.append(t)) };
    };
    const first = w.append("{}");
    await waitFor("the first line taken into a write", () => w.status().queued === 0);
    const queued = [w.append("{}"), w.append("{}")];
    assert.equal(w.hasRoom(), false);
    assert.deepEqual(await w.append('{"late":1}'), {
      ok: false,
      reason: "test journal: 2 lines waiting for the disk",
    });
    assert.equal(w.status().lost, 1);
    assert.equal(logLines.filter((l) => l.startsWith("ERROR")).length, 1);
    release();
    assert.deepEqual(await Promise.all([first, ...queued]), [{ ok: true }, { ok: true }, {
      ok: true,
    }]);
    await w.close();
  });
});

Deno.test("JournalWriter on a full disk drops and counts, then writes the gap line where the loss began: before the lines of the first write that succeeds", async () => {
  await withDir(async (dir) => {
    const files = new SwitchableFiles();
    const gaps: JournalGap[] = [];
    const { w, logLines } = writer(files, { path: `${dir}/j.jsonl` }, {
      gapLine: (g) => (gaps.push(g), JSON.stringify({ gap: g.lines })),
      gapMark: () => 7,
    });
    await w.append('{"n":1}');
    files.full = true;
    const lost = await Promise.all([w.append('{"n":2}'), w.append('{"n":3}')]);
    assert.ok(lost.every((r) => !r.ok && /No space left on device/.test(r.reason)));
    // Bookkeeping lines (counted: false) are not part of the gap.
    assert.equal((await w.append('{"intent":1}', { counted: false })).ok, false);
    const failing = w.status();
    assert.equal(failing.state, "failing");
    assert.equal(failing.lost, 2);
    assert.equal(failing.gapPending, 2);
    assert.ok(failing.writeErrors >= 1);
    assert.match(failing.lastError ?? "", /j\.jsonl\): No space left on device/);
    files.full = false;
    assert.deepEqual(await w.append('{"n":4}'), { ok: true });
    await w.close();
    assert.deepEqual(await fileLines(`${dir}/j.jsonl`), ['{"n":1}', '{"gap":2}', '{"n":4}', ""]);
    // Made for each write tried while it was pending (the failed one of the bookkeeping line too),
    // with the mark of its first loss.
    assert.deepEqual(gaps.map((g) => [g.lines, g.mark]), [[2, 7], [2, 7]]);
    assert.match(gaps[1]!.reason, /No space left on device/);
    assert.equal(w.status().gapPending, 0);
    assert.equal(w.status().state, "ok");
    assert.equal(logLines.filter((l) => l.startsWith("WARN")).length, 1);
    assert.match(logLines.find((l) => l.startsWith("WARN"))!, /2 lines were lost before/);
  });
});

Deno.test("JournalWriter rotates segments at maxFileBytes and keeps maxFiles", async () => {
  await withDir(async (dir) => {
    const files = new SwitchableFiles();
    const segments = { dir: `${dir}/j`, prefix: "seg", maxFileBytes: 100, maxFiles: 2 };
    const { w } = writer(files, { segments });
    const line = JSON.stringify({ pad: "x".repeat(30) }); // 42 bytes + newline
    for (let i = 0; i < 7; i++) await w.append(line);
    await w.close();
    const names = (await journalFiles.listNames(`${dir}/j`)).sort();
    // Two lines per file: files 1..4, of which 3 and 4 are kept.
    assert.deepEqual(names, ["seg-00000003.jsonl", "seg-00000004.jsonl"]);
    assert.equal((await fileLines(`${dir}/j/seg-00000003.jsonl`)).length, 3);
    assert.equal((await fileLines(`${dir}/j/seg-00000004.jsonl`)).length, 2);
  });
});

Deno.test("JournalWriter.close writes what is queued, fsyncs, and refuses appends after", async () => {
  await withDir(async (dir) => {
    const files = new SwitchableFiles();
    const clock = new ManualClock();
    const { w } = writer(files, { path: `${dir}/j.jsonl` }, { clock });
    const pending = w.append("{}");
    await w.close();
    assert.deepEqual(await pending, { ok: true });
    assert.equal(files.syncs, 1);
    assert.equal(clock.pendingTimers, 0);
    assert.deepEqual(await w.append("{}"), { ok: false, reason: "test journal is closed" });
  });
});

Deno.test("JournalWriter.close accepts and writes the lines appended while it writes: refused only once it is done", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/j.jsonl`;
    // The close's write held on the disk until the test lets it go: the appends below come while
    // the close is under way, not before it nor after it.
    let release!: () => void;
    const held = new Promise<void>((r) => release = r);
    let writesHeld = 0;
    const files = new InterceptedAppends("j.jsonl", async (text, append) => {
      if (writesHeld++ === 0) await held;
      await append(text);
    });
    const { w } = writer(files, { path });
    const before = w.append('{"n":1}');
    const closing = w.close();
    const sameTick = w.append('{"n":2}');
    await waitFor("the close's write reaches the disk", () => writesHeld === 1);
    const whileWriting = w.append('{"n":3}');
    release();
    await closing;
    // Before: the close refused them at once ("test journal is closed") while it still wrote.
    assert.deepEqual(await Promise.all([before, sameTick, whileWriting]), [
      { ok: true },
      { ok: true },
      { ok: true },
    ]);
    assert.deepEqual(await fileLines(path), ['{"n":1}', '{"n":2}', '{"n":3}', ""]);
    assert.equal(w.status().linesWritten, 3);
    assert.deepEqual(await w.append("{}"), { ok: false, reason: "test journal is closed" });
  });
});

/** SwitchableFiles whose handles' close throws while `closeFails` is set (an NFS mount's EIO). */
class FailingCloseFiles extends SwitchableFiles {
  closeFails = false;
  opens = 0;
  closeFailures = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    this.opens++;
    const handle = await super.openAppend(path);
    return {
      append: (text: string) => handle.append(text),
      sync: () => handle.sync(),
      truncate: (size: number) => handle.truncate(size),
      close: () => {
        handle.close();
        if (!this.closeFails) return;
        this.closeFailures++;
        throw new Error("Input/output error (os error 5)");
      },
    };
  }
}

Deno.test("JournalWriter: a handle whose close throws after a failed fsync is one WARN naming the file; the journal goes on with a new handle", async () => {
  await withDir(async (dir) => {
    const path = `${dir}/j.jsonl`;
    const files = new FailingCloseFiles();
    const clock = new ManualClock();
    const { w, logLines } = writer(files, { path }, { clock });
    assert.deepEqual(await w.append('{"n":1}'), { ok: true });
    // The batched fsync fails, and so does the close of the handle it drops.
    files.full = true;
    files.closeFails = true;
    await clock.advanceAsync(1000);
    files.full = false;
    files.closeFails = false;
    // Before: the close's error left the write loop rejected, awaited by nobody: an uncaught
    // error failing this test (the runtime's process, in production).
    assert.equal(files.closeFailures, 1, "the dropped handle's close threw");
    const warned = logLines.filter((l) => l.includes("closing"));
    assert.equal(warned.length, 1, logLines.join("\n"));
    assert.equal(
      warned[0]!.replace(/^WARN +\S+ +/, ""),
      `test journal: closing ${path} failed (Input/output error (os error 5)): it is let go, ` +
        "the next write opens it again",
    );
    assert.match(warned[0]!, /^WARN /);
    // Written again, through a handle opened anew.
    assert.deepEqual(await w.append('{"n":2}', { sync: true }), { ok: true });
    assert.equal(files.opens, 2, "a new handle for the next write");
    await w.close();
    assert.deepEqual(await fileLines(path), ['{"n":1}', '{"n":2}', ""]);
  });
});

/**
 * Memory files whose appends to a.jsonl wait for `held` (then fail while `heldFails`), and to
 * b.jsonl fail while `failing`.
 */
class HeldOrFailing extends MemoryFiles {
  readonly held = Promise.withResolvers<void>();
  heldFails = false;
  failing = false;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    return {
      append: async (text: string) => {
        if (path.endsWith("a.jsonl")) {
          await this.held.promise;
          if (this.heldFails) throw new Error("EIO: append failed");
        }
        if (this.failing && path.endsWith("b.jsonl")) throw new Error("EIO: append failed");
        await h.append(text);
      },
      sync: () => h.sync(),
      truncate: (n: number) => h.truncate(n),
      close: () => h.close(),
    };
  }
}

Deno.test("JournalWriter counts its lines in a JournalLineCount it shares: being written while the write is under way, written once it is, and a failed write's lines never written", async () => {
  const { count, files, a, b } = await countedPair();
  const first = [a.append("1"), a.append("2")];
  await waitFor("a's write under way", () => count.writing === 2);
  assert.deepEqual({ ...count }, { written: 0, writing: 2 });
  assert.deepEqual(await b.append("3"), { ok: true });
  assert.deepEqual({ ...count }, { written: 1, writing: 2 }, "b's line counted with a's");
  files.held.resolve();
  await Promise.all(first);
  assert.deepEqual({ ...count }, { written: 3, writing: 0 });
  files.failing = true;
  assert.equal((await b.append("4")).ok, false);
  assert.deepEqual(
    { ...count },
    { written: 3, writing: 0 },
    "a failed write's line is not written",
  );
  await a.close();
  await b.close();
});

Deno.test("JournalLineCount.since counts the lines of the writes begun after it, never those of a write under way then, however that write ends", async () => {
  for (const heldFails of [true, false]) {
    const { count, files, a, b } = await countedPair();
    files.heldFails = heldFails;
    const underWay = [a.append("1"), a.append("2"), a.append("3")];
    await waitFor("a's write under way", () => count.writing === 3);
    const since = count.since();
    assert.deepEqual(await b.append("4"), { ok: true });
    files.held.resolve();
    const results = await Promise.all(underWay);
    assert.deepEqual(results.map((r) => r.ok), [!heldFails, !heldFails, !heldFails]);
    // Before (the lines written less those written or being written at the start): -2, read as
    // none, when a's write failed.
    assert.equal(since(), 1, `b's line alone (a's write ${heldFails ? "failed" : "written"})`);
    assert.deepEqual(await b.append("5"), { ok: true });
    assert.equal(since(), 2);
    assert.equal(count.written, heldFails ? 2 : 5);
    await a.close();
    await b.close();
  }
});

/**
 * Two writers, of /data/a.jsonl (`a`) and /data/b.jsonl (`b`), over the one HeldOrFailing `files`,
 * counting their lines in the one JournalLineCount `count`.
 */
async function countedPair() {
  const count = new JournalLineCount();
  const { log } = capturingLogger({ level: "error" });
  const files = new HeldOrFailing();
  await files.ensureDir("/data");
  const writerOf = (path: string) =>
    new JournalWriter({
      files,
      target: { path },
      name: path,
      log,
      clock: new ManualClock(),
      maxQueuedLines: 100,
      syncIntervalMs: 1000,
      lineCount: count,
    });
  return { count, files, a: writerOf("/data/a.jsonl"), b: writerOf("/data/b.jsonl") };
}
