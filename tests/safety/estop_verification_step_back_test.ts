/**
 * An e-stop's read-back (`estop_verification`, a run's `estop` event of type `verification`) tells
 * what its stop left behind, so it comes after the trigger it verifies: a step back of the wall
 * clock (NTP on a Raspberry Pi without a real-time clock) while the ladder runs must not date the
 * verification before its trigger, which would put it an hour before the stop in a timeline sorted
 * by time (docs/http-api.md, "Order of events"). In-process: the real Estop over a router that
 * answers every call at once (the clock steps back as the ladder's call is made), a reader that
 * reads the expectation back as met, and a wall clock the test sets.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { withRealTimers } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import {
  containedEstop,
  heaterOffReader,
  heaterOffVerifiedLadder,
  recordingRouter,
} from "./_clock_rig.ts";

const W = 1_767_000_000_000;

Deno.test("Estop dates its verification no earlier than the trigger it verifies when the wall clock steps back during the stop (NTP)", async () => {
  let wall = W;
  const bus = new EventBus();
  const told: [string, number][] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_change" || event.kind === "estop_verification") {
      told.push([event.kind, event.timestamp_ms - W]);
    }
  });
  // NTP steps the wall clock back an hour while the ladder's call is made.
  const router = recordingRouter([], () => (wall = W - 3_600_000));
  const estop = containedEstop({
    router,
    reads: heaterOffReader().reads,
    clock: withRealTimers({ nowMs: () => wall, monoMs: () => systemClock.monoMs() }),
    log: testLogger(),
    bus,
    safeState: heaterOffVerifiedLadder(),
  });
  try {
    const result = await estop.trigger("test");
    assert.equal(result.verification.outcome, "verified");
    assert.deepEqual(
      told,
      [["estop_change", 0], ["estop_verification", 0]],
      "the verification is dated no earlier than its trigger",
    );
  } finally {
    estop.close();
  }
});
