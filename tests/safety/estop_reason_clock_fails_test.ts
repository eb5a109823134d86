/**
 * A trigger's reason still arriving (an HTTP body) is followed whatever the clock does: the only
 * part of it that needs the time is the latency of its audit entry (from the latch to the reason).
 * A monotonic clock that throws when the e-stop reads the latch's start, or when the reason
 * arrives, is asked once more; when it fails again the reason's audit entry is written all the
 * same without a latency (null: none invented), the reason listeners (the incident recorder) are
 * told in the trigger's own step, and each failure is an ERROR line. In-process: the real Estop
 * over a router that answers every call at once, a modes port that records FAULT, an audit sink
 * that keeps its entries, and a clock whose monoMs throws while the test says so.
 */
import assert from "node:assert/strict";
import type { AuditDecision } from "../../src/control/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { containedEstop, failingClock } from "./_clock_rig.ts";

/** An e-stop whose clock's monoMs throws (twice: the read and its retry) while `broken` is set. */
function rig() {
  const state = { broken: false };
  const { clock } = failingClock({ read: "monoMs", times: 2, when: () => state.broken });
  const audited: AuditDecision[] = [];
  // Settles once the reason's audit entry is written, or once the e-stop says it failed to.
  const settled = Promise.withResolvers<void>();
  const errors: string[] = [];
  const log = new LineLogger({
    level: "error",
    journald: false,
    now: () => 0,
    write: (line) => {
      errors.push(line);
      if (line.includes("recording the reason failed")) settled.resolve();
    },
  });
  const estop = containedEstop({
    clock,
    log,
    audit: {
      record: (d) => {
        audited.push(d);
        if (d.function === "reason") settled.resolve();
      },
    },
  });
  const told: { reason: Promise<string | null>; cause: string }[] = [];
  estop.onReasonArriving((reason, cause) => told.push({ reason, cause }));
  return { estop, state, errors, audited, settled: settled.promise, told };
}

Deno.test("Estop.trigger audits a reason still arriving and tells the reason listeners when the clock's monoMs throws twice at the latch", async () => {
  const r = rig();
  const body = Promise.withResolvers<string | undefined>();
  r.state.broken = true;
  const answer = r.estop.trigger(body.promise);
  r.state.broken = false;
  assert.equal(r.told.length, 1, "the reason listener was told in the trigger's own step");
  assert.equal(r.told[0]!.cause, "api");
  body.resolve("smoke at cell 3");
  assert.equal(await r.told[0]!.reason, "smoke at cell 3");
  await r.settled;
  const reasons = r.audited.filter((d) => d.function === "reason");
  assert.equal(reasons.length, 1, "the reason's audit entry was written");
  assert.deepEqual(reasons[0]!.args, { reason: "smoke at cell 3", cause: "api" });
  assert.equal(reasons[0]!.latency_ms, null, "no invented latency");
  assert.equal(
    r.errors.filter((l) => l.startsWith("ERROR") && l.includes("e-stop reason")).length,
    2,
  );
  const result = await answer;
  assert.equal(result.fault_engaged, true);
});

Deno.test("Estop.trigger audits a reason still arriving when the clock's monoMs throws twice as it arrives", async () => {
  const r = rig();
  const body = Promise.withResolvers<string | undefined>();
  const result = await r.estop.trigger(body.promise);
  assert.equal(result.fault_engaged, true);
  assert.equal(r.told.length, 1);
  r.state.broken = true;
  body.resolve("smoke at cell 3");
  await r.settled;
  r.state.broken = false;
  const reasons = r.audited.filter((d) => d.function === "reason");
  assert.equal(reasons.length, 1, "the reason's audit entry was written");
  assert.deepEqual(reasons[0]!.args, { reason: "smoke at cell 3", cause: "api" });
  assert.equal(reasons[0]!.latency_ms, null, "no invented latency");
  assert.equal(
    r.errors.filter((l) => l.startsWith("ERROR") && l.includes("e-stop reason")).length,
    2,
  );
});

Deno.test("Estop.trigger audits a reason still arriving with its latency from the latch when the clock works", async () => {
  const r = rig();
  const result = await r.estop.trigger(Promise.resolve("smoke at cell 3"));
  assert.equal(result.fault_engaged, true);
  await r.settled;
  const reasons = r.audited.filter((d) => d.function === "reason");
  assert.equal(reasons.length, 1);
  assert.equal(typeof reasons[0]!.latency_ms, "number");
  assert.deepEqual(r.errors.filter((l) => l.includes("clock")), []);
});
