/**
 * A reload of safety.safe_state (Estop.reconfigure) while a stop's ladder runs: the stop that
 * started runs to its end with the safe state it started with -- its ladder calls and the
 * read-back after them (expectations and verification timeout) -- and a next trigger runs the
 * new one.
 */
import assert from "node:assert/strict";
import { CallRouter } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { call, expectation, plantProvider } from "./_fixture.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { rig } from "../helpers/rig.ts";

Deno.test("Estop: a reload of the safe state while the ladder runs leaves that stop's read-back as it started", async () => {
  await using r = await rig({
    providers: [plantProvider("plant", { latencyMs: 300 })],
    pollingIntervalMs: 60000,
  });
  const { registry, cache, inventory } = r.kernel;
  const log = testLogger();
  const router = new CallRouter({ registry, cache, log, clock: systemClock });
  const started = {
    setpoints: [],
    hooks: [call("plant/plant0", "set_heater", { enabled: false })],
    zeroIsSafe: false,
    expect: [expectation("plant/plant0/heater_on", { equals: false })],
    verifyTimeoutMs: 2000,
  };
  const estop = new Estop({
    router,
    inventory,
    reads: cache,
    clock: systemClock,
    log,
    safeState: started,
  });
  const stop = estop.trigger("reconfigured mid-ladder");
  await waitFor(
    "the ladder call at the provider",
    () => r.provider<FakeProvider>("plant").count("call") === 1,
  );
  estop.reconfigure({
    ...started,
    expect: [expectation("plant/plant0/fan_duty", { equals: 0 })],
    verifyTimeoutMs: 100,
  });
  const result = await stop;
  assert.deepEqual(
    result.verification.checks.map((c) => c.signal),
    ["plant/plant0/heater_on"],
    "the stop reads back the expectations it started with",
  );
});
