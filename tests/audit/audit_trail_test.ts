/**
 * AuditTrail over real files: collapse of repeated calls (count, first/last time, the open-entry
 * bound), the bound on untrusted refusals (a flood of refused requests), rotation at
 * max_file_bytes with max_files kept, paging across rotated files with a cursor that survives
 * further rotation, and a journal on a full disk (/dev/full) that never throws into the caller and
 * shows in status(); decisions written ahead of their calls and recovered as interrupted after a
 * crash, gap entries for entries lost on a full disk (an injected file port), unreadable lines
 * reported to readers, and the bounds of an entry.
 */
import assert from "node:assert/strict";
import {
  AUDIT_CHECKPOINT_BYTES,
  AUDIT_COLLAPSE_MAX_OPEN_MS,
  AUDIT_MAX_ENTRY_BYTES,
  AUDIT_MAX_SHORT_TEXT_BYTES,
  AUDIT_MAX_TEXT_BYTES,
  AUDIT_MAX_UNSETTLED,
  AUDIT_MEMORY_ENTRIES,
  AUDIT_QUOTED_NAME_CHARS,
  AUDIT_READ_MAX_LINE_BYTES,
  AUDIT_UNTRUSTED_PER_WINDOW,
  AUDIT_UNTRUSTED_WINDOW_MS,
  type AuditEntry,
  AuditTrail,
  boundedEntry,
} from "../../src/audit/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import type { AuditDecision } from "../../src/control/mod.ts";
import { journalFiles } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { diskFullError, InterceptedAppends, SwitchableFiles } from "../helpers/journal_files.ts";
import { ManualClock } from "../helpers/clock.ts";

/** A trail on `time`: its entries' time, and its timers, which fire only when the test moves it. */
function trail(time: ManualClock, mode = "AUTO"): AuditTrail {
  return new AuditTrail({ clock: time, log: testLogger(), mode: () => mode });
}

function duty(value: number, node = "Main/Sequence[0]/CallDevice[0]"): AuditDecision {
  return {
    action: "call",
    origin: { kind: "automation", node },
    outcome: "accepted",
    device_handle: "sim0/motorctl0",
    function: "set_motor_duty",
    args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: value } },
    result: {},
    latency_ms: 1,
  };
}

async function all(t: AuditTrail, limit = 1000): Promise<AuditEntry[]> {
  const out: AuditEntry[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 10_000; pages++) {
    const page = await t.query({ limit, ...(cursor ? { cursor } : {}) });
    out.push(...page.entries);
    if (page.next_cursor === null) return out;
    cursor = page.next_cursor;
  }
  throw new Error("paging did not end");
}

Deno.test("AuditTrail collapses consecutive identical calls into one entry with count and first/last time", async () => {
  const time = new ManualClock();
  const t = trail(time);
  const first = time.wall;
  for (let i = 0; i < 50; i++) {
    t.record(duty(0.5));
    time.advance(10); // 100 Hz
  }
  t.record(duty(0.6)); // different args: closes the open entry
  const entries = await all(t);
  assert.equal(entries.length, 2);
  assert.equal(entries[0]!.count, 50);
  assert.equal(entries[0]!.first_time_epoch_ms, first);
  assert.equal(entries[0]!.time_epoch_ms, first);
  assert.equal(entries[0]!.last_time_epoch_ms, first + 490);
  assert.equal(entries[0]!.origin.node, "Main/Sequence[0]/CallDevice[0]");
  assert.equal(entries[0]!.mode, "AUTO");
  assert.equal(entries[1]!.count, 1);
  assert.deepEqual(entries[1]!.args?.duty, { type: "double", double: 0.6 });
  await t.close();
  assert.equal(time.pendingTimers, 0);
});

Deno.test("AuditTrail never keeps a collapsed entry open longer than AUDIT_COLLAPSE_MAX_OPEN_MS", async () => {
  const time = new ManualClock();
  const t = trail(time);
  const closed: AuditEntry[] = [];
  t.onEntry((e) => closed.push(e));
  // 100 Hz for a minute, the same call every tick.
  const ticks = 60 * 100;
  for (let i = 0; i < ticks; i++) {
    t.record(duty(0.5));
    time.advance(10);
  }
  t.flushOpen();
  const bound = Math.ceil((ticks * 10) / AUDIT_COLLAPSE_MAX_OPEN_MS);
  assert.equal(closed.length, bound);
  assert.equal(closed.reduce((n, e) => n + e.count, 0), ticks);
  for (const e of closed) {
    assert.ok(e.last_time_epoch_ms - e.first_time_epoch_ms < AUDIT_COLLAPSE_MAX_OPEN_MS);
  }
  // The timer closes an open entry with no later call.
  t.record(duty(0.7));
  assert.equal(closed.length, bound);
  time.advance(AUDIT_COLLAPSE_MAX_OPEN_MS - 1);
  assert.equal(closed.length, bound);
  time.advance(1);
  assert.equal(closed.length, bound + 1);
  assert.equal(time.pendingTimers, 0);
  await t.close();
});

/** A refusal of an unauthenticated request from `address`. */
function unauthenticated(address: string, action: "estop_clear" | "mode" = "estop_clear") {
  return {
    action,
    origin: { kind: "http" as const, address },
    refused_by: "auth",
    reason: "UNAUTHENTICATED: Missing or invalid bearer token",
  };
}

