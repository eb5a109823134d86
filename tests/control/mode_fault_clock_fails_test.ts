/**
 * The e-stop must work whatever else is failing: a clock that throws when ModeManager reads the
 * time of the `mode_change` event (after the mode is set to FAULT) does not fail the FAULT entry
 * -- the e-stop gets it, the hooks into FAULT run and the mode listeners (the tree's halt) are
 * told. In-process: the real Estop and ModeManager over a router that answers every call at once;
 * the modes' clock's nowMs throws once (asked again: announced) or always (not announced, logged).
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter, ModeChange } from "../../src/control/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import type { Clock } from "../../src/common/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { LineLogger, systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import type { FreshReader, InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { call, hook } from "../safety/_fixture.ts";

/** An e-stop over real modes whose clock's nowMs throws `times` times; what happened, recorded. */
function rig(times: number) {
  const made: string[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drain: () => Promise.resolve(true),
    call: (req: CallRequest) => {
      made.push(`${req.providerId} ${req.functionName}`);
      return Promise.resolve({});
    },
  } as unknown as CallRouter;
  const host = {
    id: "plant",
    available: true,
    devices: [],
    config: { timeoutMs: 1000 },
  } as unknown as ProviderSummary;
  const inventory = {
    onAvailability: () => () => {},
    onChange: () => () => {},
    provider: (id: string) => id === "plant" ? host : undefined,
    providers: () => [host],
    devices: () => [],
  } as unknown as InventoryReader;
  let failures = 0;
  const modesClock: Clock = {
    nowMs: () => {
      if (failures >= times) return systemClock.nowMs();
      failures++;
      throw new Error("clock nowMs failed");
    },
    monoMs: () => systemClock.monoMs(),
    setTimer: (fn, ms) => systemClock.setTimer(fn, ms),
    clearTimer: (id) => systemClock.clearTimer(id),
  };
  const errors: string[] = [];
  const log = new LineLogger({
    level: "error",
    journald: false,
    now: () => 0,
    write: (line) => errors.push(line),
  });
  const bus = new EventBus();
  const modeEvents: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "mode_change") modeEvents.push(event);
  });
  const modes = new ModeManager({
    router,
    inventory,
    bus,
    clock: modesClock,
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
    safeState: {
      setpoints: [],
      hooks: [call("plant/plant0", "set_heater", { enabled: false })],
      zeroIsSafe: false,
      expect: [],
      verifyTimeoutMs: 100,
    },
  });
  return { estop, modes, made, errors, modeEvents, told, failures: () => failures };
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
