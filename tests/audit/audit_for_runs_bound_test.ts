/**
 * The calls recorded `interrupted` that no start of the runs took (`for_runs`: the run registry
 * failed to start, then the runtime ended) are bounded. Across starts whose run registry fails,
 * each start adding the calls its crash left in flight, the trail keeps the newest
 * AUDIT_MAX_FOR_RUNS (a WARN names how many were dropped; found without a checkpoint listing them,
 * they are not counted in status().for_runs_dropped_total: audit_for_runs_found_test), where they
 * grew with every start. And
 * a checkpoint whose `for_runs` would pass AUDIT_MAX_ENTRY_BYTES is written all the same, listing
 * the newest that fit (a WARN names how many were left out), where it was not written at all and
 * the next start searched the journal's last 8 MiB. The run registry that fails is the trail's
 * interruptedTaken() never called, as the kernel does while runs.start fails.
 */
import assert from "node:assert/strict";
import {
  AUDIT_CHECKPOINT_BYTES,
  AUDIT_MAX_ENTRY_BYTES,
  AUDIT_MAX_FOR_RUNS,
  type AuditTrail,
} from "../../src/audit/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";
import { ahead, bigModeEntry as big, journalText, openTrail, withTempDir } from "./_rig.ts";

/** Calls each start leaves in flight when it ends without a close. */
const IN_FLIGHT = 100;

/** Writes IN_FLIGHT calls ahead (none settles) and waits until they are written; their ids. */
async function callsInFlight(t: AuditTrail, start: number): Promise<string[]> {
  const intents = await Promise.all(
    Array.from({ length: IN_FLIGHT }, (_, i) => t.writeAhead(ahead(start * 1000 + i))),
  );
  await t.query({ limit: 1 }); // written: the process then ends without a close
  return intents.map((intent) => {
    assert.ok(intent);
    return intent.id;
  });
}

Deno.test("AuditTrail keeps the newest AUDIT_MAX_FOR_RUNS calls recorded interrupted across starts whose run registry fails, with a WARN naming how many were dropped", async () => {
  await withTempDir("audit_for_runs_", async (dir) => {
    const time = new ManualClock();
    const files = new SwitchableFiles();
    const ended: AuditTrail[] = [];
    const ids: string[][] = [];
    try {
      let dropped = 0;
      for (let start = 0; ids.flat().length <= AUDIT_MAX_FOR_RUNS + 2 * IN_FLIGHT; start++) {
        const { log, lines } = capturingLogger({ level: "info", now: () => time.wall });
        const t = await openTrail(dir, { clock: time, log, files });
        ended.push(t);
        // The calls the earlier starts recorded interrupted (every start's but the last one's),
        // found in the journal; this start records the last one's: the newest are kept.
        const found = ids.slice(0, -1).flat();
        const kept = Math.min(found.length, AUDIT_MAX_FOR_RUNS - (ids.at(-1)?.length ?? 0));
        assert.deepEqual(
          t.earlierInterrupted().map((c) => c.intent),
          found.slice(found.length - kept),
          `start ${start}: the calls kept for the runs`,
        );
        // No checkpoint was written (each start ends before AUDIT_CHECKPOINT_BYTES): found as
        // `interrupted` entries no record lists for the runs, as in an older version's journal,
        // so their drop is said, not counted as the run registry's
        // (runtime_audit_for_runs_dropped_total; audit_for_runs_found_test counts those listed).
        assert.equal(t.status().for_runs_dropped_total, 0, `start ${start}: none counted`);
        const warns = lines.filter((l) => /AUDIT_MAX_FOR_RUNS/.test(l));
        if (found.length === kept) assert.deepEqual(warns, [], `start ${start}`);
        else {
          dropped++;
          assert.equal(warns.length, 1, `start ${start}: ${lines.join("\n")}`);
          assert.match(
            warns[0]!,
            new RegExp(`^WARN .*audit: ${found.length - kept} calls earlier starts recorded `),
          );
        }
        time.advance(10);
        ids.push(await callsInFlight(t, start));
      }
      assert.ok(dropped >= 2, `the starts passed AUDIT_MAX_FOR_RUNS ${dropped} times`);
    } finally {
      for (const t of ended) await t.close();
    }
  });
});

Deno.test("AuditTrail writes a checkpoint whose for_runs would pass AUDIT_MAX_ENTRY_BYTES, listing the newest that fit: the next start reads it, not the journal's tail", async () => {
  await withTempDir("audit_for_runs_", async (dir) => {
    const time = new ManualClock();
    const files = new SwitchableFiles();
    const { log, lines } = capturingLogger({ level: "info", now: () => time.wall });
    const first = await openTrail(dir, { clock: time, log, files });
    const ended = [first];
    try {
      const ids = await callsInFlight(first, 0);
      // The next start records them interrupted; its runs never take them.
      const second = await openTrail(dir, { clock: time, log, files });
      ended.push(second);
      assert.equal(second.earlierInterrupted().length, 0);
      const many = Math.ceil(AUDIT_CHECKPOINT_BYTES / 3900) + 10;
      for (let i = 0; i < many; i++) {
        time.advance(1);
        second.record(big(i));
      }
      await second.query({ limit: 1 }); // written; the process ends without a close
      const text = await journalText(dir);
      const checkpoints = text.split("\n").filter((l) => l.startsWith('{"covers":[],"checkpoint"'));
      assert.equal(checkpoints.length, 1, "no checkpoint written");
      const line = checkpoints[0]!;
      assert.ok(new TextEncoder().encode(line).length <= AUDIT_MAX_ENTRY_BYTES, line.slice(0, 200));
      const listed = (JSON.parse(line).for_runs as { intent: string }[]).map((r) => r.intent);
      assert.ok(listed.length > 0 && listed.length < IN_FLIGHT, `${listed.length} listed`);
      assert.deepEqual(listed, ids.slice(IN_FLIGHT - listed.length), "the newest are listed");
      const warns = lines.filter((l) => / do not fit in a checkpoint /.test(l));
      assert.equal(warns.length, 1, lines.join("\n"));
      assert.match(
        warns[0]!,
        new RegExp(`^WARN .*${IN_FLIGHT - listed.length} of the ${IN_FLIGHT} `),
      );
      // The start after reads that checkpoint: those it lists are given to the runs.
      files.bytesRead = 0;
      const third = await openTrail(dir, { clock: time, log, files });
      ended.push(third);
      assert.deepEqual(third.earlierInterrupted().map((c) => c.intent), listed);
      assert.ok(
        files.bytesRead <= (AUDIT_MAX_ENTRY_BYTES + 2) + AUDIT_CHECKPOINT_BYTES +
            4 * AUDIT_MAX_ENTRY_BYTES,
        `read ${files.bytesRead} bytes at start: the journal's tail was searched`,
      );
    } finally {
      for (const t of ended) await t.close();
    }
  });
});
