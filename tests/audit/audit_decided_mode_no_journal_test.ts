/**
 * A call keeps the mode it was decided in (docs/http-api.md "Audit trail": `mode` is the runtime
 * mode when the decision was made) whatever the journal does: with no journal at all (a trail kept
 * in memory: writeAhead writes nothing) as with a journal whose folder cannot be opened (its
 * write-ahead record fails, the decision is kept all the same). A call sent in MANUAL and answered
 * after an e-stop latched says MANUAL, not FAULT; a call refused after its decision says the mode
 * then.
 */
import assert from "node:assert/strict";
import { type AuditEntry, AuditTrail } from "../../src/audit/mod.ts";
import type { AuditCallAhead, AuditDecision } from "../../src/control/mod.ts";
import { journalFiles } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";

const CALL: AuditCallAhead = {
  origin: { kind: "http", address: "127.0.0.1" },
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  args: { duty: { type: "double", double: 0.5 } },
};
const OTHER: AuditCallAhead = { ...CALL, args: { duty: { type: "double", double: 0.6 } } };

function outcome(call: AuditCallAhead, more: Partial<AuditDecision> = {}): AuditDecision {
  return { ...call, action: "call", outcome: "accepted", result: {}, latency_ms: 1, ...more };
}

/** Decides three calls in MANUAL and settles each after an e-stop latched (FAULT). */
async function decideInManualSettleInFault(
  t: AuditTrail,
  setMode: (m: string) => void,
): Promise<void> {
  setMode("MANUAL");
  const accepted = await t.writeAhead(CALL);
  setMode("FAULT");
  t.record(outcome(CALL, { intent: accepted }));
  setMode("MANUAL");
  const failed = await t.writeAhead(OTHER);
  setMode("FAULT");
  t.record(outcome(OTHER, { intent: failed, outcome: "failed", reason: "INTERNAL: x" }));
  setMode("MANUAL");
  const refused = await t.writeAhead(CALL);
  setMode("FAULT");
  t.record(
    outcome(CALL, { intent: refused, outcome: "refused", reason: "FAILED_PRECONDITION: x" }),
  );
  t.flushOpen();
}

const EXPECTED = [
  ["MANUAL", "accepted"],
  ["MANUAL", "failed"],
  ["FAULT", "refused"],
];

Deno.test("AuditTrail without a journal gives a call answered after the e-stop latched the mode it was decided in, MANUAL", async () => {
  let mode = "MANUAL";
  const t = new AuditTrail({ clock: new ManualClock(), log: testLogger(), mode: () => mode });
  const heard: Array<[AuditEntry, readonly string[]]> = [];
  t.onEntry((e, intents) => heard.push([e, intents]));
  await decideInManualSettleInFault(t, (m) => (mode = m));
  assert.equal(t.status().journal, "memory");
  const page = await t.query({ limit: 10 });
  assert.deepEqual(page.entries.map((e) => [e.mode, e.outcome]), EXPECTED);
  assert.deepEqual(heard.map(([e]) => [e.mode, e.outcome]), EXPECTED);
  // Nothing was written ahead: no entry settles a write ahead, none is in flight.
  assert.deepEqual(heard.map(([, intents]) => intents), [[], [], []]);
  assert.deepEqual(t.inFlightCalls(), []);
  assert.equal(t.lastIntentNumber(), 0);
  await t.close();
});

Deno.test("AuditTrail whose journal folder cannot be opened gives a call answered after the e-stop latched the mode it was decided in, MANUAL", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "audit_decided_mode_" });
  let mode = "MANUAL";
  const t = new AuditTrail({ clock: new ManualClock(), log: testLogger(), mode: () => mode });
  try {
    // A file where the journal's folder should be: the folder can be neither made nor written.
    await Deno.writeTextFile(`${tmp}/audit`, "not a folder\n");
    await t.openJournal({
      dir: `${tmp}/audit`,
      files: journalFiles,
      maxFileBytes: 1 << 20,
      maxFiles: 2,
    });
    assert.equal(t.status().journal, "failing");
    const heard: AuditEntry[] = [];
    t.onEntry((e) => heard.push(e));
    await decideInManualSettleInFault(t, (m) => (mode = m));
    assert.deepEqual(heard.map((e) => [e.mode, e.outcome]), EXPECTED);
    assert.equal(t.status().journal, "failing", "nothing was written meanwhile");
  } finally {
    await t.close();
    await Deno.remove(tmp, { recursive: true });
  }
});
