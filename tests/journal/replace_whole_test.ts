/**
 * replaceWhole (src/journal/replace_whole.ts), the one whole-file replacement over the journal
 * file port (runs.jsonl's rewrite, the incident ids not kept): the text is written beside the
 * file, fsync'd, closed, then renamed over it (the port's rename is durable: host's fsyncs the
 * folder, tests/host/durable_rename_test.ts); a failure leaves the old file and no temporary one.
 * Over a recording fake of the port (the port is the seam), and once over real files.
 */
import assert from "node:assert/strict";
import { replaceWhole } from "../../src/journal/mod.ts";
import { RealJournalFiles } from "../helpers/journal_files.ts";
import { tempDir } from "../helpers/kernel.ts";
import { RecordingMemoryFiles } from "../helpers/memory_files.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

const PATH = "/data/state.jsonl";

/** replaceWhole's options for a test that asserts on no line it logs. */
const QUIET = { log: capturingLogger().log };

/** Recording files whose /data/state.jsonl holds "old\n". */
async function withOldFile(): Promise<RecordingMemoryFiles> {
  const files = new RecordingMemoryFiles((p) => p.startsWith(PATH));
  const h = await files.openAppend(PATH);
  await h.append("old\n");
  h.close();
  files.calls.length = 0;
  return files;
}

Deno.test("replaceWhole writes the text beside the file, fsyncs and closes it, then renames it over the file", async () => {
  const files = await withOldFile();
  await replaceWhole(files, PATH, "new\n", QUIET);
  assert.deepEqual(files.calls, [
    "remove state.jsonl.tmp",
    "open state.jsonl.tmp",
    "append state.jsonl.tmp",
    "sync state.jsonl.tmp",
    "close state.jsonl.tmp",
    "rename state.jsonl.tmp state.jsonl",
  ]);
  assert.equal(files.text(PATH), "new\n");
  assert.deepEqual(await files.listNames("/data"), ["state.jsonl"]);
});

Deno.test("replaceWhole streams a writer's pieces, one append each, and fsyncs after the last", async () => {
  const files = await withOldFile();
  await replaceWhole(files, PATH, async (append) => {
    for (const line of ["a\n", "b\n", "c\n"]) await append(line);
  }, QUIET);
  assert.deepEqual(files.calls.slice(1, -1), [
    "open state.jsonl.tmp",
    "append state.jsonl.tmp",
    "append state.jsonl.tmp",
    "append state.jsonl.tmp",
    "sync state.jsonl.tmp",
    "close state.jsonl.tmp",
  ]);
  assert.equal(files.text(PATH), "a\nb\nc\n");
});

Deno.test("replaceWhole: an open, write, fsync or rename that fails leaves the old file as it was and no temporary file, and rejects with the error", async () => {
  for (const failing of ["open", "append", "sync", "rename"] as const) {
    const files = await withOldFile();
    files.failing = failing;
    await assert.rejects(
      replaceWhole(files, PATH, "new\n", QUIET),
      (err: Error) => err.message === `EIO: ${failing} failed (os error 5)`,
      failing,
    );
    assert.equal(files.text(PATH), "old\n", failing);
    assert.deepEqual(await files.listNames("/data"), ["state.jsonl"], failing);
    assert.equal(files.calls.at(-1), "remove state.jsonl.tmp", `${failing}: ${files.calls}`);
  }
  // A writer that throws: the same.
  const files = await withOldFile();
  await assert.rejects(
    replaceWhole(files, PATH, () => Promise.reject(new Error("writer failed")), QUIET),
    /writer failed/,
  );
  assert.equal(files.text(PATH), "old\n");
  assert.deepEqual(await files.listNames("/data"), ["state.jsonl"]);
});

