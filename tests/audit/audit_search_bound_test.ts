/**
 * The start's search of the journal's tail (AUDIT_RECOVERY_SCAN_BYTES, 8 MiB) keeps what it finds
 * bounded by count, not only by the bytes it reads: 8 MiB holds tens of thousands of short lines,
 * each a parsed object in memory, then an `interrupted` entry and a WARN each. Write-ahead records
 * without an outcome: the newest AUDIT_MAX_FOUND_UNSETTLED within AUDIT_MAX_FOUND_BYTES of their
 * lines, the oldest passed over with one WARN; of those recorded interrupted, the first
 * AUDIT_INTERRUPTED_WARN_LINES said one WARN each, the rest counted in one.
 * Calls an earlier start recorded `interrupted` (for the runs): the newest AUDIT_MAX_FOR_RUNS, the
 * oldest counted and said as the drops past that bound at openJournal are; a checkpoint clears
 * what was passed over before it. Journals of an older version (no checkpoint, no closing record),
 * made as the test needs them.
 */
import assert from "node:assert/strict";
import {
  AUDIT_INTERRUPTED_WARN_LINES,
  AUDIT_MAX_ENTRY_BYTES,
  AUDIT_MAX_FOR_RUNS,
  AUDIT_MAX_FOUND_BYTES,
  AUDIT_MAX_FOUND_UNSETTLED,
  type AuditTrail,
} from "../../src/audit/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { ahead, openTrail, withTempDir } from "./_rig.ts";

const SEGMENT = "audit-00000001.jsonl";

/**
 * A write-ahead record of this trail's form, of function `f<i>` (so its WARN names it), its args
 * `args`.
 */
function intentLine(i: number, args: Record<string, unknown> = {}): string {
  return JSON.stringify({
    intent: `c0ffee00.${i}`,
    time_epoch_ms: 1_700_000_000_000 + i,
    origin: { kind: "automation", node: "Main" },
    device_handle: "sim0/motorctl0",
    function: `f${i}`,
    args,
    mode: "AUTO",
  });
}

/** The functions of the `interrupted` entries a start recorded, oldest first. */
async function interruptedFunctions(t: AuditTrail): Promise<unknown[]> {
  const page = await t.query({ limit: 1000 });
  return page.entries.filter((e) => e.outcome === "interrupted").map((e) => e.function);
}

Deno.test("AuditTrail's start keeps the newest AUDIT_MAX_FOUND_UNSETTLED write-ahead records without an outcome of the journal's tail: the oldest passed over with one WARN, not an entry and a WARN each", async () => {
  await withTempDir("audit_search_bound_", async (dir) => {
    const many = AUDIT_MAX_FOUND_UNSETTLED * 8;
    const lines = Array.from({ length: many }, (_, i) => intentLine(i + 1));
    await Deno.writeTextFile(`${dir}/${SEGMENT}`, lines.join("\n") + "\n");
    const time = new ManualClock();
    const { log, lines: logged } = capturingLogger({ level: "info", now: () => time.wall });
    const t = await openTrail(dir, { clock: time, log });
    try {
      const kept = AUDIT_MAX_FOUND_UNSETTLED;
      assert.deepEqual(
        await interruptedFunctions(t),
        Array.from({ length: kept }, (_, i) => `f${many - kept + i + 1}`),
        "the newest recorded interrupted, in order",
      );
      const each = logged.filter((l) => / was written ahead by an earlier process /.test(l));
      assert.equal(each.length, AUDIT_INTERRUPTED_WARN_LINES, "a WARN each for the first ones");
      const rest = logged.filter((l) => /AUDIT_INTERRUPTED_WARN_LINES/.test(l));
      assert.equal(rest.length, 1, "one WARN for the rest");
      assert.match(
        rest[0]!,
        new RegExp(
          `^WARN .*audit: ${kept - AUDIT_INTERRUPTED_WARN_LINES} more calls .*` +
            `\\(one line each for the first ${AUDIT_INTERRUPTED_WARN_LINES}.* ${kept} in all\\)`,
        ),
      );
      const passed = logged.filter((l) => /AUDIT_MAX_FOUND_UNSETTLED/.test(l));
      assert.equal(passed.length, 1, logged.slice(0, 5).join("\n"));
      assert.match(passed[0]!, new RegExp(`^WARN .*the ${many - kept} oldest passed over`));
    } finally {
      await t.close();
    }
  });
});

