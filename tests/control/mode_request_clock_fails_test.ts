/**
 * An operator's mode request is answered with what happened whatever the clock does: a monotonic
 * clock that throws when ModeManager measures the request's latency (before the transition, or
 * after it took effect) neither fails a request whose mode changed nor replaces a refusal's reason.
 * Asked once more; when it fails again the latency is left out of the audit entry (null: none
 * measured, none invented), each failure an ERROR line. In-process: the real ModeManager over a
 * router that answers every call at once, an audit sink that keeps its entries, and a clock whose
 * monoMs throws.
 */
import assert from "node:assert/strict";
import type { AuditDecision } from "../../src/control/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { errorLog, failingClock, providersUp, recordingRouter } from "../safety/_clock_rig.ts";

/** Real modes whose clock's monoMs throws `times` times while `when(mode)` holds. */
function rig(o: { times: number; when: (mode: string) => boolean }) {
  let modes: ModeManager | null = null;
  const fc = failingClock({
    read: "monoMs",
    times: o.times,
    when: () => modes !== null && o.when(modes.current()),
  });
  const { log, errors } = errorLog();
  const audited: AuditDecision[] = [];
  modes = new ModeManager({
    router: recordingRouter(),
    inventory: providersUp("plant"),
    bus: new EventBus(),
    clock: fc.clock,
    log,
    audit: { record: (d) => audited.push(d) },
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: [], afterTransition: [] },
  });
  return { modes, errors, audited, failures: fc.failures };
}

Deno.test("ModeManager.requestWithReport answers with the new mode when the clock's monoMs throws after the transition took effect", async () => {
  const r = rig({ times: Infinity, when: (mode) => mode === "MANUAL" });
  const report = await r.modes.requestWithReport("MANUAL");
  assert.deepEqual(report, { mode: "MANUAL", hook_failures: [] });
  assert.equal(r.modes.current(), "MANUAL", "the mode is in force");
  assert.equal(r.failures(), 2, "asked once more, then left out");
  assert.equal(r.audited.length, 1);
  assert.equal(r.audited[0]!.outcome, "accepted");
  assert.equal(r.audited[0]!.function, "MANUAL");
  assert.equal(r.audited[0]!.latency_ms, null, "no latency measured, none invented");
  assert.equal(
    r.errors.filter((l) => l.startsWith("ERROR") && l.includes("clock monoMs failed")).length,
    2,
    r.errors.join("\n"),
  );
});

Deno.test("ModeManager.requestWithReport measures the latency when the clock's monoMs throws once after the transition", async () => {
  const r = rig({ times: 1, when: (mode) => mode === "MANUAL" });
  const report = await r.modes.requestWithReport("MANUAL");
  assert.equal(report.mode, "MANUAL");
  assert.equal(r.failures(), 1);
  assert.equal(typeof r.audited[0]!.latency_ms, "number", "asked once more: measured");
});

Deno.test("ModeManager.requestWithReport runs the transition when the clock's monoMs throws before it", async () => {
  const r = rig({ times: Infinity, when: () => true });
  const report = await r.modes.requestWithReport("MANUAL");
  assert.equal(report.mode, "MANUAL");
  assert.equal(r.modes.current(), "MANUAL");
  assert.equal(r.audited.length, 1);
  assert.equal(r.audited[0]!.latency_ms, null);
});

Deno.test("ModeManager.requestWithReport refuses with the refusal's reason, not the clock's, when the clock's monoMs throws", async () => {
  const r = rig({ times: Infinity, when: () => true });
  await assert.rejects(
    () => r.modes.requestWithReport("AUTO"),
    (err: unknown) =>
      err instanceof RuntimeError && err.code === "FAILED_PRECONDITION" &&
      err.message === "Invalid mode transition: IDLE -> AUTO",
  );
  assert.equal(r.modes.current(), "IDLE");
  assert.equal(r.audited.length, 1);
  assert.equal(r.audited[0]!.outcome, "refused");
  assert.equal(r.audited[0]!.latency_ms, null);
});
