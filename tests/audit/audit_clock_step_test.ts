/**
 * The audit trail across a wall clock stepped back (an NTP correction, a clock set by hand): an
 * identical call after the step is an entry of its own (the repeats after it collapse into it),
 * dated no earlier than the entry before it, and no entry ends before it begins.
 */
import assert from "node:assert/strict";
import { type AuditEntry, AuditTrail } from "../../src/audit/mod.ts";
import type { AuditDecision } from "../../src/control/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";

const DUTY: AuditDecision = {
  action: "call",
  origin: { kind: "automation", node: "Main" },
  outcome: "accepted",
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  args: { duty: { type: "double", double: 0.5 } },
  result: {},
  latency_ms: 1,
};

Deno.test("AuditTrail never collapses a call into an entry across a wall clock stepped back, and dates it no earlier than that entry: no entry ends before it begins", async () => {
  const time = new ManualClock();
  const t = new AuditTrail({ clock: time, log: testLogger(), mode: () => "AUTO" });
  const entries: AuditEntry[] = [];
  t.onEntry((e) => entries.push(e));
  const before = time.wall;
  t.record(DUTY);
  time.advance(10);
  time.wall -= 60_000; // stepped back a minute
  t.record(DUTY);
  time.advance(10);
  t.record(DUTY); // a repeat of the entry begun after the step
  t.flushOpen();
  for (const e of entries) {
    assert.ok(
      e.last_time_epoch_ms >= e.first_time_epoch_ms,
      `an entry ends before it begins: ${e.first_time_epoch_ms} .. ${e.last_time_epoch_ms}`,
    );
  }
  // The dates never fall: the clock is still behind the first entry's date, which they keep.
  assert.deepEqual(entries.map((e) => [e.first_time_epoch_ms, e.last_time_epoch_ms, e.count]), [
    [before, before, 1],
    [before, before, 2],
  ]);
  await t.close();
});

Deno.test("AuditTrail's gap entry, of entries lost across a wall clock stepped back, does not end before it begins", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_clock_step_" });
  try {
    const time = new ManualClock();
    const files = new SwitchableFiles();
    const t = new AuditTrail({ clock: time, log: testLogger(), mode: () => "AUTO" });
    await t.openJournal({ dir, files, maxFileBytes: 1 << 20, maxFiles: 2 });
    files.full = true;
    t.record({ action: "estop", origin: { kind: "http" }, outcome: "accepted" });
    await t.query({ limit: 1 }); // that write failed
    time.advance(10);
    time.wall -= 60_000; // stepped back a minute
    t.record({ action: "estop_clear", origin: { kind: "http" }, outcome: "accepted" });
    await t.query({ limit: 1 }); // lost too
    files.full = false;
    t.record({ action: "estop", origin: { kind: "http" }, outcome: "accepted" });
    const gaps = (await t.query({ limit: 100 })).entries.filter((e) => e.action === "gap");
    assert.equal(gaps.length, 1);
    assert.equal(gaps[0]!.count, 2);
    assert.ok(
      gaps[0]!.last_time_epoch_ms >= gaps[0]!.first_time_epoch_ms,
      `the gap ends before it begins: ${gaps[0]!.first_time_epoch_ms} .. ${
        gaps[0]!.last_time_epoch_ms
      }`,
    );
    await t.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
