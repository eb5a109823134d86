/**
 * A write ahead that fails inside the trail (a piece of its injected options throws) still lets
 * the call's outcome keep the mode it was decided in (docs/http-api.md "Audit trail": `mode` is the
 * runtime mode when the decision was made), as without a journal: a call decided in MANUAL and
 * answered after an e-stop latched says MANUAL, not FAULT. A record already queued when the
 * failure came is settled by that outcome, not left in flight.
 */
import assert from "node:assert/strict";
import { AUDIT_WRITE_AHEAD_TIMEOUT_MS, AuditTrail } from "../../src/audit/mod.ts";
import type { Clock, TimerId } from "../../src/common/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";
import { ahead, duty } from "./_rig.ts";

async function withTrail(
  o: { runId?: () => string | null; clock?: (time: ManualClock) => Clock },
  fn: (t: AuditTrail, setMode: (m: string) => void, lines: string[]) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "audit_ahead_internal_error_" });
  try {
    const time = new ManualClock();
    let mode = "MANUAL";
    const { log, lines } = capturingLogger();
    const t = new AuditTrail({
      clock: o.clock ? o.clock(time) : time,
      log,
      mode: () => mode,
      ...(o.runId ? { runId: o.runId } : {}),
    });
    await t.openJournal({ dir, files: new SwitchableFiles(), maxFileBytes: 1 << 20, maxFiles: 2 });
    await fn(t, (m) => (mode = m), lines);
    await t.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("AuditTrail whose runId throws while writing ahead gives the call's outcome the mode it was decided in, MANUAL", async () => {
  await withTrail({
    runId: () => {
      throw new Error("run registry broke");
    },
  }, async (t, setMode, lines) => {
    const intent = await t.writeAhead(ahead(0.5));
    setMode("FAULT"); // an e-stop latched while the call was on the wire
    t.record({ ...duty(0.5), intent });
    const page = await t.query({ limit: 10 });
    assert.deepEqual(page.entries.map((e) => [e.mode, e.outcome]), [["MANUAL", "accepted"]]);
    assert.deepEqual(t.inFlightCalls(), []);
    assert.equal(
      lines.filter((l) => l.includes("audit decision not written ahead: run registry broke"))
        .length,
      1,
    );
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
    setMode("FAULT");
    t.record({ ...duty(0.5), intent });
    const page = await t.query({ limit: 10 });
    assert.deepEqual(page.entries.map((e) => [e.mode, e.outcome]), [["MANUAL", "accepted"]]);
    // Settled by its outcome: a closing record would not list it, nor the next start find it
    // interrupted.
    assert.deepEqual(t.inFlightCalls(), []);
    assert.equal(
      lines.filter((l) => l.includes("audit decision queued ahead, not waited for: timer broke"))
        .length,
      1,
    );
  });
});
