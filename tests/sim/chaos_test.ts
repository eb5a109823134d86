import { deepStrictEqual, ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import {
  decodeResponse,
  MAX_FRAME_BYTES,
  StatusCode as S,
  type WireValue,
  WireValueType as T,
} from "../../src/adpp/mod.ts";
import { ReadTimeout, REPLY_TIMEOUT_MS, withSim } from "./_sim_process.ts";

const i = (v: number): WireValue => ({ type: T.INT64, int64_value: v });
const d = (v: number): WireValue => ({ type: T.DOUBLE, double_value: v });
const s = (v: string): WireValue => ({ type: T.STRING, string_value: v });
const b = (v: boolean): WireValue => ({ type: T.BOOL, bool_value: v });
const CHAOS = "chaos_control";

Deno.test("sim inject_device_unavailable hides the device until clear_faults", async () => {
  await withSim(async (sim) => {
    equal(
      (await sim.call(CHAOS, 1, { device_id: s("relayio0"), duration_ms: i(0) })).status?.code,
      S.INVALID_ARGUMENT,
    );
    const inject = await sim.call(CHAOS, 1, { device_id: s("relayio0"), duration_ms: i(600_000) });
    equal(inject.status?.code, S.OK);

    const list = await sim.request({ list_devices: {} });
    equal(list.list_devices?.devices?.some((x) => x.device_id === "relayio0"), false);
    equal(
      (await sim.request({ describe_device: { device_id: "relayio0" } })).status?.code,
      S.NOT_FOUND,
    );
    const empty = await sim.request({ read_signals: { device_id: "relayio0" } });
    equal(empty.status?.code, S.OK);
    equal((empty.read_signals?.values ?? []).length, 0);
    const explicit = await sim.request({
      read_signals: { device_id: "relayio0", signal_ids: ["relay_ch1_state"] },
    });
    equal(explicit.status?.code, S.NOT_FOUND);
    const call = await sim.call("relayio0", 1, { enabled: b(true) });
    equal(call.status?.code, S.INVALID_ARGUMENT);
    equal(call.status?.message, "device unavailable (injected fault)");
    const health = await sim.request({ get_health: {} });
    equal(health.get_health?.devices?.some((x) => x.device_id === "relayio0"), false);

    equal((await sim.call(CHAOS, 5)).status?.code, S.OK);
    equal((await sim.call("relayio0", 1, { enabled: b(true) })).status?.code, S.OK);
    const back = await sim.request({ list_devices: {} });
    equal(back.list_devices?.devices?.some((x) => x.device_id === "relayio0"), true);
  });
});

Deno.test("sim inject_signal_fault reports QUALITY_FAULT for that signal only", async () => {
  await withSim(async (sim) => {
    const r = await sim.call(CHAOS, 2, {
      device_id: s("tempctl0"),
      signal_id: s("tc1_temp"),
      duration_ms: i(600_000),
    });
    equal(r.status?.code, S.OK);
    const values = (await sim.request({ read_signals: { device_id: "tempctl0" } })).read_signals
      ?.values ?? [];
    deepStrictEqual(values.map((v) => [v.signal_id, v.quality]), [
      ["tc1_temp", 3],
      ["tc2_temp", 1],
      ["relay1_state", 1],
      ["relay2_state", 1],
    ]);
    equal(values[0]!.value?.double_value, 25, "the value is still the real one");
    await sim.call(CHAOS, 5);
    const after = await sim.request({
      read_signals: { device_id: "tempctl0", signal_ids: ["tc1_temp"] },
    });
    equal((after.read_signals?.values?.[0])!.quality, 1);
  });
});

Deno.test("sim inject_call_failure fails every call of that function at rate 1", async () => {
  await withSim(async (sim) => {
    const inject = (fid: string, rate: number) =>
      sim.call(CHAOS, 4, {
        device_id: s("tempctl0"),
        function_id: s(fid),
        failure_rate: d(rate),
      });
    equal((await inject("0", 1)).status?.code, S.INVALID_ARGUMENT);
    equal((await inject("x2", 1)).status?.code, S.INVALID_ARGUMENT);
    equal((await inject("2", 1.5)).status?.code, S.INVALID_ARGUMENT);
    equal((await inject("2", 1)).status?.code, S.OK);
    const failed = await sim.call("tempctl0", 2, { value: d(50) });
    equal(failed.status?.code, S.INVALID_ARGUMENT);
    equal(failed.status?.message, "function call failed (injected fault)");
    equal((await sim.call("tempctl0", 1, { mode: s("open") })).status?.code, S.OK);
    equal((await inject("2", 0)).status?.code, S.OK, "a new rate replaces the old one");
    equal((await sim.call("tempctl0", 2, { value: d(50) })).status?.code, S.OK);
  });
});

Deno.test("sim inject_call_latency validates latency_ms and still answers delayed calls", async () => {
  await withSim(async (sim) => {
    const set = (ms: number) => sim.call(CHAOS, 3, { device_id: s("relayio0"), latency_ms: i(ms) });
    equal((await set(-1)).status?.code, S.INVALID_ARGUMENT);
    equal((await set(200)).status?.code, S.OK);
    equal((await sim.call("relayio0", 1, { enabled: b(true) })).status?.code, S.OK);
    equal((await sim.call(CHAOS, 5)).status?.code, S.OK);
  });
});

Deno.test("sim crash replies OK and then exits with the chosen code", async () => {
  await withSim(async (sim) => {
    equal((await sim.call(CHAOS, 6, { exit_code: i(256) })).status?.code, S.INVALID_ARGUMENT);
    equal((await sim.call(CHAOS, 6, { exit_code: i(7) })).status?.code, S.OK);
    equal(await sim.exitCode(), 7);
  });
});

Deno.test("sim hang replies OK, then answers nothing while the process stays alive", async () => {
  await withSim(async (sim) => {
    equal((await sim.call(CHAOS, 7, { duration_ms: i(-1) })).status?.code, S.INVALID_ARGUMENT);
    equal((await sim.call(CHAOS, 7, { duration_ms: i(0) })).status?.code, S.OK);
    await sim.send({ list_devices: {} });
    await rejects(sim.readResponse(1000), ReadTimeout);
    ok(sim.running, "a hung provider is still alive");
  });
});

Deno.test("sim hang with a duration answers queued requests afterwards", async () => {
  await withSim(async (sim) => {
    equal((await sim.call(CHAOS, 7, { duration_ms: i(300) })).status?.code, S.OK);
    const id = await sim.send({ list_devices: {} });
    const resp = await sim.readResponse();
    equal(resp.request_id, id);
    equal(resp.status?.code, S.OK);
  });
});

Deno.test("sim send_garbage_frame writes a frame that is not a Response, then keeps serving", async () => {
  await withSim(async (sim) => {
    await sim.send({ call: { device_id: CHAOS, function_id: 8 } });
    const deadline = Date.now() + REPLY_TIMEOUT_MS;
    const prefix = await sim.readExactly(4, deadline);
    const len = new DataView(prefix.buffer).getUint32(0, true);
    ok(len > 0 && len <= MAX_FRAME_BYTES);
    const payload = await sim.readExactly(len, deadline);
    throws(() => decodeResponse(payload));
    equal((await sim.request({ list_devices: {} })).status?.code, S.OK);
  });
});

Deno.test("sim send_oversize_frame writes a length prefix over 1 MiB", async () => {
  await withSim(async (sim) => {
    await sim.send({ call: { device_id: CHAOS, function_id: 9 } });
    const prefix = await sim.readExactly(4, Date.now() + REPLY_TIMEOUT_MS);
    const len = new DataView(prefix.buffer).getUint32(0, true);
    equal(len, 2 * MAX_FRAME_BYTES);
  });
});

Deno.test("sim inject_stuck_outputs acknowledges writes without changing outputs until clear_faults", async () => {
  await withSim(async (sim) => {
    const duty = async () =>
      (await sim.request({
        read_signals: { device_id: "motorctl0", signal_ids: ["motor1_duty"] },
      }))!.read_signals?.values?.[0]?.value?.double_value;
    const mode = async () =>
      (await sim.request({
        read_signals: { device_id: "tempctl0", signal_ids: ["control_mode"] },
      }))!.read_signals?.values?.[0]?.value?.string_value;
    equal(
      (await sim.call("motorctl0", 10, { motor_index: i(1), duty: d(0.7) })).status?.code,
      S.OK,
    );
    for (const device of ["motorctl0", "tempctl0"]) {
      const r = await sim.call(CHAOS, 10, { device_id: s(device), duration_ms: i(600_000) });
      equal(r.status?.code, S.OK);
    }

    const write = await sim.call("motorctl0", 10, { motor_index: i(1), duty: d(0.2) });
    equal(write.status?.code, S.OK, "acknowledged");
    equal(await duty(), 0.7, "the output did not move");
    equal(await duty(), 0.7, "and reads keep reporting it");
    equal((await sim.call("tempctl0", 1, { mode: s("closed") })).status?.code, S.OK);
    equal(await mode(), "open");
    // The device's own checks still answer: a stuck actuator is not a different device.
    equal(
      (await sim.call("motorctl0", 10, { motor_index: i(3), duty: d(0.2) })).status?.code,
      S.INVALID_ARGUMENT,
    );
    // Other devices obey.
    equal((await sim.call("relayio0", 1, { enabled: b(true) })).status?.code, S.OK);
    const relay = await sim.request({
      read_signals: { device_id: "relayio0", signal_ids: ["relay_ch1_state"] },
    });
    equal((relay.read_signals?.values?.[0])!.value?.bool_value, true);

    equal((await sim.call(CHAOS, 5)).status?.code, S.OK);
    equal(
      (await sim.call("motorctl0", 10, { motor_index: i(1), duty: d(0.2) })).status?.code,
      S.OK,
    );
    equal(await duty(), 0.2);
  });
});

Deno.test("sim inject_stuck_outputs expires after duration_ms and refuses a duration of 0", async () => {
  await withSim(async (sim) => {
    const bad = await sim.call(CHAOS, 10, { device_id: s("motorctl0"), duration_ms: i(0) });
    equal(bad.status?.code, S.INVALID_ARGUMENT);
    equal(
      bad.status?.message,
      "inject_stuck_outputs: argument 'duration_ms' = 0 is below the minimum 1",
    );
    const r = await sim.call(CHAOS, 10, { device_id: s("motorctl0"), duration_ms: i(200) });
    equal(r.status?.code, S.OK);
    // Once expired, a write takes effect again (bounded wait; each try writes a new value).
    const deadline = Date.now() + REPLY_TIMEOUT_MS;
    for (let n = 1;; n++) {
      const target = n / 1000;
      await sim.call("motorctl0", 10, { motor_index: i(2), duty: d(target) });
      const v = (await sim.request({
        read_signals: { device_id: "motorctl0", signal_ids: ["motor2_duty"] },
      }))!.read_signals?.values?.[0]?.value?.double_value;
      if (v === target) break;
      equal(v, 0, "while stuck the output stays at its start value");
      ok(Date.now() < deadline, "the fault did not expire");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  });
});
