/**
 * What a start says and counts of the calls recorded `interrupted` it does not keep for the runs
 * (AUDIT_MAX_FOR_RUNS): only those a checkpoint or a closing record listed for the runs (no start
 * of the runs had taken them) are the run registry's drops, counted in
 * status().for_runs_dropped_total (runtime_audit_for_runs_dropped_total) with the WARN `audit: N
 * calls recorded interrupted that no start of the runs took ... dropped`. The calls a start records
 * interrupted itself are each given to its own run registry as they are recorded: none is dropped,
 * however many an older version's journal (no checkpoint) leaves in flight. (The `interrupted`
 * entries of such a journal: audit_search_bound_test.)
 */
import assert from "node:assert/strict";
import { AUDIT_MAX_FOR_RUNS, AUDIT_MAX_FOUND_UNSETTLED, AuditTrail } from "../../src/audit/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";
import { withTempDir } from "./_rig.ts";

const SEGMENT = "audit-00000001.jsonl";

/** A write-ahead record of this trail's form (of an earlier process), of function `f<i>`. */
function intentRecord(i: number): { intent: string } & Record<string, unknown> {
  return {
    intent: `c0ffee00.${i}`,
    time_epoch_ms: 1_700_000_000_000 + i,
    origin: { kind: "automation", node: "Main" },
    device_handle: "sim0/motorctl0",
    function: `f${i}`,
    args: {},
    mode: "AUTO",
  };
}

/**
 * A trail opened on `dir` as a runtime opens it: its entry listener (the run registry's) set
 * before the journal is opened; the `interrupted` entries it heard, and the log lines.
 */
async function start(dir: string) {
  const time = new ManualClock();
  const { log, lines } = capturingLogger({ level: "info", now: () => time.wall });
  const t = new AuditTrail({ clock: time, log, mode: () => "AUTO" });
  const heard: string[] = [];
  t.onEntry((e, intents) => {
    if (e.outcome === "interrupted") heard.push(intents[0]!);
  });
  await t.openJournal({ dir, files: new SwitchableFiles(), maxFileBytes: 1 << 24, maxFiles: 2 });
  return { t, lines, heard };
}

Deno.test("AuditTrail's start drops none of the calls it records interrupted itself, more than AUDIT_MAX_FOR_RUNS of an older version's journal: no WARN of a run registry's drop, none counted", async () => {
  await withTempDir("audit_for_runs_found_", async (dir) => {
    // An older version's journal (no checkpoint, no closing record) that a crash left with more
    // calls written ahead without an outcome than AUDIT_MAX_FOR_RUNS.
    const n = AUDIT_MAX_FOR_RUNS + 44;
    assert.ok(n <= AUDIT_MAX_FOUND_UNSETTLED);
    const lines = Array.from({ length: n }, (_, i) => JSON.stringify(intentRecord(i + 1)));
    await Deno.writeTextFile(`${dir}/${SEGMENT}`, lines.join("\n") + "\n");
    const { t, lines: logged, heard } = await start(dir);
    try {
      // Each recorded interrupted, and heard by the run registry's listener as it is.
      assert.equal(heard.length, n);
      const page = await t.query({ limit: 1000 });
      assert.equal(page.entries.filter((e) => e.outcome === "interrupted").length, n);
      // No run registry failed nor dropped anything: nothing says so, nothing counts it.
      const drops = logged.filter((l) => /AUDIT_MAX_FOR_RUNS/.test(l));
      assert.deepEqual(drops, [], drops.join("\n"));
      assert.equal(t.status().for_runs_dropped_total, 0);
    } finally {
      await t.close();
    }
  });
});

Deno.test("AuditTrail's start counts as the run registry's drops the calls a checkpoint listed for the runs that it does not keep (past AUDIT_MAX_FOR_RUNS with the calls it records interrupted)", async () => {
  await withTempDir("audit_for_runs_found_", async (dir) => {
    // A checkpoint listing `listed` calls no start of the runs took, then `after` calls written
    // ahead without an outcome (recorded interrupted by this start): the newest kept.
    const listed = 40;
    const after = AUDIT_MAX_FOR_RUNS - 16;
    const forRuns = Array.from({ length: listed }, (_, i) => ({ ...intentRecord(i + 1), seq: i }));
    const checkpoint = JSON.stringify({
      covers: [],
      checkpoint: 1_700_000_000_000,
      open: [],
      for_runs: forRuns,
    });
    const lines = [
      checkpoint,
      ...Array.from({ length: after }, (_, i) => JSON.stringify(intentRecord(1000 + i))),
    ];
    await Deno.writeTextFile(`${dir}/${SEGMENT}`, lines.join("\n") + "\n");
    const { t, lines: logged, heard } = await start(dir);
    try {
      assert.equal(heard.length, after);
      const kept = AUDIT_MAX_FOR_RUNS - after;
      assert.deepEqual(
        t.earlierInterrupted().map((c) => c.intent),
        forRuns.slice(listed - kept).map((r) => r.intent),
        "the newest listed are kept for the runs",
      );
      assert.equal(t.status().for_runs_dropped_total, listed - kept);
      const drops = logged.filter((l) => /AUDIT_MAX_FOR_RUNS/.test(l));
      assert.equal(drops.length, 1, drops.join("\n"));
      assert.match(
        drops[0]!,
        new RegExp(`^WARN .*audit: ${listed - kept} calls recorded interrupted that no start `),
      );
    } finally {
      await t.close();
    }
  });
});