Deno.test("AuditTrail collapses a flood of identical untrusted refusals like calls", async () => {
  const time = new ManualClock();
  const t = trail(time);
  const closed: AuditEntry[] = [];
  t.onEntry((e) => closed.push(e));
  // 1000 per second for 10 s from one client.
  for (let i = 0; i < 10_000; i++) {
    t.refusedUntrusted(unauthenticated("192.0.2.7"));
    time.advance(1);
  }
  t.flushOpen();
  assert.strictEqual(closed.length, (10_000 * 1) / AUDIT_COLLAPSE_MAX_OPEN_MS);
  assert.strictEqual(closed.reduce((n, e) => n + e.count, 0), 10_000);
  assert.ok(closed.every((e) => e.outcome === "refused" && e.refused_by === "auth"));
  assert.strictEqual(time.pendingTimers, 0);
  await t.close();
});

Deno.test("AuditTrail writes at most AUDIT_UNTRUSTED_PER_WINDOW varied untrusted refusals per window one by one and sums up the rest", async () => {
  const time = new ManualClock();
  const t = trail(time);
  const closed: AuditEntry[] = [];
  t.onEntry((e) => closed.push(e));
  const start = time.wall;
  // Alternating addresses and actions, so that nothing collapses: 1000 within one window.
  const n = 1000;
  for (let i = 0; i < n; i++) {
    t.refusedUntrusted(unauthenticated(`192.0.2.${i % 2}`, i % 3 === 0 ? "mode" : "estop_clear"));
    if (i === 500) t.record(duty(0.5)); // an operator's call in the middle of the flood
    time.advance(10);
  }
  const calls = () => closed.filter((e) => e.action === "call");
  const oneByOne = () => closed.filter((e) => e.action !== "call" && e.count === 1);
  assert.strictEqual(oneByOne().length, AUDIT_UNTRUSTED_PER_WINDOW);
  // The call is recorded as it happens (closed by the refusal after it), never summed up.
  assert.strictEqual(calls().length, 1);
  assert.strictEqual(calls()[0]!.time_epoch_ms, start + 500 * 10);
  // The rest of the window is one entry, written when the window ends.
  time.advance(start + AUDIT_UNTRUSTED_WINDOW_MS - time.wall - 1);
  assert.strictEqual(closed.length, AUDIT_UNTRUSTED_PER_WINDOW + 1);
  time.advance(1);
  assert.strictEqual(closed.length, AUDIT_UNTRUSTED_PER_WINDOW + 2);
  const sum = closed.at(-1)!;
  assert.strictEqual(sum.count, n - AUDIT_UNTRUSTED_PER_WINDOW);
  assert.strictEqual(sum.outcome, "refused");
  assert.strictEqual(sum.refused_by, "auth");
  assert.strictEqual(sum.first_time_epoch_ms, start + AUDIT_UNTRUSTED_PER_WINDOW * 10);
  assert.strictEqual(sum.last_time_epoch_ms, start + (n - 1) * 10);
  assert.match(
    sum.reason ?? "",
    /^940 refusals of requests not allowed to act, over the 60 per 60 s/,
  );
  assert.match(sum.reason ?? "", /the first: UNAUTHENTICATED: Missing or invalid bearer token$/);
  assert.strictEqual(
    closed.filter((e) => e.action !== "call").reduce((k, e) => k + e.count, 0),
    n,
    "every refusal is counted",
  );
  assert.strictEqual(time.pendingTimers, 0);
  // A new window writes one by one again.
  t.refusedUntrusted(unauthenticated("192.0.2.9"));
  t.flushOpen();
  assert.strictEqual(closed.at(-1)!.count, 1);
  assert.deepStrictEqual(closed.at(-1)!.origin, { kind: "http", address: "192.0.2.9" });
  await t.close();
});

Deno.test("AuditTrail's window of untrusted refusals is measured on the monotonic clock: a wall clock stepped back an hour neither stretches the window nor holds the summing-up entry", async () => {
  const time = new ManualClock();
  const t = trail(time);
  const closed: AuditEntry[] = [];
  t.onEntry((e) => closed.push(e));
  const vary = (i: number) => unauthenticated(`192.0.2.${i % 2}`);
  // One window: AUDIT_UNTRUSTED_PER_WINDOW one by one, 5 summed up (written when it ends).
  for (let i = 0; i < AUDIT_UNTRUSTED_PER_WINDOW + 5; i++) t.refusedUntrusted(vary(i));
  time.advance(AUDIT_UNTRUSTED_WINDOW_MS);
  assert.strictEqual(closed.length, AUDIT_UNTRUSTED_PER_WINDOW + 1);
  assert.strictEqual(closed.at(-1)!.count, 5);
  // NTP steps the wall clock back an hour: the next window began all the same.
  time.stepWall(-3_600_000);
  t.refusedUntrusted(unauthenticated("192.0.2.9"));
  time.advance(AUDIT_COLLAPSE_MAX_OPEN_MS); // the open entry's bound: it is written
  assert.strictEqual(closed.length, AUDIT_UNTRUSTED_PER_WINDOW + 2, "written one by one");
  assert.deepStrictEqual(closed.at(-1)!.origin, { kind: "http", address: "192.0.2.9" });
  assert.strictEqual(closed.at(-1)!.count, 1);
  // Its flood is summed up and written when this window ends, a minute on, not an hour.
  for (let i = 1; i < AUDIT_UNTRUSTED_PER_WINDOW + 5; i++) t.refusedUntrusted(vary(i));
  time.advance(AUDIT_UNTRUSTED_WINDOW_MS);
  assert.strictEqual(closed.length, 2 * AUDIT_UNTRUSTED_PER_WINDOW + 2);
  assert.strictEqual(closed.at(-1)!.count, 5);
  assert.strictEqual(time.pendingTimers, 0);
  await t.close();
});

