/**
 * Verified safe state: after the ladder the expected signals are read back fresh from the
 * providers. A killed provider is `unreachable`; an output the ladder left untouched is a
 * `mismatch` (the released-brake case); the last verification stands in status.
 */
import assert from "node:assert/strict";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, call, d, expectation, i, inertSim, manualCall } from "../safety/_fixture.ts";
import { eventsOf } from "./automation_helpers.ts";
import { scriptedProvider } from "./process_helpers.ts";

/**
 * verify_timeout_ms of these tests: room for a read-back on a loaded machine (300 ms was not: a
 * provider answering late turned every check `unreachable`). The cases that end in `mismatch` or
 * `unreachable` re-read until it passes, so each takes about this long (but for a provider whose
 * circuit is open: it is read once).
 */
const VERIFY_TIMEOUT_MS = 2000;
/**
 * The providers' own timeout_ms where a test tells "cut off by the verify deadline" from "waited
 * for the provider's timeout": far above VERIFY_TIMEOUT_MS, whatever the load.
 */
const PROVIDER_TIMEOUT_MS = 30_000;

Deno.test("Estop verification reports a killed provider's checks as unreachable", async () => {
  const rt = await startRuntime(testConfig({
    providers: [inertSim("sim0"), inertSim("sim1", { restart: false })],
    safety: {
      hooks: [call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: 0 })],
      expect: [
        expectation("sim0/motorctl0/motor1_duty", { equals: 0 }, 0),
        expectation("sim1/motorctl0/motor1_duty", { max: 0 }, 1),
      ],
      verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    },
  }));
  const rec = recordEvents(rt);
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.5) });
    await manualCall(rt, "sim1", "chaos_control", 6, { exit_code: i(9) });
    await waitFor("sim1 down", () => !rt.registry.host("sim1")!.available);

    const result = await rt.estop.trigger("verify");
    const v = result.verification;
    assert.equal(v.outcome, "unreachable");
    assert.deepEqual(v.checks.map((c) => [c.signal, c.outcome]), [
      ["sim0/motorctl0/motor1_duty", "verified"],
      ["sim1/motorctl0/motor1_duty", "unreachable"],
    ]);
    assert.deepEqual(v.checks[0]!.observed, { type: "double", double: 0 });
    assert.equal(v.checks[0]!.quality, "OK");
    assert.equal(v.checks[1]!.observed, null);
    assert.match(v.checks[1]!.reason ?? "", /provider unavailable: sim1/);
    assert.deepEqual(v.checks[1]!.expected, { max: 0 });
    // sim1 restarts not (its circuit open: only a reload tries it again): it cannot answer before
    // the timeout, so it is not read again -- sim0's check, verified, ended the read-back.
    assert.ok(v.elapsed_ms < VERIFY_TIMEOUT_MS, `elapsed ${v.elapsed_ms} ms`);

    // Status shows the same read-back, each check with whether its device can be read now
    // (sim1 is still down).
    const shown = rt.estop.status().verification!;
    assert.deepEqual(shown.checks.map((c) => c.device_available), [true, false]);
    assert.deepEqual({
      ...shown,
      checks: shown.checks.map(({ device_available: _a, device_unavailable_reason: _r, ...c }) =>
        c
      ),
    }, v);
    const [event] = eventsOf(rec.events, "estop_verification");
    assert.equal(event!.outcome, "unreachable");
    assert.equal(event!.checks_total, 2);
    assert.equal(event!.checks_verified, 1);
    assert.deepEqual(event!.failed_signals, ["sim1/motorctl0/motor1_duty"]);
  } finally {
    rec.stop();
    await rt.stop();
  }
});

Deno.test("Estop verification reports an output the ladder left untouched as a mismatch", async () => {
  const rt = await startRuntime(testConfig({
    providers: [inertSim()],
    safety: {
      // The hooks cover relay 1 only; relay 3 (think: a brake release) stays as it was.
      hooks: [call("sim0/relayio0", "set_relay_ch1", { enabled: false })],
      expect: [
        expectation("sim0/relayio0/relay_ch1_state", { equals: false }, 0),
        expectation("sim0/relayio0/relay_ch3_state", { equals: false }, 1),
      ],
      verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    },
  }));
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) });
    await manualCall(rt, "sim0", "relayio0", 3, { enabled: b(true) });

    const result = await rt.estop.trigger();
    assert.ok(result.actions.every((a) => a.success), "every ladder action succeeded ...");
    const v = result.verification;
    assert.equal(v.outcome, "mismatch", "... yet the safe state is not reached");
    assert.deepEqual(v.checks.map((c) => [c.signal, c.outcome]), [
      ["sim0/relayio0/relay_ch1_state", "verified"],
      ["sim0/relayio0/relay_ch3_state", "mismatch"],
    ]);
    assert.deepEqual(v.checks[1]!.observed, { type: "bool", bool: true });
    assert.deepEqual(v.checks[1]!.expected, { equals: false });
    assert.equal(v.checks[1]!.quality, "OK");
    assert.ok(v.elapsed_ms >= VERIFY_TIMEOUT_MS);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop verification catches an actuator that acknowledges but does not obey (stuck outputs)", async () => {
  const rt = await startRuntime(testConfig({
    providers: [inertSim()],
    safety: {
      hooks: [call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: 0 })],
      expect: [expectation("sim0/motorctl0/motor1_duty", { equals: 0 })],
      verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    },
  }));
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.6) });
    await manualCall(rt, "sim0", "chaos_control", 10, {
      device_id: { type: "string", string: "motorctl0" },
      duration_ms: i(60000),
    });

    const result = await rt.estop.trigger("stuck");
    assert.deepEqual(
      result.actions.map((a) => [a.function, a.success]),
      [["set_motor_duty", true]],
      "the provider acknowledged the stop ...",
    );
    const [check] = result.verification.checks;
    assert.equal(
      result.verification.outcome,
      "mismatch",
      "... and the read-back shows it is false",
    );
    assert.equal(check!.outcome, "mismatch");
    assert.deepEqual(check!.observed, { type: "double", double: 0.6 });
    assert.match(check!.reason ?? "", /reads 0\.6/);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop verification keeps a fresh mismatch when a later read-back is cut off by the deadline", async () => {
  // The provider answers the priming poll and the first read-back, then never again.
  const rt = await startRuntime(testConfig({
    providers: [
      scriptedProvider("probe", ["--hang-after-reads", "2"], { timeoutMs: PROVIDER_TIMEOUT_MS }),
    ],
    pollingIntervalMs: 60000,
    safety: {
      expect: [expectation("probe/probe0/env_probe_marker", { equals: "armed" })],
      verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    },
  }));
  try {
    const v = (await rt.estop.trigger("cut off")).verification;
    assert.equal(v.outcome, "mismatch");
    assert.equal(v.checks[0]!.outcome, "mismatch");
    assert.deepEqual(v.checks[0]!.observed, { type: "string", string: "<unset>" });
    // Cut off by the verify deadline, not by the hung provider's own timeout.
    assert.ok(v.elapsed_ms < PROVIDER_TIMEOUT_MS, `bounded: ${v.elapsed_ms} ms`);
  } finally {
    await rt.stop();
  }
});
