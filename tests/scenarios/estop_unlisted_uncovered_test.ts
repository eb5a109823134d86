/**
 * A device its provider listed before and no longer lists (back with its host check unmet) is one
 * the ladder is to secure and cannot: no call reaches it (rung 3 zeroes listed devices; a declared
 * call fails NOT_FOUND; rung 4 calls nothing). Whatever the rung, `estop.plan.uncovered` (and a
 * stop's `uncovered`) must name its actuating functions as last listed, as
 * `estop.unverified_devices` names the device -- the two agree (docs/safety.md, "The ladder").
 * Real provider processes (the programmable provider), over real HTTP.
 */
import assert from "node:assert/strict";
import { HOST_UNMET_I2C1, hostUnmet, SET_ON_DEVICE, withHostUnmetRig } from "./_host_unmet_rig.ts";
import { call } from "../safety/_fixture.ts";

const SET_OFF = call("pol/act0", "set_on", { on: false });

/** Each rung, with the safety configuration that selects it while pol lists act0. */
const RUNGS = [
  { rung: "hooks", safety: { hooks: [SET_OFF] } },
  { rung: "setpoints", safety: { setpoints: [SET_OFF] } },
  { rung: "zero", safety: { zeroIsSafe: true } },
  { rung: "none", safety: {} },
] as const;

for (const { rung, safety } of RUNGS) {
  Deno.test(`Estop rung '${rung}': a device its provider no longer lists is uncovered in the plan, as it is unverified`, async () => {
    await withHostUnmetRig("estop-unlisted-uncovered-", SET_ON_DEVICE, safety, async (r) => {
      const { rt, api } = r;
      const pol = rt.registry.host("pol")!;
      const status = async () => (await api.get("/v0/runtime/status")).json.estop;
      assert.equal((await status()).plan.rung, rung);

      await r.restartAs(pol, HOST_UNMET_I2C1, "pol up again, host unmet", hostUnmet);
      const after = await status();
      assert.ok(after.unverified_devices.includes("pol/act0"), JSON.stringify(after));
      assert.deepEqual(after.plan.uncovered, [{ device_handle: "pol/act0", function: "set_on" }]);
      assert.equal(after.plan.rung, rung, "a vanished device takes no part in choosing the rung");
      assert.equal(after.uncovered_actuating_functions, 1);

      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      const stop = await api.post("/v0/estop", { reason: "test" });
      assert.equal(stop.status, 200, JSON.stringify(stop.json));
      assert.deepEqual(stop.json.uncovered, [{ device_handle: "pol/act0", function: "set_on" }]);
    });
  });
}