Deno.test("AuditTrail.seal writes the summed-up untrusted refusals at once and leaves no timer", async () => {
  const time = new ManualClock();
  const t = trail(time);
  for (let i = 0; i < AUDIT_UNTRUSTED_PER_WINDOW + 5; i++) {
    t.refusedUntrusted(unauthenticated(`192.0.2.${i % 2}`));
  }
  // The summing-up entry's timer; the last entry written one by one was closed by the first
  // refusal summed up.
  assert.strictEqual(time.pendingTimers, 1);
  t.seal();
  assert.strictEqual(time.pendingTimers, 0);
  const entries = await all(t);
  assert.strictEqual(entries.length, AUDIT_UNTRUSTED_PER_WINDOW + 1);
  assert.strictEqual(entries.at(-1)!.count, 5);
  await t.close();
});

Deno.test("AuditTrail.seal closes the open entry and records later calls at once, leaving no timer", async () => {
  const time = new ManualClock();
  const t = trail(time);
  t.record(duty(0.5));
  assert.equal(time.pendingTimers, 1);
  t.seal();
  assert.equal(time.pendingTimers, 0);
  t.record(duty(0.5));
  t.record(duty(0.5));
  assert.equal(time.pendingTimers, 0);
  assert.deepEqual((await all(t)).map((e) => e.count), [1, 1, 1]);
  await t.close();
});

Deno.test("AuditTrail does not collapse calls of different origins, outcomes or modes, nor non-call entries", async () => {
  const time = new ManualClock();
  let mode = "MANUAL";
  const t = new AuditTrail({
    clock: time,
    log: testLogger(),
    mode: () => mode,
  });
  t.record(duty(0.5, "A"));
  t.record(duty(0.5, "B"));
  t.record({ ...duty(0.5, "B"), outcome: "refused", reason: "x", refused_by: "mode" });
  mode = "AUTO";
  t.record({ ...duty(0.5, "B"), outcome: "refused", reason: "x", refused_by: "mode" });
  const estop: AuditDecision = { action: "estop", origin: { kind: "http" }, outcome: "accepted" };
  t.record(estop);
  t.record(estop);
  const entries = await all(t);
  assert.deepEqual(entries.map((e) => [e.action, e.count, e.mode]), [
    ["call", 1, "MANUAL"],
    ["call", 1, "MANUAL"],
    ["call", 1, "MANUAL"],
    ["call", 1, "AUTO"],
    ["estop", 1, "AUTO"],
    ["estop", 1, "AUTO"],
  ]);
  assert.deepEqual(entries.map((e) => e.seq), [1, 2, 3, 4, 5, 6]);
  await t.close();
});

Deno.test("AuditTrail without a journal keeps the last AUDIT_MEMORY_ENTRIES entries and pages them", async () => {
  const time = new ManualClock();
  const t = trail(time);
  for (let i = 0; i < AUDIT_MEMORY_ENTRIES + 5; i++) t.record(duty(i / 10_000));
  const entries = await all(t, 333);
  assert.equal(entries.length, AUDIT_MEMORY_ENTRIES);
  assert.equal(entries[0]!.seq, 6);
  assert.equal(entries.at(-1)!.seq, AUDIT_MEMORY_ENTRIES + 5);
  assert.equal(t.status().journal, "memory");
  await t.close();
});