Deno.test("AuditTrail's start keeps the write-ahead records without an outcome of the journal's tail within AUDIT_MAX_FOUND_BYTES of their lines: the oldest of long ones passed over", async () => {
  await withTempDir("audit_search_bound_", async (dir) => {
    // Lines of ~15 KB (within AUDIT_MAX_ENTRY_BYTES), thousands of keys each: far fewer than
    // AUDIT_MAX_FOUND_UNSETTLED fill the bytes.
    const args = Object.fromEntries(Array.from({ length: 1300 }, (_, k) => [`k${k}`, k]));
    const lineBytes = intentLine(1000, args).length + 1;
    assert.ok(lineBytes < AUDIT_MAX_ENTRY_BYTES, `${lineBytes}`);
    const kept = Math.floor(AUDIT_MAX_FOUND_BYTES / lineBytes);
    assert.ok(kept < AUDIT_MAX_FOUND_UNSETTLED, `${kept}`);
    const many = kept * 3;
    const lines = Array.from({ length: many }, (_, i) => intentLine(1000 + i, args));
    await Deno.writeTextFile(`${dir}/${SEGMENT}`, lines.join("\n") + "\n");
    const time = new ManualClock();
    const { log, lines: logged } = capturingLogger({ level: "info", now: () => time.wall });
    const t = await openTrail(dir, { clock: time, log });
    try {
      assert.deepEqual(
        await interruptedFunctions(t),
        Array.from({ length: kept }, (_, i) => `f${1000 + many - kept + i}`),
        "the newest recorded interrupted, in order",
      );
      const passed = logged.filter((l) => /AUDIT_MAX_FOUND_BYTES/.test(l));
      assert.equal(passed.length, 1, logged.slice(0, 5).join("\n"));
      assert.match(passed[0]!, new RegExp(`^WARN .*the ${many - kept} oldest passed over`));
    } finally {
      await t.close();
    }
  });
});

/**
 * Starts that each record interrupted the `n` calls the one before left in flight, then leave `n`
 * of their own (no close; their runs never take them): `rounds` * `n` `interrupted` entries, each
 * under AUDIT_MAX_FOUND_UNSETTLED.
 */
async function interruptedByStarts(
  dir: string,
  time: ManualClock,
  rounds: number,
  n: number,
): Promise<void> {
  const trails: AuditTrail[] = [];
  try {
    for (let i = 0; i <= rounds; i++) {
      const t = await openTrail(dir, { clock: time });
      trails.push(t);
      if (i < rounds) {
        await Promise.all(Array.from({ length: n }, (_, k) => t.writeAhead(ahead(i * n + k))));
      }
      await t.query({ limit: 1 }); // written; the process ends without a close
    }
  } finally {
    for (const t of trails) await t.close();
  }
}

/** The journal without its checkpoints and closing records (as an older version wrote it). */
async function withoutMarkers(dir: string, insert?: (lines: string[]) => string[]): Promise<void> {
  const path = `${dir}/${SEGMENT}`;
  const lines = (await Deno.readTextFile(path)).split("\n").filter((l) =>
    l !== "" && !l.startsWith('{"covers":[],')
  );
  await Deno.writeTextFile(path, (insert ? insert(lines) : lines).join("\n") + "\n");
}

async function thirdStart(dir: string, time: ManualClock) {
  const { log, lines } = capturingLogger({ level: "info", now: () => time.wall });
  const t: AuditTrail = await openTrail(dir, { clock: time, log });
  return { t, warns: lines.filter((l) => /AUDIT_MAX_FOR_RUNS/.test(l)) };
}

Deno.test("AuditTrail's start keeps the newest AUDIT_MAX_FOR_RUNS calls an earlier start recorded interrupted from the tail of a journal without checkpoints, the oldest said once and not counted as the run registry's drops", async () => {
  await withTempDir("audit_search_bound_", async (dir) => {
    const time = new ManualClock();
    const n = 150;
    const extra = 2 * n - AUDIT_MAX_FOR_RUNS;
    assert.ok(n <= AUDIT_MAX_FOUND_UNSETTLED && extra > 0);
    await interruptedByStarts(dir, time, 2, n);
    await withoutMarkers(dir);
    const { t, warns } = await thirdStart(dir, time);
    try {
      assert.equal(t.earlierInterrupted().length, AUDIT_MAX_FOR_RUNS);
      // No checkpoint lists them for the runs (an older version's journal): nothing says their
      // run registry failed to start, nor that it dropped them.
      assert.equal(t.status().for_runs_dropped_total, 0);
      assert.equal(warns.length, 1, warns.join("\n"));
      assert.match(
        warns[0]!,
        new RegExp(
          `^WARN .*audit: ${extra} calls earlier starts recorded interrupted, found in the ` +
            "journal with no checkpoint nor closing record listing them .* not given to the run " +
            "registry, .* is not known .*they stay on the audit trail as interrupted entries",
        ),
      );
      assert.doesNotMatch(warns[0]!, /no start of the runs took|failed to start/);
      // Every one of them stays an interrupted entry of the trail.
      assert.equal((await interruptedFunctions(t)).length, 2 * n);
    } finally {
      await t.close();
    }
  });
});

Deno.test("AuditTrail's start counts no call passed over before a checkpoint in the journal's tail: the checkpoint lists what is still for the runs", async () => {
  await withTempDir("audit_search_bound_", async (dir) => {
    const time = new ManualClock();
    await interruptedByStarts(dir, time, 2, 150);
    const after = 10;
    // A checkpoint listing nothing before the last `after` lines: those are what is found.
    await withoutMarkers(dir, (lines) => [
      ...lines.slice(0, -after),
      JSON.stringify({ covers: [], checkpoint: 1_700_000_000_000, open: [] }),
      ...lines.slice(-after),
    ]);
    const { t, warns } = await thirdStart(dir, time);
    try {
      assert.equal(t.earlierInterrupted().length, after);
      assert.equal(t.status().for_runs_dropped_total, 0);
      assert.deepEqual(warns, []);
    } finally {
      await t.close();
    }
  });
});
