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

Deno.test("Estop: a provider's securing run begun before a reload of the expectations does not put the old ones back in status", async () => {
  const expectHeater = expectation("plant/plant0/heater_on", { equals: false }, 0);
  const hooks = [call("plant/plant0", "set_heater", { enabled: false })];
  await using r = await rig({
    // Slow calls: the securing run after its restart is still making them when the reload comes.
    providers: [plantProvider("plant", { restartBackoffMs: 50, latencyMs: 500 })],
    safety: { expect: [expectHeater], verifyTimeoutMs: 300, hooks, zeroIsSafe: false },
    pollingIntervalMs: 100,
  });
  const rt = r.kernel;
  const plant = rt.registry.host("plant")!;
  await rt.estop.trigger("test");
  r.kill("plant");
  // Its securing run begins as it comes back (before its first poll, which waits for the calls).
  // (Wrapped: waitFor would wait for the run's promise itself.)
  const { securing } = await waitFor(
    "plant securing",
    () => {
      const run = rt.estop.securing(plant);
      return run && { securing: run };
    },
    20_000,
    0,
  );
  // One turn of the event loop: its calls (taking the safe state in force then) have begun.
  await new Promise((resolve) => setTimeout(resolve, 0));
  // The reload (plant not restarted by it, the same calls): the fan is now expected at 37, which
  // it is not.
  const runs = rt.estop.reconfigure({
    expect: [expectHeater, expectation("plant/plant0/fan_duty", { equals: 37 }, 1)],
    verifyTimeoutMs: 300,
    hooks,
    setpoints: [],
    zeroIsSafe: false,
  });
  await Promise.all([securing, ...runs]);
  const verification = rt.estop.status().verification!;
  assert.deepEqual(
    verification.checks.map((c) => [c.signal, c.outcome]),
    [["plant/plant0/heater_on", "verified"], ["plant/plant0/fan_duty", "mismatch"]],
    "status shows the expectations in force, also after the securing run begun before the reload",
  );
  assert.equal(verification.outcome, "mismatch");
});
