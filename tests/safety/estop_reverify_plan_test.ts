/**
 * A provider that comes back while latched after a reload of safety.safe_state is secured with
 * the plan in force then, and its read-back checks that plan's expectations, not the ones the
 * stop (before the reload) verified.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, expectation, plantProvider } from "./_fixture.ts";

Deno.test("Estop re-verification of a provider secured after a safe-state reload checks the reloaded expectations", async () => {
  await using r = await rig({
    providers: [plantProvider("plant", { restartBackoffMs: 50 })],
    safety: {
      expect: [expectation("plant/plant0/heater_on", { equals: false }, 0)],
      verifyTimeoutMs: 300,
      hooks: [call("plant/plant0", "set_heater", { enabled: false })],
      zeroIsSafe: false,
    },
    pollingIntervalMs: 100,
  });
  const rt = r.kernel;
  const plant = rt.registry.host("plant")!;
  const stopped = await rt.estop.trigger("test");
  assert.deepEqual(stopped.verification.checks.map((c) => c.signal), ["plant/plant0/heater_on"]);
  // The reload: the fan must now be stopped too, and is expected at 0.
  rt.estop.reconfigure({
    expect: [
      expectation("plant/plant0/heater_on", { equals: false }, 0),
      expectation("plant/plant0/fan_duty", { equals: 0 }, 1),
    ],
    verifyTimeoutMs: 300,
    hooks: [
      call("plant/plant0", "set_heater", { enabled: false }),
      call("plant/plant0", "set_fan", { duty: { double: 0 } }),
    ],
    setpoints: [],
    zeroIsSafe: false,
  });
  const pid = r.kill("plant");
  await waitFor("plant restarted", () => plant.available && plant.session!.pid !== pid, 20_000);
  const securing = await waitFor("plant secured", () => rt.estop.securing(plant));
  const actions = await securing;
  assert.deepEqual(actions.map((a) => a.function), ["set_heater", "set_fan"]);
  const verification = rt.estop.status().verification!;
  assert.deepEqual(
    verification.checks.map((c) => c.signal),
    ["plant/plant0/heater_on", "plant/plant0/fan_duty"],
    "the read-back after securing checks the plan it was secured with",
  );
  assert.equal(verification.outcome, "verified");
});
