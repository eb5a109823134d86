/**
 * The e-stop's latch and release are told as a sequence (`estop_change` events, run events of
 * category `estop`, `estop.latched_at_epoch_ms`): a step back of the wall clock (NTP on a
 * Raspberry Pi without a real-time clock) must not date a release before the latch it ends, nor a
 * trigger before the release before it. In-process: the real Estop over a router that answers
 * every call at once, a modes port that records FAULT, and a wall clock the test sets.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { withRealTimers } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { containedEstop } from "./_clock_rig.ts";

const W = 1_767_000_000_000;

Deno.test("Estop dates a trigger and a release no earlier than the one before it when the wall clock steps back (NTP)", async () => {
  let wall = W;
  const bus = new EventBus();
  const changes: [boolean, number][] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_change") changes.push([event.latched, event.timestamp_ms - W]);
  });
  const estop = containedEstop({
    clock: withRealTimers({ nowMs: () => wall, monoMs: () => systemClock.monoMs() }),
    log: testLogger(),
    bus,
  });
  try {
    await estop.trigger("first");
    wall = W - 10_000; // NTP steps the wall clock back 10 s
    estop.clear();
    wall = W - 9_000;
    await estop.trigger("second");
    assert.equal(estop.status().latched_at_epoch_ms, W, "latched no earlier than the release");
    wall = W + 5_000; // past them again: the clock's own time
    estop.clear();
    assert.deepEqual(
      changes,
      [[true, 0], [false, 0], [true, 0], [false, 5_000]],
      "never earlier than the trigger or release before it",
    );
  } finally {
    estop.close();
  }
});