Deno.test("AuditTrail.query gives next_cursor null on a page that ends on the last entry it serves, from the journal as from memory: no empty page after it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_last_page_" });
  try {
    const time = new ManualClock();
    const memory = trail(time);
    const journaled = trail(time);
    await journaled.openJournal({ dir, files: journalFiles, maxFileBytes: 1 << 20, maxFiles: 2 });
    for (const t of [memory, journaled]) {
      for (let i = 0; i < 4; i++) t.record(duty(i / 10)); // four entries (different args)
      t.record({ action: "estop", origin: { kind: "http" }, outcome: "accepted" });
    }
    // A call in flight: its write-ahead record (a line no page serves) follows the last entry.
    assert.ok(await journaled.writeAhead(call(0.9)));
    const pages = async (t: AuditTrail, q: { limit: number; origin?: "automation" }) => {
      const seqs: number[][] = [];
      let cursor: string | undefined;
      do {
        const page = await t.query({ ...q, ...(cursor ? { cursor } : {}) });
        seqs.push(page.entries.map((e) => e.seq));
        cursor = page.next_cursor ?? undefined;
      } while (cursor !== undefined && seqs.length < 10);
      return seqs;
    };
    for (const t of [memory, journaled]) {
      const where = t === memory ? "memory" : "journal";
      // The last page holds exactly the entries left: the last one on disk, and the last matching.
      assert.deepEqual(await pages(t, { limit: 5 }), [[1, 2, 3, 4, 5]], where);
      assert.deepEqual(await pages(t, { limit: 2 }), [[1, 2], [3, 4], [5]], where);
      assert.deepEqual(
        await pages(t, { limit: 2, origin: "automation" }),
        [[1, 2], [3, 4]],
        where,
      );
    }
    await memory.close();
    await journaled.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("AuditTrail rotates at max_file_bytes, keeps max_files and pages across files with a cursor stable over rotation", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_rotate_" });
  try {
    const time = new ManualClock();
    const t = trail(time);
    const maxFileBytes = 4096;
    await t.openJournal({ dir, files: journalFiles, maxFileBytes, maxFiles: 3 });
    for (let i = 0; i < 40; i++) {
      t.record(duty(i / 1000));
      time.advance(1);
    }
    t.flushOpen();
    const firstPage = await t.query({ limit: 5 });
    // Every file at most max_file_bytes, at most max_files of them, the oldest removed.
    const names = (await journalFiles.listNames(dir)).sort();
    assert.equal(names.length, 3, names.join(", "));
    for (const name of names) {
      const size = (await Deno.stat(`${dir}/${name}`)).size;
      assert.ok(size <= maxFileBytes, `${name}: ${size} bytes`);
    }
    assert.notEqual(names[0], "audit-00000001.jsonl");
    // The retained entries are one contiguous, ordered tail of what was recorded, read across
    // the files in pages of 5.
    const retained = await all(t, 5);
    assert.ok(retained.length > 5 && retained.length < 40, `${retained.length} retained`);
    const seqs = retained.map((e) => e.seq);
    assert.deepEqual(seqs, seqs.map((_, i) => seqs[0]! + i));
    assert.equal(seqs.at(-1), 40);
    const lineCounts = await Promise.all(
      names.map(async (n) =>
        (await Deno.readTextFile(`${dir}/${n}`)).split("\n").filter(Boolean).length
      ),
    );
    assert.equal(retained.length, lineCounts.reduce((a, b) => a + b, 0));
    // A cursor taken before more rotation still resumes after the same entry.
    const mid = await t.query({ limit: 3, cursor: firstPage.next_cursor! });
    const lastSeen = mid.entries.at(-1)!.seq;
    for (let i = 0; i < 3; i++) {
      t.record(duty(1 + i / 1000));
      time.advance(1);
    }
    t.flushOpen();
    const resumed = await t.query({ limit: 1, cursor: mid.next_cursor! });
    assert.equal(resumed.entries[0]!.seq, lastSeen + 1);
    await assert.rejects(
      t.query({ limit: 1, cursor: "bm90LWEtY3Vyc29y" }),
      (e: unknown) =>
        e instanceof RuntimeError && e.code === "INVALID_ARGUMENT" && /^cursor:/.test(e.message),
    );
    await t.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("AuditTrail on a full disk never throws into the caller, drops and counts the entries and recovers", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_full_" });
  try {
    // The journal file is /dev/full: every write fails with ENOSPC, as on a full disk.
    await Deno.symlink("/dev/full", `${dir}/audit-00000001.jsonl`);
    const time = new ManualClock();
    const t = trail(time);
    await t.openJournal({ dir, files: journalFiles, maxFileBytes: 1 << 20, maxFiles: 2 });
    t.record({ action: "estop", origin: { kind: "http" }, outcome: "accepted" });
    const page = await t.query({ limit: 10 }); // waits for the write to fail
    assert.deepEqual(page.entries, []);
    const failing = t.status();
    assert.equal(failing.journal, "failing");
    assert.equal(failing.write_errors_total, 1);
    assert.equal(failing.dropped_total, 1);
    assert.equal(failing.entries_total, 1);
    assert.match(failing.last_error ?? "", /space/i);
    // The disk is freed (the file replaced): the next entry is written.
    await Deno.remove(`${dir}/audit-00000001.jsonl`);
    t.record({ action: "estop_clear", origin: { kind: "http" }, outcome: "accepted" });
    const after = await t.query({ limit: 10 });
    // Before the entry that was written, the `gap` entry counting the one lost.
    assert.deepEqual(after.entries.map((e) => [e.action, e.count]), [["gap", 1], [
      "estop_clear",
      1,
    ]]);
    assert.equal(t.status().journal, "ok");
    assert.equal(t.status().gap_pending, 0);
    assert.equal(t.status().write_errors_total, 1);
    await t.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---- write ahead, recovery, gaps, bounds, unreadable lines ------------------------------------

async function withJournal(
  fn: (dir: string, files: SwitchableFiles) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "audit_issue34_" });
  try {
    await fn(dir, new SwitchableFiles());
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function journalLines(dir: string): Promise<string[]> {
  const names = (await journalFiles.listNames(dir)).sort();
  const texts = await Promise.all(names.map((n) => Deno.readTextFile(`${dir}/${n}`)));
  return texts.join("").split("\n").filter(Boolean);
}

const call = (value: number) => {
  const { outcome: _o, result: _r, latency_ms: _l, ...ahead } = duty(value);
  return ahead;
};

Deno.test("AuditTrail.writeAhead has the decision written when it resolves, and a repeat of the open entry writes nothing", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const t = trail(time);
    await t.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    const intent = await t.writeAhead(call(0.5));
    assert.ok(intent);
    const lines = await journalLines(dir);
    assert.equal(lines.length, 1);
    assert.match(lines[0]!, /^\{"intent":/);
    assert.equal(JSON.parse(lines[0]!).args.duty.double, 0.5);
    t.record({ ...duty(0.5), intent });
    // The same call again: the open entry stands for it, nothing more is written ahead.
    const repeat = await t.writeAhead(call(0.5)); // in memory only (inFlightCalls)
    assert.equal((await journalLines(dir)).length, 1);
    t.record({ ...duty(0.5), intent: repeat });
    const page = await t.query({ limit: 10 });
    assert.deepEqual(page.entries.map((e) => [e.outcome, e.count]), [["accepted", 2]]);
    assert.deepEqual(page.problems, []);
    await t.close();
    const all = await journalLines(dir);
    assert.equal(all.length, 3, "the write-ahead record, the entry that settles it, the close");
    assert.deepEqual(JSON.parse(all[1]!).intents, [intent.id]);
    assert.deepEqual(JSON.parse(all[2]!), { covers: [], clean_close: time.wall, open: [] });
    assert.equal(files.syncs, 1, "one fsync, at close: none per call");
  });
});

Deno.test("AuditTrail records a call written ahead by an earlier process without an outcome as interrupted, and nothing else", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const before = trail(time);
    await before.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    // Settled: written ahead, then its outcome recorded and written.
    const settled = await before.writeAhead(call(0.1));
    before.record({ ...duty(0.1), intent: settled });
    before.flushOpen();
    // Unsettled: the process ends (no close, no outcome) right after the provider answered.
    time.advance(7);
    const lost = await before.writeAhead(call(0.2));
    assert.ok(lost);
    await before.query({ limit: 1 }); // everything queued so far is written

    const after = trail(time);
    await after.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    const entries = (await after.query({ limit: 10 })).entries;
    assert.deepEqual(entries.map((e) => [e.outcome, e.args?.duty]), [
      ["accepted", { type: "double", double: 0.1 }],
      ["interrupted", { type: "double", double: 0.2 }],
    ]);
    const e = entries[1];
    assert.equal(e!.count, 1);
    assert.equal(e!.time_epoch_ms, time.wall);
    assert.equal(e!.result, null);
    assert.equal(e!.origin.node, "Main/Sequence[0]/CallDevice[0]");
    assert.match(e!.reason ?? "", /^the runtime ended after this call passed every check/);
    await after.close();
    // A third start finds it settled by the interrupted entry: recorded once.
    const third = trail(time);
    await third.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    assert.equal((await third.query({ limit: 10 })).entries.length, 2);
    await third.close();
    await before.close();
  });
});