Deno.test("replaceWhole: a close of the temporary file that throws hides no failed write and fails no fsync'd text", async () => {
  // A write that fails, then a close that throws: the write's error is the one rejected.
  for (const failing of ["append", "sync"] as const) {
    const files = await withOldFile();
    files.failing = failing;
    files.closeThrows = true;
    await assert.rejects(
      replaceWhole(files, PATH, "new\n", QUIET),
      (err: Error) => err.message === `EIO: ${failing} failed (os error 5)`,
      failing,
    );
    assert.equal(files.text(PATH), "old\n", failing);
    assert.deepEqual(await files.listNames("/data"), ["state.jsonl"], failing);
  }
  // Written and fsync'd, then a close that throws: the text replaces the file all the same.
  const files = await withOldFile();
  files.closeThrows = true;
  await replaceWhole(files, PATH, "new\n", QUIET);
  assert.deepEqual(files.calls.slice(-2), [
    "close state.jsonl.tmp",
    "rename state.jsonl.tmp state.jsonl",
  ]);
  assert.equal(files.text(PATH), "new\n");
  assert.deepEqual(await files.listNames("/data"), ["state.jsonl"]);
});

Deno.test("replaceWhole says a close of the temporary file that throws in one WARN naming the file and the error, after a failed write or a replacement that went on", async () => {
  for (const failing of ["append", null] as const) {
    const files = await withOldFile();
    files.failing = failing;
    files.closeThrows = true;
    const { log, lines } = capturingLogger({ level: "warn" });
    const replacing = replaceWhole(files, PATH, "new\n", { log });
    if (failing === null) await replacing;
    else await assert.rejects(replacing, /EIO: append failed/);
    assert.equal(files.text(PATH), failing === null ? "new\n" : "old\n", `${failing}`);
    assert.deepEqual(
      lines.map((l) => l.replace(/^(\w+)\s+\S+ /, "$1 ")),
      ["WARN closing /data/state.jsonl.tmp failed (EBADF: close failed): it is let go"],
      `${failing}`,
    );
  }
});

Deno.test("replaceWhole: a caller's goesOn throwing before a step (stopped meanwhile) ends it there: the old file kept, only its own temporary file removed", async () => {
  // goesOn is asked before the open, each append and the rename: the nth throws.
  const after = [
    ["remove state.jsonl.tmp"],
    ["remove state.jsonl.tmp", "open state.jsonl.tmp", "close state.jsonl.tmp"],
    [
      "remove state.jsonl.tmp",
      "open state.jsonl.tmp",
      "append state.jsonl.tmp",
      "close state.jsonl.tmp",
    ],
    [
      "remove state.jsonl.tmp",
      "open state.jsonl.tmp",
      "append state.jsonl.tmp",
      "append state.jsonl.tmp",
      "sync state.jsonl.tmp",
      "close state.jsonl.tmp",
    ],
  ];
  for (let n = 0; n < after.length; n++) {
    const files = await withOldFile();
    let asked = 0;
    const goesOn = () => {
      if (asked++ === n) throw new Error("stopped");
    };
    await assert.rejects(
      replaceWhole(files, PATH, async (append) => {
        for (const line of ["a\n", "b\n"]) await append(line);
      }, { ...QUIET, goesOn }),
      /stopped/,
    );
    assert.equal(files.text(PATH), "old\n", `step ${n}`);
    // Stopped before its open: a temporary file there now is not its own (not removed again).
    const removed = n === 0 ? [] : ["remove state.jsonl.tmp"];
    assert.deepEqual(files.calls, [...after[n]!, ...removed], `step ${n}`);
  }
});

Deno.test("replaceWhole over real files replaces the file whole, whatever a crash left beside it", async () => {
  const dir = tempDir();
  await Deno.writeTextFile(`${dir}/state.jsonl`, "old\n");
  await Deno.writeTextFile(`${dir}/state.jsonl.tmp`, "torn by a crash, longer than the new text");
  await replaceWhole(new RealJournalFiles(), `${dir}/state.jsonl`, "new\n", QUIET);
  assert.equal(await Deno.readTextFile(`${dir}/state.jsonl`), "new\n");
  assert.deepEqual([...Deno.readDirSync(dir)].map((e) => e.name), ["state.jsonl"]);
});
