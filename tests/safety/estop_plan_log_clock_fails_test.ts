/**
 * The e-stop must work whatever else is failing: the plan is logged again when it changes, at most
 * once per PLAN_LOG_INTERVAL_MS, measured on the monotonic clock. A clock that throws there takes
 * nothing from the stop: a reload of safety.safe_state while latched still secures the providers
 * whose ladder calls it changes, and the plan log waiting for its turn neither throws from its
 * timer (an uncaught error ends the runtime) nor stays armed: with no time to measure the interval
 * by, it waits a whole one, the plan is logged all the same, and each failure is an ERROR line.
 * In-process: the real Estop over a router that answers every call at once, and a clock whose
 * monoMs throws once the test says so (the system clock, or a manual one for the timer's turn).
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { Estop, PLAN_LOG_INTERVAL_MS, type SafeStateConfig } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { call } from "./_fixture.ts";
import { containedEstop, failingClock, providersUp, recordingRouter } from "./_clock_rig.ts";

/** A ladder of one call to plant, `fn`, with no read-back. */
function ladder(fn: string): SafeStateConfig {
  return {
    setpoints: [],
    hooks: [call("plant/plant0", fn)],
    zeroIsSafe: false,
    expect: [],
    verifyTimeoutMs: 100,
  };
}

/** A logger at level info whose lines are kept. */
function infoLog() {
  return capturingLogger({ level: "info", now: () => 0 });
}

Deno.test("Estop.reconfigure while latched secures again the provider whose ladder calls it changes when the clock's monoMs throws at the plan log", async () => {
  const made: string[] = [];
  let broken = false;
  const { clock, failures } = failingClock({ read: "monoMs", times: Infinity, when: () => broken });
  const { log, lines } = infoLog();
  const estop = containedEstop({
    router: recordingRouter(made),
    clock,
    log,
    safeState: ladder("stop_old"),
  });
  try {
    estop.logPlan("start");
    // A change logged at once: the next one within the interval reads the clock to wait.
    estop.reconfigure(ladder("stop_old"));
    await estop.trigger("test");
    assert.deepEqual(made, ["plant stop_old"]);
    broken = true;
    const runs = estop.reconfigure(ladder("stop_new"));
    assert.equal(runs.length, 1, "plant is secured again with the new ladder");
    await Promise.all(runs);
    assert.deepEqual(made, ["plant stop_old", "plant stop_new"]);
    assert.ok(failures() >= 2, "the clock threw");
    assert.ok(
      lines.some((l) => l.startsWith("ERROR") && l.includes("e-stop plan log")),
      lines.join("\n"),
    );
  } finally {
    estop.close();
  }
});

Deno.test("Estop logs the plan waiting for its turn, and leaves no timer armed, when the clock's monoMs throws as the timer fires", () => {
  const manual = new ManualClock();
  let broken = false;
  const { clock } = failingClock({
    read: "monoMs",
    times: Infinity,
    when: () => broken,
    base: manual,
  });
  const { log, lines } = infoLog();
  const estop = new Estop({
    router: recordingRouter(),
    inventory: providersUp("plant"),
    reads: {} as FreshReader,
    clock,
    log,
    safeState: ladder("stop_a"),
  });
  const planLogs = () => lines.filter((l) => l.includes("e-stop plan (")).length;
  try {
    estop.logPlan("start");
    estop.reconfigure(ladder("stop_b"));
    assert.equal(planLogs(), 2, "the first change is logged at once");
    estop.reconfigure(ladder("stop_c"));
    assert.equal(planLogs(), 2, "the next one within the interval waits");
    assert.equal(manual.pendingTimers, 1);
    broken = true;
    manual.advance(PLAN_LOG_INTERVAL_MS);
    assert.equal(planLogs(), 3, "logged at its turn all the same");
    assert.equal(manual.pendingTimers, 0, "no timer left armed");
    // The time it was logged at is unknown: the next change waits a whole interval.
    estop.reconfigure(ladder("stop_d"));
    assert.equal(planLogs(), 3);
    assert.deepEqual(manual.pendingDelays(), [PLAN_LOG_INTERVAL_MS]);
    manual.advance(PLAN_LOG_INTERVAL_MS);
    assert.equal(planLogs(), 4);
    assert.equal(manual.pendingTimers, 0, "no timer left armed");
    assert.ok(
      lines.some((l) => l.startsWith("ERROR") && l.includes("clock monoMs failed")),
      lines.join("\n"),
    );
  } finally {
    estop.close();
  }
});
