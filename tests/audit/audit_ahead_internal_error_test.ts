/**
 * A write ahead that fails inside the trail (a piece of its injected options throws) still lets
 * the call's outcome keep the mode it was decided in (docs/http-api.md "Audit trail": `mode` is the
 * runtime mode when the decision was made), as without a journal: a call decided in MANUAL and
 * answered after an e-stop latched says MANUAL, not FAULT. A record already queued when the
 * failure came is settled by that outcome, not left in flight.
 */
import assert from "node:assert/strict";
import { AUDIT_WRITE_AHEAD_TIMEOUT_MS, type AuditTrail } from "../../src/audit/mod.ts";
import type { Clock, TimerId } from "../../src/common/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ahead, duty, openTrail, withTempDir } from "./_rig.ts";

/**
 * Runs `fn` with a journaled trail (openTrail) in a fresh temporary folder, on a ManualClock or the
 * clock `o.clock` makes of it, its mode MANUAL until `fn` sets another, logging to `lines`; closes
 * the trail once `fn` has run.
 */
function withTrail(
  o: { runId?: () => string | null; clock?: (time: ManualClock) => Clock },
  fn: (t: AuditTrail, setMode: (m: string) => void, lines: string[]) => Promise<void>,
): Promise<void> {
  return withTempDir("audit_ahead_internal_error_", async (dir) => {
    const time = new ManualClock();
    let mode = "MANUAL";
    const { log, lines } = capturingLogger();
    const t = await openTrail(dir, {
      clock: o.clock ? o.clock(time) : time,
      log,
      mode: () => mode,
      ...(o.runId ? { runId: o.runId } : {}),
    });
    await fn(t, (m) => (mode = m), lines);
    await t.close();
  });
}

/**
 * An e-stop latches (mode FAULT) while the call written ahead as `intent` is on the wire, then its
 * outcome is recorded: asserts its entry keeps the mode it was decided in (MANUAL), accepted, and
 * that no call is left in flight.
 */
async function answeredInFault(
  t: AuditTrail,
  setMode: (m: string) => void,
  intent: Awaited<ReturnType<AuditTrail["writeAhead"]>>,
): Promise<void> {
  setMode("FAULT");
  t.record({ ...duty(0.5), intent });
  const page = await t.query({ limit: 10 });
  assert.deepEqual(page.entries.map((e) => [e.mode, e.outcome]), [["MANUAL", "accepted"]]);
  assert.deepEqual(t.inFlightCalls(), []);
}

/** Asserts one line of `lines` includes `text`. */
function assertSaidOnce(lines: readonly string[], text: string): void {
  assert.equal(lines.filter((l) => l.includes(text)).length, 1);
}

Deno.test("AuditTrail whose runId throws while writing ahead gives the call's outcome the mode it was decided in, MANUAL", async () => {
  await withTrail({
    runId: () => {
      throw new Error("run registry broke");
    },
  }, async (t, setMode, lines) => {
    const intent = await t.writeAhead(ahead(0.5));
    await answeredInFault(t, setMode, intent);
    assertSaidOnce(lines, "audit decision not written ahead: run registry broke");
  });
});

Deno.test("AuditTrail whose clock throws while a queued write ahead waits settles that record with the call's outcome, in the mode it was decided in", async () => {
  let broken = true;
  await withTrail({
    clock: (time) => ({
      nowMs: () => time.nowMs(),
      monoMs: () => time.monoMs(),
      setTimer: (fn: () => void, ms: number): TimerId => {
        if (broken && ms === AUDIT_WRITE_AHEAD_TIMEOUT_MS) throw new Error("timer broke");
        return time.setTimer(fn, ms);
      },
      clearTimer: (id: TimerId) => time.clearTimer(id),
    }),
  }, async (t, setMode, lines) => {
    const intent = await t.writeAhead(ahead(0.5));
    broken = false;
    // Its record was queued: it is in flight until its outcome.
    assert.deepEqual(t.inFlightCalls().map((c) => c.mode), ["MANUAL"]);
    // Settled by its outcome: a closing record would not list it, nor the next start find it
    // interrupted.
    await answeredInFault(t, setMode, intent);
    assertSaidOnce(lines, "audit decision queued ahead, not waited for: timer broke");
  });
});