Deno.test("AuditTrail's line of an interrupted call quotes its device and function (a provider's text), cut to AUDIT_QUOTED_NAME_CHARS; the entry keeps them", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const before = trail(time);
    await before.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    const handle = `p0/d"0\nERROR forged ${"L".repeat(2000)}`;
    const fn = 'set" now';
    assert.ok(await before.writeAhead({ ...call(0.2), device_handle: handle, function: fn }));
    await before.query({ limit: 1 }); // written; the process ends without its outcome

    const { log, lines } = capturingLogger({ now: () => 0 });
    const after = new AuditTrail({ clock: time, log, mode: () => "AUTO" });
    await after.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    const [e] = (await after.query({ limit: 10 })).entries;
    assert.equal(e!.outcome, "interrupted");
    assert.equal(e!.device_handle, handle, "the entry keeps it");
    const said = lines.filter((l) => l.includes("recorded as interrupted"));
    assert.equal(said.length, 1, lines.join("\n").slice(0, 2000));
    const quoted = JSON.stringify(`${handle.slice(0, AUDIT_QUOTED_NAME_CHARS)}\u2026`);
    assert.ok(
      said[0]!.endsWith(
        `audit: a call to ${quoted} "set\\" now" was written ahead by an earlier process ` +
          "without an outcome: recorded as interrupted",
      ),
      said[0]!.slice(0, 400),
    );
    await after.close();
    await before.close();
  });
});

/** `n` calls written ahead and settled, 1 ms apart, each with other args (none collapses). */
async function settledCalls(t: AuditTrail, time: ManualClock, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    time.advance(1);
    const ahead = await t.writeAhead(call(i));
    t.record({ ...duty(i), intent: ahead });
  }
}

/** The journal's lines as parsed objects. */
async function journalObjects(dir: string): Promise<Record<string, unknown>[]> {
  return (await journalLines(dir)).map((l) => JSON.parse(l));
}

Deno.test("AuditTrail: a clean close writes a closing record, and the next start reads only it, not the journal's tail", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const before = trail(time);
    await before.openJournal({ dir, files, maxFileBytes: 4 << 20, maxFiles: 2 });
    // ~1 MiB of settled calls, then one still in flight when the runtime stops.
    await settledCalls(before, time, 2000);
    const inFlight = await before.writeAhead(call(-1));
    assert.ok(inFlight);
    await before.close();
    const closing = (await journalObjects(dir)).at(-1)!;
    assert.equal(closing.clean_close, time.wall);
    assert.deepEqual((closing.open as { intent: string }[]).map((r) => r.intent), [inFlight.id]);
    const size = (await Deno.stat(`${dir}/audit-00000001.jsonl`)).size;
    assert.ok(size > 1 << 20, `journal of ${size} bytes`);

    files.bytesRead = 0;
    const after = trail(time);
    await after.openJournal({ dir, files, maxFileBytes: 4 << 20, maxFiles: 2 });
    assert.ok(
      files.bytesRead <= AUDIT_MAX_ENTRY_BYTES + 2,
      `read ${files.bytesRead} bytes at start, not the ${size} of the journal`,
    );
    assert.deepEqual((await after.query({ limit: 1000 })).problems, []);
    const interrupted = (await all(after)).filter((e) => e.outcome === "interrupted");
    assert.deepEqual(interrupted.map((e) => e.args?.duty), [{ type: "double", double: -1 }]);
    await after.close();
    // The third start finds the call settled by the interrupted entry: recorded once.
    const third = trail(time);
    await third.openJournal({ dir, files, maxFileBytes: 4 << 20, maxFiles: 2 });
    assert.equal((await all(third)).filter((e) => e.outcome === "interrupted").length, 1);
    await third.close();
  });
});

