/**
 * A rewrite of runs.jsonl that keeps failing (a rename refused, a full disk) is not tried again at
 * every close: the tries back off (RUNS_COMPACT_RETRY_CLOSES, doubling up to
 * RUNS_COMPACT_RETRY_MAX_CLOSES closes between two), and a rewrite that succeeds again resets it.
 */
import assert from "node:assert/strict";
import {
  RUN_NOT_RECORDED_SAVE_MAX_MS,
  RUN_NOT_RECORDED_SAVE_MS,
  RUNS_COMPACT_RETRY_CLOSES,
  RUNS_COMPACT_RETRY_MAX_CLOSES,
} from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { waitFor } from "../helpers/kernel.ts";
import { RecordingMemoryFiles } from "../helpers/memory_files.ts";
import { registryOn } from "./_run_fault_rig.ts";
import { RenameFaults } from "./_save_backoff_rig.ts";

Deno.test("a runs.jsonl rewrite that keeps failing is tried again after a backoff of closes, not at every close", async () => {
  const files = new RenameFaults();
  const registry = registryOn(files, { maxRuns: 1 });
  await registry.start();
  const lines = () => files.text("/data/runs.jsonl").split("\n").filter(Boolean).length;
  const openClose = async () => {
    const { run } = await registry.open({});
    await registry.close(run.run_id, {});
  };
  files.renameFails = true;
  // Past the rewrite threshold (4 x 1 kept run + 64 lines): the first try fails.
  while (files.renames === 0) await openClose();
  const closes = 400;
  for (let i = 0; i < closes; i++) await openClose();
  // Doubling from RUNS_COMPACT_RETRY_CLOSES: a handful of tries in 400 closes (before: 400).
  let bound = 0;
  for (let gap = RUNS_COMPACT_RETRY_CLOSES, n = 0; n < closes; bound++) {
    n += gap;
    gap = Math.min(2 * gap, RUNS_COMPACT_RETRY_MAX_CLOSES);
  }
  assert.ok(files.renames - 1 <= bound, `${files.renames - 1} rewrites tried in ${closes} closes`);
  assert.ok(files.renames > 1, "it is tried again");
  // Once the rename works again, the next try rewrites the file.
  files.renameFails = false;
  const grown = lines();
  for (let i = 0; i < RUNS_COMPACT_RETRY_MAX_CLOSES && lines() >= grown; i++) await openClose();
  assert.ok(lines() < 10, `runs.jsonl rewritten to the kept run (${lines()} lines)`);
  await registry.shutdown();
});

Deno.test("a runs.jsonl rewrite that failed after a save is tried again after RUNS_COMPACT_RETRY_CLOSES closes, not after as many saves", async () => {
  const files = new RenameFaults();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const maxRunBytes = 2000;
  const registry = registryOn(files, { clock, maxRunBytes });
  await registry.start();
  const text = () => files.text("/data/runs.jsonl").split("\n").filter(Boolean);
  let lost = 0;
  /** An event left out past runs.max_run_bytes, its count saved (a not_recorded record). */
  const save = async () => {
    registry.recordCall({
      first_time_epoch_ms: clock.nowMs(),
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      outcome: "ok",
      args: { duty: "x".repeat(maxRunBytes) },
    });
    lost++;
    const saved = () => text().at(-1)!.includes(`"count":${lost}`);
    // Saved within RUN_NOT_RECORDED_SAVE_MS; once the rewrite failed, the saves back off up to
    // RUN_NOT_RECORDED_SAVE_MAX_MS (the file is not rewritten: each one is a line for good).
    for (let waited = 0; waited < RUN_NOT_RECORDED_SAVE_MAX_MS && !saved();) {
      await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
      waited += RUN_NOT_RECORDED_SAVE_MS;
    }
    await waitFor("the count saved", saved);
  };
  try {
    const { run } = await registry.open({});
    files.renameFails = true;
    // Saves grow runs.jsonl past its bound (4 x 1 run + 64 lines): the rewrite is tried, fails.
    for (let i = 0; i < 200 && files.renames === 0; i++) await save();
    assert.equal(files.renames, 1, "the rewrite was tried once the saves made the file long");
    // Many more saves than RUNS_COMPACT_RETRY_CLOSES: no close, so no new try.
    for (let i = 0; i < 4 * RUNS_COMPACT_RETRY_CLOSES; i++) await save();
    // A serial operation (refused: no such run) runs after every rewrite the saves queued.
    await assert.rejects(registry.close("lab1-no-such-run", {}));
    assert.equal(files.renames, 1, "saves alone do not bring the next try closer");
    files.renameFails = false;
    await registry.close(run.run_id, {});
    let closes = 1;
    while (files.renames === 1 && closes <= RUNS_COMPACT_RETRY_MAX_CLOSES) {
      const next = (await registry.open({})).run;
      await registry.close(next.run_id, {});
      closes++;
    }
    assert.equal(closes, RUNS_COMPACT_RETRY_CLOSES + 1, "tried again after 8 closes, at the next");
    assert.ok(text().length < 4 * closes + 64, "runs.jsonl rewritten");
  } finally {
    await registry.shutdown();
  }
});

