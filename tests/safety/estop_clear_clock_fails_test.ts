/**
 * A reset permits whatever else is failing: a clock that throws when Estop.clear reads the time
 * of its `estop_change` (after the latch is released) does not make clear() fail as if the latch
 * held. Asked once more, the release is announced; when the clock keeps failing it is not (no
 * invented time) and that is logged. In-process: the real Estop over a router that answers every
 * call at once, a modes port that records FAULT, and an injected clock whose nowMs throws once or
 * always from the clear on.
 */
import assert from "node:assert/strict";
import type { CallRouter, FaultEntry } from "../../src/control/mod.ts";
import type { Clock } from "../../src/common/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { LineLogger, systemClock } from "../../src/host/mod.ts";
import { Estop, type EstopModes } from "../../src/safety/mod.ts";
import type { FreshReader, InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { call } from "./_fixture.ts";

/** A latched e-stop whose clock's nowMs throws `times` times once `breakClock()` is called. */
async function latched(times: number) {
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drain: () => Promise.resolve(true),
    call: () => Promise.resolve({}),
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
  const modes: EstopModes = {
    current: () => mode as "FAULT",
    enterFault: (): FaultEntry => {
      mode = "FAULT";
      return {
        committed: true,
        from: "MANUAL",
        runHooks: () => Promise.resolve([]),
        hookFailuresSoFar: () => [],
      };
    },
    addArmCheck() {},
  };
  let broken = false;
  let failures = 0;
  const clock: Clock = {
    nowMs: () => {
      if (!broken || failures >= times) return systemClock.nowMs();
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
  const releases: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_change" && !event.latched) releases.push(event);
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
  await estop.trigger("latched for the test");
  assert.equal(estop.status().latched, true);
  return {
    estop,
    errors,
    releases,
    breakClock: () => (broken = true),
    failures: () => failures,
  };
}

Deno.test("Estop.clear releases the latch and announces it when the clock's nowMs throws once", async () => {
  const r = await latched(1);
  r.breakClock();
  assert.deepEqual(r.estop.clear(), { latched: false });
  assert.equal(r.failures(), 1, "the clock threw");
  assert.equal(r.estop.status().latched, false, "the release is in force");
  assert.equal(r.releases.length, 1, "the time, read again, announced the release");
  assert.equal(r.errors.filter((l) => l.includes("clock nowMs failed")).length, 1);
});

Deno.test("Estop.clear releases the latch and logs the release it cannot announce when the clock's nowMs always throws", async () => {
  const r = await latched(Infinity);
  r.breakClock();
  assert.deepEqual(r.estop.clear(), { latched: false });
  assert.equal(r.estop.status().latched, false, "the release is in force");
  assert.equal(r.releases.length, 0, "no invented time: not announced");
  assert.equal(
    r.errors.filter((l) => l.includes("the release is in force but not announced")).length,
    1,
  );
});
