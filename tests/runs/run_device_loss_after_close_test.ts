/**
 * A device loss is recorded by the run open when it is found, not by the run open at its date
 * (docs/http-api.md, "A device loss is recorded by the run open when it is found"): dated from its
 * first failed read, found down a bound later, it may be found after the run it began in closed.
 * That run's record is final (nothing follows its run_closed): the loss is the next run's event,
 * dated before that run's start, when one is open by then, and no run's when none is (no safety
 * event: no run_opened counts it).
 */
import assert from "node:assert/strict";
import { ManualClock } from "../helpers/clock.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

/** The bound of docs/safety.md §5 at the rig's 500 ms polling: 3 intervals. */
const FOUND_AFTER_MS = 1500;

function deviceLoss(id: string, atEpochMs: number) {
  return {
    incident_id: id,
    trigger: "device_loss",
    cause: "device sim0/tempctl0 lost: its reads fail",
    at_epoch_ms: atEpochMs,
  };
}

Deno.test("a device loss found after the run it began in closed: the next run's event dated before its start, else no run's", async () => {
  const clock = new ManualClock(0, 1_700_000_000_000);
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files, { clock });
  await registry.start();
  try {
    // Its first failed read in the first run, which closes; the second opens before the finding.
    const first = (await registry.open({})).run;
    clock.advance(100);
    const failedAt = clock.nowMs();
    clock.advance(100);
    await registry.close(first.run_id, { close_reason: "completed" });
    const second = (await registry.open({})).run;
    clock.advance(FOUND_AFTER_MS - 200);
    registry.recordIncident(deviceLoss("inc-1", failedAt));
    assert.deepEqual(
      eventsOnDisk(files, first.run_id).map((e) => e[1]),
      ["run_opened", "run_closed"],
      "the closed run's record is final",
    );
    const events = (await registry.listEvents(second.run_id)).events;
    const loss = events.find((e) => e.category === "incident");
    assert.ok(loss, JSON.stringify(events));
    assert.equal(loss.type, "device_loss");
    assert.equal(loss.occurred_at_epoch_ms, failedAt);
    assert.ok(loss.occurred_at_epoch_ms < second.started_at_epoch_ms, "dated before its run");

    // Its first failed read in the second run, found with no run open: no run records it.
    clock.advance(100);
    const failedAgainAt = clock.nowMs();
    await registry.close(second.run_id, { close_reason: "completed" });
    clock.advance(FOUND_AFTER_MS);
    registry.recordIncident(deviceLoss("inc-2", failedAgainAt));
    const third = (await registry.open({})).run;
    const secondEvents = (await registry.listEvents(second.run_id)).events;
    assert.equal(secondEvents.filter((e) => e.category === "incident").length, 1);
    const thirdEvents = (await registry.listEvents(third.run_id)).events;
    assert.deepEqual(thirdEvents.map((e) => e.category), ["run_opened"]);
    assert.equal(thirdEvents[0]!.payload.safety_events_between_runs, undefined);
    assert.equal(registry.info().dropped_bus_events, 0);
  } finally {
    await registry.shutdown();
  }
});