Deno.test("a runs.jsonl rewrite replaces it whole (replaceWhole): written beside, fsync'd, renamed over; a write that fails leaves the old file and no temporary one", async () => {
  const files = new RecordingMemoryFiles((p) => p.endsWith("/runs.jsonl.tmp"));
  const { log, lines } = capturingLogger({ level: "warn" });
  const registry = registryOn(files, { maxRuns: 1, logger: log });
  await registry.start();
  const openClose = async () => {
    const { run } = await registry.open({});
    await registry.close(run.run_id, {});
  };
  try {
    // Past the rewrite threshold (4 x 1 kept run + 64 lines).
    while (files.calls.length === 0) await openClose();
    assert.deepEqual(files.calls, [
      "remove runs.jsonl.tmp",
      "open runs.jsonl.tmp",
      "append runs.jsonl.tmp",
      "sync runs.jsonl.tmp",
      "close runs.jsonl.tmp",
      "rename runs.jsonl.tmp runs.jsonl",
    ]);
    // The next rewrite's write fails: the old file stays, whole, with no temporary file beside.
    files.calls.length = 0;
    files.failing = "append";
    let before = "";
    while (files.calls.length === 0) {
      before = files.text("/data/runs.jsonl");
      await openClose();
    }
    assert.ok(files.text("/data/runs.jsonl").startsWith(before), "the old file is kept");
    assert.ok(!(await files.listNames("/data")).includes("runs.jsonl.tmp"));
    assert.equal(files.calls.at(-1), "remove runs.jsonl.tmp");
    assert.equal(
      lines.filter((l) => /runs\.jsonl not rewritten: EIO: append failed/.test(l)).length,
      1,
      lines.join("\n"),
    );
  } finally {
    await registry.shutdown();
  }
});

Deno.test("a runs.jsonl rewrite whose temporary file's close throws renames the fsync'd text over it all the same, and says the close in one WARN naming the file and the error", async () => {
  const files = new RecordingMemoryFiles((p) => p.endsWith("/runs.jsonl.tmp"));
  files.closeThrows = true;
  const { log, lines } = capturingLogger({ level: "warn" });
  const registry = registryOn(files, { maxRuns: 1, logger: log });
  await registry.start();
  const openClose = async () => {
    const { run } = await registry.open({});
    await registry.close(run.run_id, {});
  };
  try {
    // Past the rewrite threshold (4 x 1 kept run + 64 lines).
    while (files.calls.length === 0) await openClose();
    assert.deepEqual(files.calls.slice(-3), [
      "sync runs.jsonl.tmp",
      "close runs.jsonl.tmp",
      "rename runs.jsonl.tmp runs.jsonl",
    ]);
    assert.ok(!(await files.listNames("/data")).includes("runs.jsonl.tmp"));
    // Before: nothing said of the handle let go with an error.
    const warned = lines.filter((l) => l.includes("runs.jsonl.tmp"));
    assert.equal(warned.length, 1, lines.join("\n"));
    assert.match(
      warned[0]!,
      /^WARN .*closing \/data\/runs\.jsonl\.tmp failed \(EBADF: close failed\): it is let go$/,
    );
  } finally {
    await registry.shutdown();
  }
});
