/**
 * The e-stop must work whatever else is failing: a clock that throws when ModeManager reads the
 * time of the `mode_change` event (after the mode is set to FAULT) does not fail the FAULT entry
 * -- the e-stop gets it, the hooks into FAULT run and the mode listeners (the tree's halt) are
 * told. In-process: the real Estop and ModeManager over a router that answers every call at once;
 * the modes' clock's nowMs throws once (asked again: announced) or always (not announced, logged).
 */
import assert from "node:assert/strict";
import type { ModeChange } from "../../src/control/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { call, hook } from "../safety/_fixture.ts";
import {
  errorLog,
  failingClock,
  heaterOffLadder,
  providersUp,
  recordingRouter,
} from "../safety/_clock_rig.ts";

/** An e-stop over real modes whose clock's nowMs throws `times` times; what happened, recorded. */
function rig(times: number) {
  const made: string[] = [];
  const router = recordingRouter(made);
  const inventory = providersUp("plant");
  const fc = failingClock({ read: "nowMs", times });
  const { log, errors } = errorLog();
  const bus = new EventBus();
  const modeEvents: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "mode_change") modeEvents.push(event);
  });
  const modes = new ModeManager({
    router,
    inventory,
    bus,
    clock: fc.clock,
    log,
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: {
      beforeTransition: [],
      afterTransition: [
        hook("*", "FAULT", [call("plant/plant0", "set_cooler", { enabled: true })], false),
      ],
    },
  });
  const told: ModeChange[] = [];
  modes.onModeChange((c) => told.push(c));
  const estop = new Estop({
    router,
    inventory,
    reads: {} as FreshReader,
    clock: systemClock,
    log,
    bus,
    modes,
    safeState: heaterOffLadder(),
  });
  return { estop, modes, made, errors, modeEvents, told, failures: fc.failures };
}

Deno.test("ModeManager enters FAULT for the e-stop, runs the hooks into FAULT and tells the listeners when the clock's nowMs throws once at the mode_change", async () => {
  const r = rig(1);
  const result = await r.estop.trigger("clock broken");
  assert.equal(r.failures(), 1, "the clock threw");
  assert.equal(r.modes.current(), "FAULT");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater", "plant set_cooler"], "ladder, then the hook");
  assert.deepEqual(r.told, [{ previous: "IDLE", current: "FAULT" }], "the listeners were told");
  assert.equal(r.modeEvents.length, 1, "the time, read again, announced the change");
  assert.equal(r.errors.filter((l) => l.includes("clock nowMs failed")).length, 1);
});

Deno.test("ModeManager enters FAULT for the e-stop, runs the hooks into FAULT and tells the listeners when the clock's nowMs always throws", async () => {
  const r = rig(Infinity);
  const result = await r.estop.trigger("clock broken");
  assert.ok(r.failures() >= 2, "the clock threw, asked again");
  assert.equal(r.modes.current(), "FAULT");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater", "plant set_cooler"], "ladder, then the hook");
  assert.deepEqual(r.told, [{ previous: "IDLE", current: "FAULT" }], "the listeners were told");
  assert.equal(r.modeEvents.length, 0, "no invented time: the change is not announced");
  assert.equal(
    r.errors.filter((l) => l.includes("mode change IDLE -> FAULT not announced")).length,
    1,
  );
});
