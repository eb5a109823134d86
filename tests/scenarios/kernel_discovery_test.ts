import assert from "node:assert/strict";
import { processAlive, recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("Runtime discovers the simulated provider's devices and polls their signals", async () => {
  const rt = await startRuntime(testConfig());
  const rec = recordEvents(rt);
  try {
    const ids = rt.registry.devices().map((d) => d.deviceId);
    assert.deepEqual(ids, ["analogsensor0", "motorctl0", "relayio0", "tempctl0", "chaos_control"]);
    const caps = rt.registry.capabilities("sim0", "motorctl0")!;
    const duty = caps.functions.find((f) => f.functionId === 10)!;
    assert.equal(duty.name, "set_motor_duty");
    assert.equal(duty.actuating, true);
    assert.deepEqual(duty.args.find((a) => a.name === "duty"), {
      name: "duty",
      type: "double",
      unit: "",
      description: duty.args.find((a) => a.name === "duty")!.description,
      required: true,
      min: 0,
      max: 1,
      allowedValues: [],
    });
    // Primed by the first poll pass: every tempctl signal is cached with quality OK.
    const temp = rt.cache.device("sim0", "tempctl0")!;
    assert.equal(temp.available, true);
    assert.deepEqual(
      [...temp.signals.keys()].sort(),
      ["control_mode", "relay1_state", "relay2_state", "setpoint", "tc1_temp", "tc2_temp"],
    );
    assert.equal(rt.cache.deviceQuality(temp), "OK");
    assert.equal(rt.cache.signal("sim0", "tempctl0", "control_mode")?.value?.type, "string");
    // chaos_control has no signals: no poll plan.
    assert.equal(rt.cache.device("sim0", "chaos_control")?.pollable.length, 0);
    // Polling goes on: analog readings carry noise, so values change and events flow.
    await waitFor(
      "a state_update after start",
      () => rec.events.some((e) => e.kind === "state_update" && e.device_id === "analogsensor0"),
    );
    // tempctl0's health is OK once a poll answered within its bounds: a loaded machine can leave
    // a poll later than tc1_temp's 1.5 s (STALE then, rightly), so wait for one (bounded).
    const health = await waitFor("tempctl0's health OK", () => {
      const h = rt.providerHealth()[0];
      return h?.devices.find((d) => d.device_id === "tempctl0")?.health === "OK" ? h : null;
    });
    assert.equal(health!.state, "AVAILABLE");
    assert.equal(health!.lifecycle_state, "RUNNING");
    assert.equal(health!.devices.find((d) => d.device_id === "tempctl0")?.health, "OK");
    assert.equal(health!.devices.find((d) => d.device_id === "chaos_control")?.health, "UNKNOWN");
  } finally {
    rec.stop();
    await rt.stop();
  }
});

Deno.test("Runtime.stop ends every provider process", async () => {
  const rt = await startRuntime(testConfig());
  const pid = rt.registry.host("sim0")!.session!.pid;
  assert.ok(processAlive(pid));
  await rt.stop();
  assert.equal(processAlive(pid), false);
});

Deno.test("Runtime start fails fast naming a provider that cannot start", async () => {
  const config = testConfig();
  const broken = { ...config.providers[0]!, id: "broken", command: "/nonexistent/provider" };
  await assert.rejects(
    startRuntime({ ...config, providers: [config.providers[0]!, broken] }),
    /broken: cannot start provider/,
  );
});
