/**
 * The plan log waiting for its turn (PLAN_LOG_INTERVAL_MS) runs from a timer, where a throw is an
 * uncaught error that ends the runtime (main.ts), latch and all. A logger that throws on the plan's
 * lines, or a plan view that throws, neither throws from that timer nor leaves one armed: one
 * ERROR line, and the next change of the plan is logged as usual. In-process: the real Estop over
 * a router that answers every call at once, a manual clock for the timer's turn, and a logger
 * whose plan lines throw while the test says so (or a plan view that throws).
 */
import assert from "node:assert/strict";
import { LineLogger } from "../../src/host/mod.ts";
import {
  Estop,
  type EstopOptions,
  type EstopPlanView,
  PLAN_LOG_INTERVAL_MS,
  type SafeStateConfig,
} from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { call } from "./_fixture.ts";
import { providersUp, recordingRouter } from "./_clock_rig.ts";

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

/** An e-stop whose plan view throws while `broken.view` is set. */
class ViewFailingEstop extends Estop {
  constructor(o: EstopOptions, readonly broken: { view: boolean }) {
    super(o);
  }
  override planView(): EstopPlanView {
    if (this.broken.view) throw new Error("plan view failed");
    return super.planView();
  }
}

/** A manual clock, a logger at level info whose plan lines throw while `broken.log` is set. */
function rig() {
  const clock = new ManualClock();
  const broken = { log: false, view: false };
  const lines: string[] = [];
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => 0,
    write: (line) => {
      if (broken.log && line.includes("e-stop plan (")) throw new Error("log sink failed");
      lines.push(line);
    },
  });
  const estop = new ViewFailingEstop({
    router: recordingRouter(),
    inventory: providersUp("plant"),
    reads: {} as FreshReader,
    clock,
    log,
    safeState: ladder("stop_a"),
  }, broken);
  const planLogs = () => lines.filter((l) => l.includes("e-stop plan (")).length;
  const errors = () => lines.filter((l) => l.startsWith("ERROR") && l.includes("e-stop plan log"));
  return { clock, broken, estop, planLogs, errors };
}

for (const what of ["log", "view"] as const) {
  const who = what === "log" ? "its logger throws on the plan's line" : "its plan view throws";
  Deno.test(`Estop's plan log waiting for its turn neither throws from its timer nor stops the next one when ${who}`, () => {
    const r = rig();
    try {
      r.estop.logPlan("start");
      r.estop.reconfigure(ladder("stop_b"));
      assert.equal(r.planLogs(), 2, "the first change is logged at once");
      r.estop.reconfigure(ladder("stop_c"));
      assert.equal(r.clock.pendingTimers, 1, "the next one within the interval waits");
      r.broken[what] = true;
      r.clock.advance(PLAN_LOG_INTERVAL_MS); // threw out of the timer before the fix
      r.broken[what] = false;
      assert.equal(r.planLogs(), 2, "the plan log failed");
      assert.equal(r.errors().length, 1, "one ERROR line says so");
      assert.equal(r.clock.pendingTimers, 0, "no timer left armed");
      // The next change: within the interval of the failed one, it waits its turn, then is logged.
      r.estop.reconfigure(ladder("stop_d"));
      assert.equal(r.clock.pendingTimers, 1);
      r.clock.advance(PLAN_LOG_INTERVAL_MS);
      assert.equal(r.planLogs(), 3, "the next plan change is logged");
      assert.equal(r.clock.pendingTimers, 0);
    } finally {
      r.estop.close();
    }
  });
}