Deno.test("AuditTrail writes a checkpoint every AUDIT_CHECKPOINT_BYTES: after a crash a start reads about that much, not the whole tail, and finds every call in flight", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const before = trail(time);
    await before.openJournal({ dir, files, maxFileBytes: 16 << 20, maxFiles: 2 });
    assert.ok(await before.writeAhead(call(-1))); // in flight through every checkpoint
    await settledCalls(before, time, 4000);
    assert.ok(await before.writeAhead(call(-2))); // after the last checkpoint
    await before.query({ limit: 1 }); // written; then the process ends without a close
    const lines = await journalObjects(dir);
    const checkpoints = lines.filter((l) => typeof l.checkpoint === "number");
    const size = (await Deno.stat(`${dir}/audit-00000001.jsonl`)).size;
    assert.ok(size > 2 * AUDIT_CHECKPOINT_BYTES, `${size} bytes`);
    assert.ok(checkpoints.length >= 2, `${checkpoints.length} checkpoints in ${size} bytes`);
    // The call in flight all along, and the last call(s) whose outcome was not yet written.
    const listed = (checkpoints.at(-1)!.open as { args: { duty: { double: number } } }[])
      .map((r) => r.args.duty.double);
    assert.equal(listed[0], -1, JSON.stringify(listed));
    assert.ok(listed.length <= 3, JSON.stringify(listed));

    files.bytesRead = 0;
    const after = trail(time);
    await after.openJournal({ dir, files, maxFileBytes: 16 << 20, maxFiles: 2 });
    assert.ok(
      // The last line (no closing record), then the window that holds the last checkpoint.
      files.bytesRead <= (AUDIT_MAX_ENTRY_BYTES + 2) + AUDIT_CHECKPOINT_BYTES +
          4 * AUDIT_MAX_ENTRY_BYTES,
      `read ${files.bytesRead} of ${size} bytes at start`,
    );
    assert.deepEqual(
      (await all(after)).filter((e) => e.outcome === "interrupted").map((e) => e.args?.duty),
      [{ type: "double", double: -1 }, { type: "double", double: -2 }],
    );
    await after.close();
    await before.close();
  });
});

Deno.test("AuditTrail after a crash finds the calls in flight through a checkpoint in an older rotated file, even when the file of their write-ahead record was removed", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const before = trail(time);
    // Files of 256 KiB, 6 kept (1.5 MiB): the call in flight since the start outlives its file.
    const options = { dir, files, maxFileBytes: 256 << 10, maxFiles: 6 };
    await before.openJournal(options);
    assert.ok(await before.writeAhead(call(-1)));
    await settledCalls(before, time, 4000);
    assert.ok(await before.writeAhead(call(-2)));
    await before.query({ limit: 1 }); // written; the process ends without a close
    const names = (await journalFiles.listNames(dir)).sort();
    assert.equal(names.length, 6, names.join(", "));
    assert.ok(!names.includes("audit-00000001.jsonl"), "the first file, with call(-1), is gone");
    const newest = (await Deno.readTextFile(`${dir}/${names.at(-1)}`)).split("\n");
    assert.ok(!newest.some((l) => l.includes('"checkpoint"')), "the last checkpoint is older");

    const after = trail(time);
    await after.openJournal(options);
    assert.deepEqual(
      (await all(after)).filter((e) => e.outcome === "interrupted").map((e) => e.args?.duty),
      [{ type: "double", double: -1 }, { type: "double", double: -2 }],
    );
    await after.close();
    await before.close();
  });
});

Deno.test("AuditTrail: after a crash that follows a clean close, the search finds the calls of both processes once", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const a = trail(time);
    await a.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    assert.ok(await a.writeAhead(call(0.1))); // in flight at a clean close
    await a.close();
    const b = trail(time);
    await b.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    time.advance(5);
    assert.ok(await b.writeAhead(call(0.2))); // in flight at a crash: b is never closed
    await b.query({ limit: 1 }); // written
    assert.equal((await journalObjects(dir)).at(-1)!.intent !== undefined, true);

    const c = trail(time);
    await c.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    const interrupted = (await all(c)).filter((e) => e.outcome === "interrupted");
    assert.deepEqual(interrupted.map((e) => e.args?.duty), [
      { type: "double", double: 0.1 }, // by b, from a's closing record
      { type: "double", double: 0.2 }, // by c, from the search
    ]);
    await c.close();
    await b.close();
  });
});

