/**
 * The simulated provider goes safe on its own (docs/safety.md, "Providers that go safe on their
 * own"): after `--lease-ms` without a request, on stdin EOF and on SIGTERM/SIGINT. Driven directly
 * over stdio as a real process.
 */
import { deepStrictEqual, match, ok, strictEqual as equal } from "node:assert/strict";
import {
  StatusCode as S,
  WireProviderState,
  type WireSignalValue,
  type WireValue,
  WireValueType as T,
} from "../../src/adpp/mod.ts";
import { SIM_INERT_YAML, SimProcess } from "./_sim_process.ts";

const i = (v: number): WireValue => ({ type: T.INT64, int64_value: v });
const d = (v: number): WireValue => ({ type: T.DOUBLE, double_value: v });
const s = (v: string): WireValue => ({ type: T.STRING, string_value: v });
const b = (v: boolean): WireValue => ({ type: T.BOOL, bool_value: v });
const LEASE_MS = 300;
const SAFE_DEVICES = "analogsensor0, motorctl0, relayio0, tempctl0";

/** Current values of a device's signals, by id (plain JS values). */
async function read(
  sim: SimProcess,
  deviceId: string,
  ids: string[],
): Promise<Record<string, unknown>> {
  const r = await sim.request({ read_signals: { device_id: deviceId, signal_ids: ids } });
  equal(r.status?.code, S.OK, `read ${deviceId}`);
  return Object.fromEntries(
    (r.read_signals?.values ?? []).map((v: WireSignalValue) => [
      v.signal_id,
      v.value?.double_value ?? v.value?.bool_value ?? v.value?.string_value,
    ]),
  );
}

/** Drives every actuator of the inert sim away from its safe state and checks it took. */
async function actuateEverything(sim: SimProcess): Promise<void> {
  const expectOk = async (p: Promise<{ status?: { code?: number } }>) =>
    equal((await p).status?.code, S.OK);
  await expectOk(sim.call("motorctl0", 10, { motor_index: i(1), duty: d(0.7) }));
  await expectOk(sim.call("motorctl0", 10, { motor_index: i(2), duty: d(0.3) }));
  await expectOk(sim.call("relayio0", 1, { enabled: b(true) }));
  await expectOk(sim.call("relayio0", 4, { enabled: b(true) }));
  await expectOk(sim.call("tempctl0", 3, { relay_index: i(1), state: b(true) }));
  await expectOk(sim.call("tempctl0", 2, { value: d(80) }));
  await expectOk(sim.call("tempctl0", 1, { mode: s("closed") }));
  deepStrictEqual(await read(sim, "motorctl0", ["motor1_duty", "motor2_duty"]), {
    motor1_duty: 0.7,
    motor2_duty: 0.3,
  });
}

async function assertSafe(sim: SimProcess): Promise<void> {
  deepStrictEqual(await read(sim, "motorctl0", ["motor1_duty", "motor2_duty"]), {
    motor1_duty: 0,
    motor2_duty: 0,
  });
  deepStrictEqual(
    await read(sim, "relayio0", [1, 2, 3, 4].map((n) => `relay_ch${n}_state`)),
    {
      relay_ch1_state: false,
      relay_ch2_state: false,
      relay_ch3_state: false,
      relay_ch4_state: false,
    },
  );
  deepStrictEqual(
    await read(sim, "tempctl0", ["relay1_state", "relay2_state", "control_mode", "setpoint"]),
    { relay1_state: false, relay2_state: false, control_mode: "open", setpoint: 80 },
    "heaters off, open loop; the (inactive) setpoint is kept",
  );
}

