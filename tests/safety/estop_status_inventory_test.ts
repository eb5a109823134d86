/**
 * An e-stop built without the device-condition port (EstopOptions.devices), as an embedding that
 * wires only the inventory does: its status says whether each verification check's device can be
 * read now from the inventory alone. The kernel always wires the port, so only this construction
 * reaches that path. Real child processes (the simulated provider, twice): after a stop verified on
 * both, sim1 (no restart) is killed and its check shows `device_available: false` with the
 * inventory's reason, the other `device_available: true`.
 */
import assert from "node:assert/strict";
import { CallRouter } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { twoSimsVerifiedStop } from "./_fixture.ts";

Deno.test("Estop without a device-condition port marks a check whose provider is down device_available false from the inventory", async () => {
  const setup = twoSimsVerifiedStop();
  await using r = await rig({ ...setup, programs: false, pollingIntervalMs: 100 });
  const { registry, cache, inventory } = r.kernel;
  const log = testLogger();
  // A router of its own (no mode gate) and an e-stop with no `devices` port.
  const router = new CallRouter({ registry, cache, log, clock: systemClock });
  const estop = new Estop({
    router,
    inventory,
    reads: cache,
    clock: systemClock,
    log,
    safeState: {
      hooks: setup.safety.hooks,
      setpoints: [],
      zeroIsSafe: false,
      expect: setup.safety.expect,
      verifyTimeoutMs: setup.safety.verifyTimeoutMs,
    },
  });
  const checks = () => {
    const v = estop.status().verification;
    assert.ok(v != null, "a verification after the stop");
    return v.checks;
  };

  const stop = await estop.trigger("no device port");
  assert.equal(stop.verification?.outcome, "verified");
  assert.deepEqual(
    checks().map((c) => [c.signal, c.outcome, c.device_available]),
    [
      ["sim0/motorctl0/motor1_duty", "verified", true],
      ["sim1/motorctl0/motor1_duty", "verified", true],
    ],
  );

  // sim1 crashes after the stop (restart disabled): the inventory says it is unavailable.
  const sim1 = registry.host("sim1")!;
  r.kill("sim1");
  await waitFor("sim1 down", () => !sim1.available);

  const after = checks();
  assert.deepEqual(
    after.map((c) => [c.signal, c.outcome, c.device_available]),
    [
      ["sim0/motorctl0/motor1_duty", "verified", true],
      ["sim1/motorctl0/motor1_duty", "verified", false],
    ],
  );
  assert.equal(after[0]!.device_unavailable_reason, undefined);
  assert.match(after[1]!.device_unavailable_reason ?? "", /^down: provider sim1 is unavailable \(/);
  estop.clear();
});
