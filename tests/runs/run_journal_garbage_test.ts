/**
 * A runs.jsonl damaged over many lines (a garbage file copied over it, a disk fault) is replayed
 * with bounded logging and memory: the first RUNS_CORRUPT_LINES_NAMED skipped lines are named one
 * by one (a WARN each, and in the startup report), the rest counted in one WARN; the runs it still
 * holds are served.
 */
import assert from "node:assert/strict";
import { RUNS_CORRUPT_LINES_NAMED } from "../../src/runs/mod.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";
import type { Logger } from "../../src/common/mod.ts";

function recording(lines: string[]): Logger {
  const l: Logger = {
    debug: () => {},
    info: () => {},
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
    child: () => l,
  };
  return l;
}

Deno.test("RunRegistry replay of a runs.jsonl with many corrupt lines names the first ones and counts the rest in one WARN", async () => {
  const files = new RunJournalFaultFiles();
  const first = registryOn(files);
  await first.start();
  const { run } = await first.open({ experiment_label: "kept" });
  await first.close(run.run_id, {});
  await first.shutdown();
  const garbage = RUNS_CORRUPT_LINES_NAMED + 500;
  const journal = await files.openAppend("/data/runs.jsonl");
  await journal.append("\u0000garbage\n".repeat(garbage));
  journal.close();

  const logs: string[] = [];
  const registry = registryOn(files, { logger: recording(logs) });
  await registry.start();
  try {
    const corrupt = logs.filter((l) => l.includes("corrupt run journal line"));
    assert.equal(
      corrupt.length,
      RUNS_CORRUPT_LINES_NAMED + 1,
      "one WARN a named line, one for the rest",
    );
    assert.match(corrupt.at(-1)!, /500 more corrupt run journal lines skipped/);
    const report = registry.startupReport();
    assert.equal(report.corruptLines.length, RUNS_CORRUPT_LINES_NAMED);
    assert.equal(report.corruptLines[0], "/data/runs.jsonl:3");
    assert.equal(report.corruptLineCount, garbage);
    assert.equal(
      (await registry.get(run.run_id)).run.state,
      "closed",
      "the runs it holds are served",
    );
  } finally {
    await registry.shutdown();
  }
});
