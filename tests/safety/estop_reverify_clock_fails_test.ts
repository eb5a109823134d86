/**
 * The e-stop must work whatever else is failing: a provider that comes back while latched is
 * secured, then its expectations are read back again (the re-verification), published as
 * `estop_verification` and audited. A monotonic clock that throws as that re-verification begins
 * does not take it away: asked once more, it runs as usual; when the clock keeps failing, the
 * read-back runs once (no deadline to bound a retry), is published with the wall clock's time and
 * audited without a latency (none measured, none invented), each failure an ERROR line (the
 * read-back's own among them). In-process: the real Estop over a router that answers every call
 * at once, a reader that reads the expectation back as met, and an injected clock whose monoMs
 * throws from the securing run's ladder call on.
 */
import assert from "node:assert/strict";
import type { AuditDecision } from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import {
  containedEstop,
  errorLog,
  failingClock,
  faultRecordingModes,
  heaterOffReader,
  heaterOffVerifiedLadder,
  providerComingBack,
  recordingRouter,
} from "./_clock_rig.ts";

/**
 * A latched e-stop (triggered with a working clock) whose clock's monoMs throws `times` times
 * once provider plant's securing call, after its return, was made; what it did, recorded.
 */
async function latchedThenBack(o: { times: number }) {
  const made: string[] = [];
  // The trigger's ladder call is the first; the securing run's, after the return, the second.
  const router = recordingRouter(made);
  const { inventory, host, comeBack } = providerComingBack("plant");
  const { modes } = faultRecordingModes();
  const { clock, failures } = failingClock({
    read: "monoMs",
    times: o.times,
    when: () => made.length >= 2,
  });
  const { log, errors } = errorLog();
  const bus = new EventBus();
  const verifications: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_verification") verifications.push(event);
  });
  const audited: AuditDecision[] = [];
  const { reads, readBacks } = heaterOffReader();
  const estop = containedEstop({
    router,
    inventory,
    reads,
    clock,
    log,
    bus,
    modes,
    audit: { record: (d) => audited.push(d) },
    safeState: heaterOffVerifiedLadder(),
  });
  const result = await estop.trigger("test");
  assert.equal(result.verification.outcome, "verified", "the trigger's own read-back");
  assert.equal(verifications.length, 1);
  comeBack();
  const securing = estop.securing(host);
  assert.ok(securing !== null, "a securing run began for the return while latched");
  const actions = await securing;
  const reverified = audited.filter((d) =>
    d.action === "estop" && (d.args as { reason?: string } | null)?.reason ===
      "available while latched"
  );
  return {
    estop,
    made,
    actions,
    errors,
    verifications,
    reverified,
    failures,
    readBacks,
  };
}

Deno.test("Estop re-verifies a provider back while latched when the clock's monoMs throws once as the re-verification begins", async () => {
  const r = await latchedThenBack({ times: 1 });
  assert.deepEqual(r.made, ["plant set_heater", "plant set_heater"], "secured on its return");
  assert.equal(r.actions.length, 1);
  assert.equal(r.failures(), 1, "the clock threw");
  assert.equal(r.verifications.length, 2, "the re-verification was published");
  assert.equal(r.reverified.length, 1, "the re-verification was audited");
  assert.equal((r.reverified[0]!.result as { verification?: string }).verification, "verified");
  assert.equal(r.readBacks(), 2);
  assert.equal(
    r.errors.filter((l) => l.includes("clock monoMs failed")).length,
    1,
    r.errors.join("\n"),
  );
  assert.ok(!r.errors.some((l) => l.includes("re-verification failed")), r.errors.join("\n"));
});

Deno.test("Estop re-verifies a provider back while latched, once and without a latency, when the clock's monoMs always throws", async () => {
  const r = await latchedThenBack({ times: Infinity });
  assert.deepEqual(r.made, ["plant set_heater", "plant set_heater"], "secured on its return");
  assert.equal(r.verifications.length, 2, "the re-verification was published");
  assert.equal(r.readBacks(), 2, "read back once: no deadline to bound a retry");
  assert.equal(r.estop.status().verification?.outcome, "verified", "status shows it");
  assert.equal(r.reverified.length, 1, "the re-verification was audited");
  assert.equal(r.reverified[0]!.latency_ms, null, "no latency measured, none invented");
  assert.ok(
    r.errors.some((l) =>
      l.startsWith("ERROR") && l.includes("safe-state verification (start)") &&
      l.includes("clock monoMs failed")
    ),
    `the read-back's own clock failure is logged:\n${r.errors.join("\n")}`,
  );
  assert.ok(!r.errors.some((l) => l.includes("re-verification failed")), r.errors.join("\n"));
});
