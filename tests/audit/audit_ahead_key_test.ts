/**
 * The collapse key of a call written ahead is built once: its accepted outcome's record uses the
 * one the write ahead built when it is that same decision (same origin, device, function, args,
 * mode), and builds its own otherwise -- as before, the outcome collapses with what it equals. A
 * call that was sent keeps the mode its write ahead recorded (the mode it was decided in).
 */
import assert from "node:assert/strict";
import { type AuditEntry, AuditTrail } from "../../src/audit/mod.ts";
import type { AuditCallAhead, AuditDecision } from "../../src/control/mod.ts";
import { journalFiles } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";

const CALL: AuditCallAhead = {
  origin: { kind: "http", address: "127.0.0.1" },
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  args: { duty: { type: "double", double: 0.5 } },
};

function outcome(call: AuditCallAhead, more: Partial<AuditDecision> = {}): AuditDecision {
  return { ...call, action: "call", outcome: "accepted", result: {}, latency_ms: 1, ...more };
}

async function withTrail(
  fn: (t: AuditTrail, setMode: (m: string) => void, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "audit_ahead_key_" });
  let mode = "MANUAL";
  const t = new AuditTrail({ clock: new ManualClock(), log: testLogger(), mode: () => mode });
  try {
    await t.openJournal({ dir, files: new SwitchableFiles(), maxFileBytes: 1 << 20, maxFiles: 2 });
    await fn(t, (m) => (mode = m), dir);
  } finally {
    await t.close();
    await Deno.remove(dir, { recursive: true });
  }
}

async function lines(dir: string): Promise<Record<string, unknown>[]> {
  const names = (await journalFiles.listNames(dir)).sort();
  const text = (await Promise.all(names.map((n) => Deno.readTextFile(`${dir}/${n}`)))).join("");
  return text.split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

Deno.test("AuditTrail: a call's write-ahead record and its outcome's entry hold the same decision, and a repeat collapses into it", async () => {
  await withTrail(async (t, _setMode, dir) => {
    const entries: AuditEntry[] = [];
    t.onEntry((e) => entries.push(e));
    const intent = await t.writeAhead(CALL);
    assert.ok(intent);
    t.record(outcome(CALL, { intent }));
    // The same call: the open entry stands for it (the keys are identical), nothing written ahead.
    const repeat = await t.writeAhead(CALL); // in memory only (inFlightCalls)
    t.record(outcome(CALL, { intent: repeat }));
    t.flushOpen();
    assert.equal(entries.length, 1);
    assert.equal(entries[0]!.count, 2);
    await t.query({ limit: 10 });
    const [ahead, entry] = await lines(dir);
    const decision = (o: Record<string, unknown>) =>
      [o.origin, o.device_handle, o.function, o.args, o.mode].map((v) => JSON.stringify(v));
    assert.deepEqual(decision(entry!), decision(ahead!));
  });
});

Deno.test("AuditTrail: a call's outcome recorded in another mode than its write ahead keeps the mode it was decided in, a refusal after it the mode now", async () => {
  await withTrail(async (t, setMode) => {
    const entries: AuditEntry[] = [];
    t.onEntry((e) => entries.push(e));
    const intent = await t.writeAhead(CALL);
    assert.ok(intent);
    setMode("FAULT"); // an e-stop latched while the call was on the wire
    t.record(outcome(CALL, { intent }));
    // The same call decided in FAULT is another decision: written ahead, an entry of its own.
    const again = await t.writeAhead(CALL);
    assert.ok(again);
    t.record(outcome(CALL, { intent: again }));
    // A failed outcome keeps its write ahead's mode too...
    const other = { ...CALL, args: { duty: { type: "double", double: 0.6 } } };
    setMode("MANUAL");
    const second = await t.writeAhead(other);
    assert.ok(second);
    setMode("FAULT");
    t.record(outcome(other, { intent: second, outcome: "failed", reason: "INTERNAL: x" }));
    // ...and a call refused after its write ahead (a gate closed meanwhile) is decided now.
    setMode("MANUAL");
    const third = await t.writeAhead(other);
    assert.ok(third);
    setMode("FAULT");
    t.record(
      outcome(other, { intent: third, outcome: "refused", reason: "FAILED_PRECONDITION: x" }),
    );
    t.flushOpen();
    assert.deepEqual(entries.map((e) => [e.mode, e.outcome, e.count]), [
      ["MANUAL", "accepted", 1],
      ["FAULT", "accepted", 1],
      ["MANUAL", "failed", 1],
      ["FAULT", "refused", 1],
    ]);
  });
});
