/**
 * The e-stop must work whatever else is failing: a provider that comes back while latched is
 * secured, its expectations read back again (the re-verification), shown in status, logged,
 * published as `estop_verification` and audited. An audit sink that throws on that record is
 * contained as on the latch's: one ERROR line naming the audit entry lost -- not
 * "re-verification failed" (it was read back, shown and published) -- and the next
 * re-verification runs, is published and offered to the audit as usual. In-process: the real
 * Estop over a router that answers every call at once, a reader that reads the expectation back
 * as met, and an audit sink whose record() throws for every re-verification's entry.
 */
import assert from "node:assert/strict";
import type { AuditDecision } from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import {
  containedEstop,
  errorLog,
  faultRecordingModes,
  heaterOffReader,
  heaterOffVerifiedLadder,
  providerComingBack,
  recordingRouter,
} from "./_clock_rig.ts";

/** Whether `d` is a re-verification's entry (a provider back while latched). */
function isReverification(d: AuditDecision): boolean {
  return d.action === "estop" &&
    (d.args as { reason?: string } | null)?.reason === "available while latched";
}

Deno.test("Estop contains an audit that throws on a re-verification's entry: one ERROR line, the next re-verification runs", async () => {
  const made: string[] = [];
  const { inventory, host, comeBack } = providerComingBack("plant");
  const { modes } = faultRecordingModes();
  const { log, errors } = errorLog();
  const bus = new EventBus();
  const verifications: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_verification") verifications.push(event);
  });
  const audited: AuditDecision[] = [];
  const offered: AuditDecision[] = [];
  const { reads, readBacks } = heaterOffReader();
  const estop = containedEstop({
    router: recordingRouter(made),
    inventory,
    reads,
    log,
    bus,
    modes,
    audit: {
      record: (d) => {
        if (!isReverification(d)) return void audited.push(d);
        offered.push(d);
        throw new Error("audit broke");
      },
    },
    safeState: heaterOffVerifiedLadder(),
  });
  const result = await estop.trigger("test");
  assert.equal(result.verification.outcome, "verified", "the trigger's own read-back");
  assert.equal(audited.length, 1, "the latch's entry");

  comeBack();
  await estop.securing(host);
  assert.deepEqual(made, ["plant set_heater", "plant set_heater"], "secured on its return");
  assert.equal(readBacks(), 2, "read back again");
  assert.equal(verifications.length, 2, "the re-verification was published");
  assert.equal(estop.status().verification?.outcome, "verified", "status shows it");
  assert.equal(offered.length, 1, "its entry was offered to the audit");
  assert.equal(errors.length, 1, `one ERROR line:\n${errors.join("\n")}`);
  assert.match(
    errors[0]!,
    /^ERROR .*e-stop: auditing e-stop re-verification \(plant\) failed: audit broke; its audit entry is lost/,
  );
  assert.ok(!errors.some((l) => l.includes("re-verification failed")), errors.join("\n"));

  // Back again: the next re-verification runs as usual, its entry offered, its failure said.
  comeBack();
  await estop.securing(host);
  assert.equal(readBacks(), 3, "read back once more");
  assert.equal(verifications.length, 3, "published");
  assert.equal(offered.length, 2, "its entry was offered to the audit");
  assert.equal(errors.length, 2, `one ERROR line each:\n${errors.join("\n")}`);
  assert.equal(estop.latched, true, "the latch holds");
});
