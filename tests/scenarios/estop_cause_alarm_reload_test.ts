/**
 * An e-stop latched by an alarm keeps its cause `alarm:<id>` when a configuration reload takes
 * that alarm out (the latch stands: a reload never undoes a stop), and status says what the reload
 * did to it (`estop.cause_alarm_retired`: `removed`, whose URL then answers 404, or `changed`), so
 * the cause does not point at an alarm that is no longer there (docs/alarms.md). Over real HTTP,
 * with the simulated provider and the kernel's own reload.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { alarmsConfig, Api } from "./alarms_helpers.ts";

// tc1_temp starts near 25 C: `warm` raises at its first poll and latches the e-stop; `other`
// never raises (a limit no heater reaches).
const ALARMS = `
alarms:
  - { id: warm, signal: sim0/tempctl0/tc1_temp, hihi: 0, action: estop }
  - { id: other, signal: sim0/tempctl0/tc1_temp, hihi: 900, action: estop }
`;

async function latchedByWarm() {
  const fx = await startHttpFixture({ config: alarmsConfig(ALARMS) });
  const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
  await waitFor("the e-stop latched", () => fx.runtime.estop.latched, 10_000);
  const before = (await api.get("/v0/runtime/status")).json.estop;
  assert.equal(before.cause, "alarm:warm");
  assert.equal(before.cause_alarm_retired, null);
  return { fx, api };
}

Deno.test("Estop status says the alarm that latched it was removed by a reload; cause and latch stand until released", async () => {
  const { fx, api } = await latchedByWarm();
  try {
    const rt = fx.runtime;
    // Another alarm removed: nothing said about the cause.
    await rt.reload({ ...rt.config, alarms: rt.config.alarms.filter((a) => a.id !== "other") });
    assert.equal((await api.get("/v0/runtime/status")).json.estop.cause_alarm_retired, null);

    await rt.reload({ ...rt.config, alarms: [] });
    assert.equal((await api.get("/v0/alarms/warm")).status, 404);
    const status = (await api.get("/v0/runtime/status")).json;
    assert.equal(status.mode, "FAULT");
    assert.equal(status.estop.latched, true);
    assert.equal(status.estop.cause, "alarm:warm");
    assert.equal(status.estop.cause_alarm_retired, "removed");

    assert.equal((await api.post("/v0/estop/clear")).status, 200);
    const released = (await api.get("/v0/runtime/status")).json.estop;
    assert.equal(released.latched, false);
    assert.equal(released.cause, null);
    assert.equal(released.cause_alarm_retired, null);
  } finally {
    await fx.close();
  }
});

Deno.test("Estop status says the alarm that latched it was changed by a reload, then removed", async () => {
  const { fx, api } = await latchedByWarm();
  try {
    const rt = fx.runtime;
    // The same id with another limit: another alarm than the one that latched.
    await rt.reload({
      ...rt.config,
      alarms: alarmsConfig(ALARMS.replace("hihi: 0,", "hihi: 800,")).alarms,
    });
    assert.equal((await api.get("/v0/alarms/warm")).status, 200);
    let estop = (await api.get("/v0/runtime/status")).json.estop;
    assert.equal(estop.cause, "alarm:warm");
    assert.equal(estop.cause_alarm_retired, "changed");

    await rt.reload({ ...rt.config, alarms: rt.config.alarms.filter((a) => a.id !== "warm") });
    estop = (await api.get("/v0/runtime/status")).json.estop;
    assert.equal(estop.latched, true);
    assert.equal(estop.cause_alarm_retired, "removed");
  } finally {
    await fx.close();
  }
});

Deno.test("Estop status says changed when a reload adds the removed cause alarm back (not the one that latched)", async () => {
  const { fx, api } = await latchedByWarm();
  try {
    const rt = fx.runtime;
    const all = rt.config.alarms;
    await rt.reload({ ...rt.config, alarms: all.filter((a) => a.id !== "warm") });
    assert.equal((await api.get("/v0/runtime/status")).json.estop.cause_alarm_retired, "removed");
    await rt.reload({ ...rt.config, alarms: all });
    assert.equal((await api.get("/v0/alarms/warm")).status, 200);
    const estop = (await api.get("/v0/runtime/status")).json.estop;
    assert.equal(estop.cause, "alarm:warm");
    assert.equal(estop.cause_alarm_retired, "changed");
  } finally {
    await fx.close();
  }
});
