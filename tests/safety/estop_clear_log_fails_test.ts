/**
 * A reset permits whatever else is failing, its logger included (a closed stdout): the latch is
 * released before Estop.clear logs it, so a log line that throws there used to make clear() throw
 * after the release was in force -- the caller told it failed, the release never announced
 * (`estop_change` latched false). A line the logger fails to write is lost; the release is
 * announced and clear() returns. In-process: the real Estop over a router that answers every
 * call at once, a modes port that records FAULT, a logger whose WARN and ERROR lines throw while
 * the test says so, and (second test) a clock whose nowMs throws once from the clear on.
 */
import assert from "node:assert/strict";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { containedEstop, failingClock } from "./_clock_rig.ts";

/** A latched e-stop whose logger throws on WARN and ERROR lines once `broken.on` is set. */
async function latched() {
  const broken = { on: false };
  const c = failingClock({ read: "nowMs", times: 1, when: () => broken.on });
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => 0,
    write: (line) => {
      if (broken.on && (line.startsWith("WARN") || line.startsWith("ERROR"))) {
        throw new Error("log sink failed");
      }
    },
  });
  const bus = new EventBus();
  const releases: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_change" && !event.latched) releases.push(event);
  });
  const estop = containedEstop({
    clock: c.clock,
    log,
    bus,
  });
  await estop.trigger("latched for the test");
  assert.equal(estop.status().latched, true);
  return { estop, broken, releases, clockFailures: c.failures };
}

Deno.test("Estop.clear releases the latch, announces it and returns when its logger throws", async () => {
  const r = await latched();
  r.broken.on = true;
  r.estop.clear();
  assert.equal(r.estop.status().latched, false, "the release is in force");
  assert.equal(r.releases.length, 1, "the release was announced");
});

Deno.test("Estop.clear returns { latched: false } and announces the release when its logger and clock both throw once", async () => {
  const r = await latched();
  r.broken.on = true;
  let answer: unknown;
  assert.doesNotThrow(() => (answer = r.estop.clear()), "clear() returns");
  assert.deepEqual(answer, { latched: false });
  assert.equal(r.clockFailures(), 1, "the clock threw once (asked again)");
  assert.equal(r.releases.length, 1, "the release was announced");
});
