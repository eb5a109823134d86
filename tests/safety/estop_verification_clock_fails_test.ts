/**
 * The e-stop must work whatever else is failing: a clock that throws when the trigger's read-back
 * is reported (the time of its `estop_verification` event, after the ladder and the hooks ran)
 * does not take the trigger's answer away. Asked once more, the verification is published; when
 * the clock keeps failing it is not (no invented time) and that is logged. In-process: the real
 * Estop over a router that answers every call at once, a modes port that records FAULT, and an
 * injected clock whose nowMs throws once after the ladder's call, or always.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter, FaultEntry } from "../../src/control/mod.ts";
import type { Clock } from "../../src/common/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { LineLogger, systemClock } from "../../src/host/mod.ts";
import { Estop, type EstopModes } from "../../src/safety/mod.ts";
import type { FreshReader, InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { call } from "./_fixture.ts";

/**
 * An e-stop whose clock's nowMs throws `times` times once the ladder's call was made (`always`:
 * from the start, every time); what it did, recorded.
 */
function rig(o: { times: number; always?: boolean }) {
  const made: string[] = [];
  let armed = o.always === true;
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drain: () => Promise.resolve(true),
    call: (req: CallRequest) => {
      made.push(`${req.providerId} ${req.functionName}`);
      armed = true;
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
  let mode = "MANUAL";
  let hooksRun = 0;
  const modes: EstopModes = {
    current: () => mode as "FAULT",
    enterFault: (): FaultEntry => {
      mode = "FAULT";
      return {
        committed: true,
        from: "MANUAL",
        runHooks: () => (hooksRun++, Promise.resolve([])),
        hookFailuresSoFar: () => [],
      };
    },
    addArmCheck() {},
  };
  let failures = 0;
  const clock: Clock = {
    nowMs: () => {
      if (!armed || failures >= o.times) return systemClock.nowMs();
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
  const verifications: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_verification") verifications.push(event);
  });
  const estop = new Estop({
    router,
    inventory,
    reads: {} as FreshReader,
    clock,
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
  return { estop, made, errors, verifications, failures: () => failures, hooksRun: () => hooksRun };
}

Deno.test("Estop.trigger answers and publishes its verification when the clock's nowMs throws once as the verification is reported", async () => {
  const r = rig({ times: 1 });
  const result = await r.estop.trigger("clock broken");
  assert.equal(r.failures(), 1, "the clock threw");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater"], "the ladder's call was made");
  assert.equal(r.hooksRun(), 1, "the hooks into FAULT ran");
  assert.equal(result.verification.outcome, "unverifiable");
  assert.equal(r.verifications.length, 1, "the time, read again, published the verification");
  assert.equal(r.errors.filter((l) => l.includes("clock nowMs failed")).length, 1);
});

Deno.test("Estop.trigger answers and logs the verification it cannot publish when the clock's nowMs always throws", async () => {
  const r = rig({ times: Infinity, always: true });
  const result = await r.estop.trigger("clock broken");
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(r.made, ["plant set_heater"], "the ladder's call was made");
  assert.equal(r.hooksRun(), 1, "the hooks into FAULT ran");
  assert.equal(result.verification.outcome, "unverifiable");
  assert.equal(r.verifications.length, 0, "no invented time: not published");
  assert.equal(
    r.errors.filter((l) => l.includes("e-stop verification not published")).length,
    1,
  );
  assert.equal(r.estop.status().verification?.outcome, "unverifiable", "status shows it");
});
