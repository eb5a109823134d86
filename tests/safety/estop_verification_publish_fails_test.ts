/**
 * The e-stop must work whatever else is failing: a bus whose publish throws on the read-back's
 * `estop_verification` (an injected one: EventBus itself catches its listeners' errors) must not
 * take the trigger's answer away after the stop's calls were made, nor a re-verification's audit
 * entry. One ERROR line each; status shows the verification. In-process: the real Estop over a
 * router that answers every call at once and a reader that reads the expectation back as met.
 */
import assert from "node:assert/strict";
import type { AuditDecision } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import {
  containedEstop,
  errorLog,
  faultRecordingModes,
  heaterOffReader,
  heaterOffVerifiedLadder,
  providerComingBack,
  recordingRouter,
} from "./_clock_rig.ts";

/** A bus whose publish throws on every estop_verification, and passes the rest on. */
class VerificationThrowingBus extends EventBus {
  override publish(event: Parameters<EventBus["publish"]>[0]): number {
    if (event.kind === "estop_verification") throw new Error("bus broke");
    return super.publish(event);
  }
}

Deno.test("Estop answers the trigger and audits a re-verification when publishing the verification throws", async () => {
  const made: string[] = [];
  const { inventory, host, comeBack } = providerComingBack("plant");
  const { modes } = faultRecordingModes();
  const { log, errors } = errorLog();
  const audited: AuditDecision[] = [];
  const { reads, readBacks } = heaterOffReader();
  const estop = containedEstop({
    router: recordingRouter(made),
    inventory,
    reads,
    log,
    bus: new VerificationThrowingBus(),
    modes,
    audit: { record: (d) => void audited.push(d) },
    safeState: heaterOffVerifiedLadder(),
  });
  const result = await estop.trigger("test");
  assert.deepEqual(made, ["plant set_heater"], "the stop's call was made");
  assert.equal(result.verification.outcome, "verified", "the trigger answers with its read-back");
  assert.equal(estop.latched, true);
  assert.equal(errors.length, 1, `one ERROR line:\n${errors.join("\n")}`);
  assert.match(errors[0]!, /^ERROR .*e-stop: publishing .* failed: bus broke; it is not published/);

  comeBack();
  await estop.securing(host);
  assert.equal(readBacks(), 2, "read back again");
  assert.equal(estop.status().verification?.outcome, "verified", "status shows it");
  assert.equal(audited.length, 2, "the latch's entry and the re-verification's");
  assert.equal(errors.length, 2, `one ERROR line each:\n${errors.join("\n")}`);
  assert.ok(!errors.some((l) => l.includes("re-verification failed")), errors.join("\n"));
});