Deno.test("AuditTrail writes no closing record after a failed write, nor past AUDIT_MAX_UNSETTLED calls in flight: the next start searches", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const a = trail(time);
    await a.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    assert.ok(await a.writeAhead(call(0.1)));
    files.full = true;
    a.record({ action: "estop", origin: { kind: "http" }, outcome: "accepted" });
    await a.query({ limit: 1 }); // that write failed
    files.full = false;
    await a.close();
    const lastA = (await journalObjects(dir)).at(-1)!;
    assert.equal(lastA.clean_close, undefined, JSON.stringify(lastA));
    const b = trail(time);
    await b.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    assert.deepEqual(
      (await all(b)).filter((e) => e.outcome === "interrupted").map((e) => e.args?.duty),
      [{ type: "double", double: 0.1 }],
    );
    // More calls in flight than a closing record keeps.
    for (let i = 0; i <= AUDIT_MAX_UNSETTLED; i++) {
      time.advance(1);
      assert.ok(await b.writeAhead(call(i)));
    }
    await b.close();
    assert.equal((await journalObjects(dir)).at(-1)!.clean_close, undefined);
    const c = trail(time);
    await c.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    assert.equal(
      (await all(c)).filter((e) => e.outcome === "interrupted").length,
      1 + AUDIT_MAX_UNSETTLED + 1,
    );
    await c.close();
  });
});

Deno.test("AuditTrail counts entries lost on a full disk (an injected file port), writes one gap entry when writing resumes, and a restart finds it", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const t = trail(time);
    await t.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    t.record({ action: "estop", origin: { kind: "http" }, outcome: "accepted" });
    await t.query({ limit: 1 });
    files.full = true;
    const firstLost = time.wall + 10;
    for (let i = 0; i < 5; i++) {
      time.advance(10);
      t.record({ action: "mode", origin: { kind: "http" }, outcome: "accepted", function: "AUTO" });
      await t.query({ limit: 1 }); // each write fails
    }
    assert.equal(t.status().gap_pending, 5);
    assert.equal(t.status().dropped_total, 5);
    assert.equal(t.status().journal, "failing");
    // A call still goes through: its decision is not on disk, and nothing claims it is.
    const intent = await t.writeAhead(call(0.3));
    assert.ok(intent);
    assert.equal(t.status().gap_pending, 5, "write-ahead records are not entries");
    files.full = false;
    t.record({ action: "estop_clear", origin: { kind: "http" }, outcome: "accepted" });
    const page = await t.query({ limit: 10 });
    assert.deepEqual(page.entries.map((e) => e.action), ["estop", "gap", "estop_clear"]);
    const gap = page.entries[1];
    assert.equal(gap!.count, 5);
    assert.equal(gap!.first_time_epoch_ms, firstLost);
    assert.equal(gap!.last_time_epoch_ms, firstLost + 40);
    assert.match(gap!.reason ?? "", /^5 entries were not journaled: .*No space left on device/);
    assert.equal(t.status().gap_pending, 0);
    await t.close();
    const restarted = trail(time);
    await restarted.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    const again = await restarted.query({ limit: 10 });
    assert.deepEqual(again.entries.slice(0, 3), page.entries);
    await restarted.close();
  });
});

