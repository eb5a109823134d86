/**
 * Estop.onLatchChange: each latch and each release is told once it is in force, also when its
 * `estop_change` was not published (a wall clock that fails twice: no time to date it); a trigger
 * while latched and a clear while released change nothing and are not told; a listener that throws
 * takes neither the latch nor the other listeners away (an ERROR line). In-process, over the
 * clock-failure rig (tests/safety/_clock_rig.ts).
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { containedEstop, errorLog, failingClock } from "./_clock_rig.ts";

Deno.test("Estop.onLatchChange tells each latch and release, announced or not, once", async () => {
  const failing = { on: false };
  const fc = failingClock({ read: "nowMs", times: Infinity, when: () => failing.on });
  const bus = new EventBus();
  const announced: boolean[] = [];
  bus.subscribe((e) => {
    if (e.event.kind === "estop_change") announced.push(e.event.latched);
  });
  const { log, errors } = errorLog();
  const estop = containedEstop({ clock: fc.clock, bus, log });
  const told: boolean[] = [];
  estop.onLatchChange(() => {
    throw new Error("listener failed");
  });
  const off = estop.onLatchChange((latched) => told.push(latched));

  failing.on = true;
  const stop = estop.trigger("clock failing");
  failing.on = false;
  assert.equal(estop.latched, true, "latched whatever the listeners do");
  assert.deepEqual(told, [true], "told the latch");
  assert.deepEqual(announced, [], "not announced: no time");
  await stop;
  await estop.trigger("again while latched");
  assert.deepEqual(told, [true], "a trigger while latched changes nothing");
  assert.deepEqual(announced, [true], "that trigger is announced (a working clock)");

  failing.on = true;
  estop.clear();
  failing.on = false;
  assert.deepEqual(told, [true, false], "told the release");
  estop.clear();
  assert.deepEqual(told, [true, false], "a clear while released changes nothing");
  assert.deepEqual(announced, [true], "the release not announced: no time");
  assert.equal(
    errors.filter((l) => l.includes("e-stop latch listener failed: listener failed")).length,
    2,
    errors.join("\n"),
  );

  off();
  await estop.trigger("after unsubscribing");
  assert.deepEqual(told, [true, false], "not told once unsubscribed");
  assert.deepEqual(announced, [true, true], "announced with a working clock");
});