Deno.test("sim --lease-ms applies the safe state after the lease, keeps serving and says so in GetHealth", async () => {
  const sim = SimProcess.start(SIM_INERT_YAML, ["--lease-ms", String(LEASE_MS)]);
  try {
    await actuateEverything(sim);
    const lastRequestSentMs = Date.now();
    equal((await sim.request({ list_devices: {} })).status?.code, S.OK);
    // Silence: nothing is sent until the provider reports the expiry.
    const line = await sim.waitForStderr(/lease expired/);
    match(line, new RegExp(`^WARN \\[sim\\] lease expired \\(no request for ${LEASE_MS} ms\\)`));
    ok(line.includes(`safe state applied to ${SAFE_DEVICES}`), line);

    await assertSafe(sim);
    const health = (await sim.request({ get_health: {} })).get_health?.provider;
    equal(health?.state, WireProviderState.DEGRADED);
    match(
      health?.message ?? "",
      /^lease expired: safe state applied at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
    );
    const appliedAt = Number(health?.metrics?.safe_state_applied_at_ms);
    ok(
      appliedAt >= lastRequestSentMs + LEASE_MS,
      `applied ${appliedAt - lastRequestSentMs} ms after the last request, lease ${LEASE_MS}`,
    );
    equal(
      health?.message,
      `lease expired: safe state applied at ${new Date(appliedAt).toISOString()}`,
    );
    equal(health?.metrics?.lease_ms, String(LEASE_MS));
    equal(health?.metrics?.safe_state_reason, "lease_expired");
    equal(health?.metrics?.impl, "sim", "the sim's own metrics stay");
    await assertSafe(sim); // reads and health requests do not undo it

    // Commanded again: the output follows and health is OK again.
    equal(
      (await sim.call("motorctl0", 10, { motor_index: i(1), duty: d(0.5) })).status?.code,
      S.OK,
    );
    deepStrictEqual(await read(sim, "motorctl0", ["motor1_duty"]), { motor1_duty: 0.5 });
    const after = (await sim.request({ get_health: {} })).get_health?.provider;
    equal(after?.state, WireProviderState.OK);
    equal(after?.message, "ok");
    equal(after?.metrics?.safe_state_active, "false");
  } finally {
    await sim.stop();
  }
});

Deno.test("sim --lease-ms leaves a device with stuck outputs as it is (an actuator that does not obey)", async () => {
  const sim = SimProcess.start(SIM_INERT_YAML, ["--lease-ms", String(LEASE_MS)]);
  try {
    await sim.call("motorctl0", 10, { motor_index: i(1), duty: d(0.7) });
    await sim.call("relayio0", 1, { enabled: b(true) });
    const stuck = await sim.call("chaos_control", 10, {
      device_id: s("relayio0"),
      duration_ms: i(600_000),
    });
    equal(stuck.status?.code, S.OK);
    await sim.waitForStderr(/lease expired/);
    deepStrictEqual(await read(sim, "motorctl0", ["motor1_duty"]), { motor1_duty: 0 });
    deepStrictEqual(await read(sim, "relayio0", ["relay_ch1_state"]), { relay_ch1_state: true });
  } finally {
    await sim.stop();
  }
});

Deno.test("sim applies the safe state on stdin EOF and exits 0", async () => {
  const sim = SimProcess.start();
  try {
    await actuateEverything(sim);
    await sim.closeStdin();
    equal(await sim.exitCode(), 0);
    // The process is gone, so its log is the only witness: the line names every device made safe.
    const line = await sim.waitForStderr(/safe state/);
    match(line, new RegExp(`^INFO \\[sim\\] stdin closed: safe state applied to ${SAFE_DEVICES} `));
  } finally {
    await sim.stop();
  }
});

for (const signal of ["SIGTERM", "SIGINT"] as const) {
  Deno.test(`sim applies the safe state on ${signal} and exits 0`, async () => {
    const sim = SimProcess.start();
    try {
      await actuateEverything(sim); // answered: the signal listeners are installed
      sim.child.kill(signal);
      const status = await sim.child.status;
      equal(status.signal, null, `ended by ${status.signal}, not by its own exit`);
      equal(status.code, 0);
      const line = await sim.waitForStderr(/safe state/);
      match(line, new RegExp(`^INFO \\[sim\\] ${signal}: safe state applied to ${SAFE_DEVICES} `));
    } finally {
      await sim.stop();
    }
  });
}

Deno.test("sim refuses a malformed --lease-ms with exit 1 naming the flag", async () => {
  for (const bad of ["-1", "1.5", "abc", "3600001", ""]) {
    const sim = SimProcess.start(SIM_INERT_YAML, ["--lease-ms", bad]);
    try {
      equal(await sim.exitCode(), 1, `--lease-ms '${bad}'`);
    } finally {
      match(await sim.stop(), /--lease-ms: must be an integer in \[0, 3600000\]/);
    }
  }
});
