/**
 * The e-stop must work whatever else is failing: a clock that throws when ModeManager reads the
 * time of a `hook_failure` event (a hook call into FAULT failed) does not lose that call's
 * failure behind the clock's error -- the e-stop answers with it. Asked once more, the event is
 * published; when the clock keeps failing it is not (no invented time), logged. In-process: the
 * real Estop and ModeManager over a router whose hook call fails; the modes' clock's nowMs throws
 * once or always after that call.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter, ModeChange } from "../../src/control/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { call, hook } from "../safety/_fixture.ts";
import { errorLog, failingClock, heaterOffLadder, providersUp } from "../safety/_clock_rig.ts";

/**
 * An e-stop over real modes whose hook call into FAULT fails, and whose modes' clock's nowMs
 * throws `times` times from then on; what happened, recorded.
 */
function rig(times: number) {
  const made: string[] = [];
  let armed = false;
  // Not the rig's recording router: its hook call fails (and arms the clock).
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) => {
      made.push(`${req.providerId} ${req.functionName}`);
      if (req.functionName !== "set_cooler") return Promise.resolve({});
      armed = true;
      return Promise.reject(new RuntimeError("INTERNAL", "cooler broken"));
    },
  } as unknown as CallRouter;
  const inventory = providersUp("plant");
  const { clock: modesClock, failures } = failingClock({
    read: "nowMs",
    times,
    when: () => armed,
  });
  const { log, errors } = errorLog();
  const bus = new EventBus();
  const hookEvents: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "hook_failure") hookEvents.push(event);
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
    safeState: heaterOffLadder(),
  });
  return { estop, modes, made, errors, hookEvents, told, failures };
}

Deno.test("ModeManager reports a failed hook call into FAULT and publishes it when the clock's nowMs throws once at its hook_failure", async () => {
  const r = rig(1);
  const result = await r.estop.trigger("clock broken");
  assert.equal(r.failures(), 1, "the clock threw");
  assert.deepEqual(r.made, ["plant set_heater", "plant set_cooler"], "ladder, then the hook");
  assert.deepEqual(
    result.hook_failures.map((f) => `${f.device_handle} ${f.error}`),
    ["plant/plant0 INTERNAL: cooler broken"],
    "the call's own error is in the answer",
  );
  assert.equal(r.hookEvents.length, 1, "the time, read again, published it");
  assert.equal(r.errors.filter((l) => l.includes("clock nowMs failed")).length, 1);
});

Deno.test("ModeManager reports a failed hook call into FAULT and logs the hook_failure it cannot publish when the clock's nowMs always throws", async () => {
  const r = rig(Infinity);
  const result = await r.estop.trigger("clock broken");
  assert.equal(r.failures(), 2, "the clock threw, asked again");
  assert.equal(r.modes.current(), "FAULT");
  assert.deepEqual(
    result.hook_failures.map((f) => `${f.device_handle} ${f.error}`),
    ["plant/plant0 INTERNAL: cooler broken"],
    "the call's own error is in the answer",
  );
  assert.equal(r.hookEvents.length, 0, "no invented time: not published");
  assert.equal(
    r.errors.filter((l) => l.includes("hook_failure not published")).length,
    1,
  );
});
