/**
 * A stop action is never refused because its provider's session is full. A provider with many
 * devices (a fieldbus gateway) is polled one ReadSignals per device per pass, all in flight at
 * once; while it answers slowly (the simulated provider's chaos_control hang: it reads nothing
 * for 2 s, well within its timeout_ms) a pass fills the session's DEFAULT_MAX_IN_FLIGHT, and the
 * e-stop's ladder call was refused at once ("too many requests in flight") -- never sent, the
 * motor left running -- where with fewer devices it waits and is answered once the provider reads
 * again. Real: the simulated provider as a child process.
 */
import assert from "node:assert/strict";
import { DEFAULT_MAX_IN_FLIGHT } from "../../src/adpp/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { call, expectation } from "../safety/_fixture.ts";

/** More devices than the session takes requests in flight. */
const SENSORS = DEFAULT_MAX_IN_FLIGHT + 6;

function gatewayYaml(): string {
  const sensors = Array.from(
    { length: SENSORS },
    (_, k) => `  - id: analogsensor${k}\n    type: analogsensor\n`,
  ).join("");
  return `provider:\n  name: gw\nstartup_policy: strict\ndevices:\n` +
    `  - id: motorctl0\n    type: motorctl\n    max_speed: 3000.0\n${sensors}` +
    `simulation:\n  mode: inert\n`;
}

Deno.test("Estop ladder call to a provider whose session a slow poll pass of its many devices filled is sent and answered, not refused", async () => {
  const yaml = await Deno.makeTempFile({ prefix: "gateway-", suffix: ".yaml" });
  await Deno.writeTextFile(yaml, gatewayYaml());
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("gw", { yaml, timeoutMs: 5000, restart: false })],
      pollingIntervalMs: 100,
      safety: {
        hooks: [call("gw/motorctl0", "set_motor_duty", { motor_index: 1, duty: 0 })],
        expect: [expectation("gw/motorctl0/motor1_duty", { equals: 0 })],
        verifyTimeoutMs: 5000,
      },
    }),
    { arm: true },
  );
  try {
    await rt.router.call({
      providerId: "gw",
      deviceId: "motorctl0",
      functionName: "set_motor_duty",
      args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.5 } },
      origin: "manual",
    });
    // The provider answers this, then reads nothing for 2 s: the next poll pass stays in flight.
    await rt.router.call({
      providerId: "gw",
      deviceId: "chaos_control",
      functionName: "hang",
      args: { duration_ms: { type: "int64", int64: 2000 } },
      origin: "manual",
    });
    const host = rt.registry.host("gw")!;
    await waitFor(
      "a poll pass filling the session",
      () => (host.session?.inFlight ?? 0) >= DEFAULT_MAX_IN_FLIGHT,
    );
    const result = await rt.estop.trigger("gateway busy");
    assert.deepEqual(result.actions, [
      { device_handle: "gw/motorctl0", function: "set_motor_duty", success: true },
    ], JSON.stringify(result.actions));
    assert.equal(result.verification.outcome, "verified", JSON.stringify(result.verification));
  } finally {
    await rt.stop();
    await Deno.remove(yaml);
  }
});
