import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import { encodeFrame, StatusCode } from "../../src/adpp/mod.ts";
import { GOLDEN, unhex } from "../adpp/_golden.ts";
import { SIM_YAML, SimProcess, tempConfig, withSim } from "./_sim_process.ts";

const SIM_DEVICE_IDS = ["analogsensor0", "motorctl0", "relayio0", "tempctl0", "chaos_control"];

Deno.test("sim answers the golden Hello request frame with identity and metadata", async () => {
  await withSim(async (sim) => {
    await sim.writeRaw(encodeFrame(unhex(GOLDEN.helloRequest)));
    const resp = await sim.readResponse();
    equal(resp.request_id, 1);
    deepStrictEqual(resp.status, { code: StatusCode.OK, message: "ok" });
    equal(resp.payload, "hello");
    deepStrictEqual(resp.hello, {
      protocol_version: "v1",
      provider_name: "anolis-provider-sim",
      provider_version: "0.2.3",
      metadata: {
        transport: "stdio+uint32_le",
        max_frame_bytes: "1048576",
        supports_wait_ready: "true",
      },
    });
  });
});

Deno.test("sim refuses Hello with another protocol version with FAILED_PRECONDITION", async () => {
  await withSim(async (sim) => {
    const resp = await sim.request({ hello: { protocol_version: "1" } });
    equal(resp.status?.code, StatusCode.FAILED_PRECONDITION);
    equal(resp.payload, undefined);
  });
});

Deno.test("sim answers WaitReady with the startup diagnostics", async () => {
  await withSim(async (sim) => {
    await sim.request({ hello: { protocol_version: "v1" } });
    const resp = await sim.request({ wait_ready: { max_wait_ms_hint: 60000 } });
    equal(resp.status?.code, StatusCode.OK);
    deepStrictEqual(resp.wait_ready?.diagnostics, {
      init_time_ms: "0",
      device_count: "5",
      startup_policy: "strict",
      startup_configured_devices: "4",
      startup_initialized_devices: "4",
      startup_failed_devices: "0",
      startup_degraded: "false",
      provider_version: "0.2.3",
      provider_impl: "sim",
    });
  }, SIM_YAML);
});

Deno.test("sim lists configured devices sorted by id with chaos_control last", async () => {
  await withSim(async (sim) => {
    const resp = await sim.request({ list_devices: {} });
    const devices = resp.list_devices?.devices ?? [];
    deepStrictEqual(devices.map((d) => d.device_id), SIM_DEVICE_IDS);
    deepStrictEqual(devices[3], {
      device_id: "tempctl0",
      provider_name: "anolis-provider-sim",
      type_id: "sim.temp_control_card",
      type_version: "1.0",
      label: "Sim Temp Control Card (2TC + 2Relay)",
      address: "sim://tempctl0",
      tags: { family: "sim", kind: "temp_control" },
    });
    deepStrictEqual(devices[4], {
      device_id: "chaos_control",
      provider_name: "anolis-provider-sim",
      type_id: "chaos.control",
      type_version: "1.0",
      label: "Chaos Fault Injection Control",
      address: "chaos://control",
      tags: { family: "chaos", kind: "fault_injection" },
    });
    equal(resp.list_devices?.device_health, undefined);

    const withHealth = await sim.request({ list_devices: { include_health: true } });
    deepStrictEqual(
      withHealth.list_devices?.device_health?.map((h) => [h.device_id, h.state]),
      SIM_DEVICE_IDS.map((id) => [id, 1]),
    );
  });
});

Deno.test("sim GetHealth reports the provider OK and every listed device OK", async () => {
  await withSim(async (sim) => {
    const h = (await sim.request({ get_health: {} })).get_health;
    deepStrictEqual(h?.provider, {
      state: 1,
      message: "ok",
      metrics: {
        impl: "sim",
        startup_policy: "strict",
        startup_configured_devices: "4",
        startup_initialized_devices: "4",
        startup_failed_devices: "0",
      },
    });
    deepStrictEqual(h?.devices?.map((d) => [d.device_id, d.state, d.metrics?.impl]), [
      ...SIM_DEVICE_IDS.map((id) => [id, 1, "sim"]),
    ]);
    equal((h?.devices?.[0])!.last_seen, undefined);
  });
});

Deno.test("sim under startup_policy degraded drops failed devices and reports them", async () => {
  const path = await tempConfig(`
startup_policy: degraded
devices:
  - id: tempctl0
    type: tempctl
    initial_temp: 80
    temp_range: [10, 50]
  - id: relayio0
    type: relayio
  - id: pump0
    type: pump
simulation:
  mode: inert
`);
  const sim = SimProcess.start(path);
  try {
    const list = await sim.request({ list_devices: {} });
    deepStrictEqual(list.list_devices?.devices?.map((d) => d.device_id), [
      "relayio0",
      "chaos_control",
    ]);
    const ready = (await sim.request({ wait_ready: {} })).wait_ready?.diagnostics;
    equal(ready?.startup_degraded, "true");
    equal(ready?.startup_configured_devices, "3");
    equal(ready?.startup_initialized_devices, "1");
    equal(ready?.startup_failed_devices, "2");
    equal(ready?.device_count, "2");
    const h = (await sim.request({ get_health: {} })).get_health;
    equal(h?.provider?.state, 2); // DEGRADED
    const failed = h?.devices?.filter((d) => d.state === 3) ?? []; // UNREACHABLE
    deepStrictEqual(failed.map((d) => [d.device_id, d.metrics]), [
      ["tempctl0", { startup_failure: "true", device_type: "tempctl" }],
      ["pump0", { startup_failure: "true", device_type: "pump" }],
    ]);
  } finally {
    await sim.stop();
    await Deno.remove(path);
  }
});