Deno.test("AuditTrail writes the gap entry in seq order where its loss began: before the entries decided after it, also those decided while the write that succeeds is in flight", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_gap_order_" });
  let full = false;
  let hold: Promise<void> | null = null;
  let held = () => {};
  const files = new InterceptedAppends("audit-", async (text, append) => {
    if (full) throw diskFullError();
    if (hold !== null) {
      held();
      await hold;
    }
    await append(text);
  });
  try {
    const time = new ManualClock();
    const t = trail(time);
    await t.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    const mode = (to: string): AuditDecision => ({
      action: "mode",
      origin: { kind: "http" },
      outcome: "accepted",
      function: to,
    });
    t.record({ action: "estop", origin: { kind: "http" }, outcome: "accepted" });
    await t.query({ limit: 1 });
    full = true;
    time.advance(10);
    t.record(mode("AUTO")); // lost
    await t.query({ limit: 1 });
    assert.equal(t.status().gap_pending, 1);
    full = false;
    let release!: () => void;
    hold = new Promise((r) => release = r);
    const inFlight = new Promise<void>((r) => held = r);
    time.advance(10);
    t.record({ action: "estop_clear", origin: { kind: "http" }, outcome: "accepted" });
    await inFlight; // the first write that succeeds is in flight
    time.advance(10);
    t.record(mode("MANUAL"));
    hold = null;
    release();
    const page = await t.query({ limit: 10 });
    await t.close();
    const onDisk = (await journalLines(dir)).map((l) => JSON.parse(l) as AuditEntry)
      .filter((e) => typeof e.seq === "number");
    for (const entries of [onDisk, page.entries]) {
      assert.deepEqual(entries.map((e) => e.action), ["estop", "gap", "estop_clear", "mode"]);
      for (let i = 1; i < entries.length; i++) {
        assert.ok(entries[i]!.seq > entries[i - 1]!.seq, `seq ${entries.map((e) => e.seq)}`);
        assert.ok(entries[i]!.time_epoch_ms >= entries[i - 1]!.time_epoch_ms);
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("AuditTrail.query reports a torn, a damaged and an over-long line with their places and serves the entries around them", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    const t = trail(time);
    await t.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    t.record({ action: "estop", origin: { kind: "http" }, outcome: "accepted" });
    await t.query({ limit: 1 });
    await t.close();
    const path = `${dir}/audit-00000001.jsonl`;
    const good = (await Deno.readTextFile(path)).split("\n")[0]!; // then the closing record
    const old = JSON.parse(good);
    // An entry of an older version whose reason was never bounded (40 KB), a torn line, junk,
    // a line longer than anything a read parses, and the good entry again.
    const long = JSON.stringify({ ...old, seq: 2, reason: "E".repeat(40_000) });
    const huge = "x".repeat(AUDIT_READ_MAX_LINE_BYTES + 10);
    await Deno.writeTextFile(path, `${good}\n${long}\n{"seq":3,"ti\nnot json\n${huge}\n${good}\n`);
    const reader = trail(time);
    await reader.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    const page = await reader.query({ limit: 100 });
    assert.deepEqual(page.entries.map((e) => e.seq), [1, 2, 1]);
    assert.match(page.entries[1]!.reason ?? "", /\[truncated: \d+ of 40000 bytes kept\]$/);
    const at = (n: number) => good.length + 1 + long.length + 1 + n;
    assert.deepEqual(page.problems, [
      {
        file: "audit-00000001.jsonl",
        offset: at(0),
        bytes: 12,
        problem: "not an audit entry (torn by a crash, or damaged)",
      },
      {
        file: "audit-00000001.jsonl",
        offset: at(13),
        bytes: 8,
        problem: "not an audit entry (torn by a crash, or damaged)",
      },
      {
        file: "audit-00000001.jsonl",
        offset: at(22),
        bytes: huge.length,
        problem: `longer than ${AUDIT_READ_MAX_LINE_BYTES} bytes: not read`,
      },
    ]);
    assert.equal(reader.status().unreadable_lines_total, 3);
    await reader.query({ limit: 100 });
    assert.equal(reader.status().unreadable_lines_total, 3, "a line is counted once");
    await reader.close();
  });
});

/** The fields of `base` that were long, short. */
function short(_base: unknown) {
  return {
    origin: { kind: "http" as const, address: "a", token_name: "t" },
    device_handle: "p/d",
    function: "f",
    args: { k: { type: "string", string: "é" } },
  };
}

Deno.test("boundedEntry cuts every text to AUDIT_MAX_TEXT_BYTES with a marker and keeps a line within AUDIT_MAX_ENTRY_BYTES", () => {
  const base = {
    seq: 1,
    time_epoch_ms: 1,
    first_time_epoch_ms: 1,
    last_time_epoch_ms: 1,
    count: 1,
    origin: { kind: "http" as const, address: "a".repeat(9000), token_name: "\u0001".repeat(9000) },
    action: "call" as const,
    device_handle: `p/${"d".repeat(9000)}`,
    function: "f".repeat(9000),
    args: { ["k".repeat(9000)]: { type: "string", string: "é".repeat(9000) } },
    mode: "MANUAL",
    outcome: "failed" as const,
    reason: "r".repeat(40_000),
    refused_by: null,
    result: null,
    latency_ms: 1,
  };
  const { entry, text } = boundedEntry(base);
  const bytes = (s: string) => new TextEncoder().encode(s).length;
  assert.ok(bytes(text) <= AUDIT_MAX_ENTRY_BYTES, `${bytes(text)} bytes`);
  assert.match(entry.reason!, /^r+ \[truncated: \d+ of 40000 bytes kept\]$/);
  // Still too large with every text at 4 KiB (five of them): args and result give way, then
  // every text is cut to AUDIT_MAX_SHORT_TEXT_BYTES.
  assert.deepEqual(entry.args, { truncated: `entry exceeded ${AUDIT_MAX_ENTRY_BYTES} bytes` });
  const texts = [entry.origin.address!, entry.origin.token_name!, entry.function!, entry.reason!];
  for (const v of [...texts, entry.device_handle!]) {
    assert.match(v, /\[truncated: \d+ of \d+ bytes kept\]$/);
    assert.ok(bytes(JSON.stringify(v)) - 2 <= AUDIT_MAX_SHORT_TEXT_BYTES, v.slice(0, 40));
  }
  // One long text alone is cut to AUDIT_MAX_TEXT_BYTES, the rest kept.
  const one = boundedEntry({ ...base, ...short(base), reason: "r".repeat(40_000) }).entry;
  assert.ok(bytes(JSON.stringify(one.reason)) - 2 <= AUDIT_MAX_TEXT_BYTES);
  assert.ok(bytes(JSON.stringify(one.reason)) - 2 > AUDIT_MAX_TEXT_BYTES - 64);
  assert.deepEqual(one.args, { k: { type: "string", string: "é" } });
  // A small entry is the same object.
  const small = { ...base, ...short(base), args: null, reason: "x" };
  assert.equal(boundedEntry(small).entry, small);
});

Deno.test("AuditTrail gives an interrupted call the run open when it was decided (write-ahead run_id), whatever the wall clock did", async () => {
  await withJournal(async (dir, files) => {
    const time = new ManualClock();
    let openRun: string | null = "lab1-RUN2";
    const before = new AuditTrail({
      clock: time,
      log: testLogger(),
      mode: () => "MANUAL",
      runId: () => openRun,
    });
    await before.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    time.stepWall(-3_600_000); // NTP steps the host clock back an hour
    assert.ok(await before.writeAhead(call(0.2)));
    openRun = null;
    time.advance(5);
    assert.ok(await before.writeAhead(call(0.3)));
    await before.query({ limit: 1 }); // everything queued so far is written

    const after = trail(time);
    const seen: Array<[unknown, string | null | undefined]> = [];
    after.onEntry((e, _intents, runId) => seen.push([e.args?.duty, runId]));
    await after.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    assert.deepEqual(seen, [
      [{ type: "double", double: 0.2 }, "lab1-RUN2"],
      [{ type: "double", double: 0.3 }, null],
    ]);
    await after.close();
    await before.close();
  });
});
