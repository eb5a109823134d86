/**
 * Two features on one provider, over real HTTP and real provider processes: the ladder's rung 3
 * (`zero_is_safe`: it zeroes the actuating functions the providers list) and a provider up with its
 * host check unmet, which lists no device. Rung 3 makes no call to a device its provider does not
 * list, so nothing secures it; status must name it in `estop.unverified_devices` with why: one
 * listed before (it vanished at a restart) and one the safety config names (a setpoint the rung
 * does not apply) alike -- never an empty list while such a device is known (docs/safety.md,
 * "Verified safe state").
 */
import assert from "node:assert/strict";
import { tempDir } from "../helpers/kernel.ts";
import { programmableProvider } from "../helpers/programmable_provider.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { Api } from "./alarms_helpers.ts";
import {
  HOST_UNMET_I2C1,
  hostUnmet,
  oneDevice,
  SET_ON_DEVICE,
  withHostUnmetRig,
} from "./_host_unmet_rig.ts";
import { UNVERIFIED_NO_EXPECTATION } from "../../src/safety/mod.ts";

/** The status fields under test. */
async function unverified(api: Api) {
  const { estop } = (await api.get("/v0/runtime/status")).json;
  return {
    rung: estop.plan.rung,
    unverified_devices: estop.unverified_devices,
    unverified_reasons: estop.unverified_reasons,
  };
}

Deno.test("Estop rung 3 status names a device its provider no longer lists (host unmet after a restart)", async () => {
  await withHostUnmetRig("estop-zero-unlisted-", SET_ON_DEVICE, { zeroIsSafe: true }, async (r) => {
    const { rt, api } = r;
    const pol = rt.registry.host("pol")!;
    assert.deepEqual(await unverified(api), {
      rung: "zero",
      unverified_devices: ["pol/act0"],
      unverified_reasons: [{ device_handle: "pol/act0", reason: UNVERIFIED_NO_EXPECTATION }],
    });

    // Back with its host unmet: no device listed, so rung 3 has nothing to zero.
    await r.restartAs(pol, HOST_UNMET_I2C1, "pol up again, host unmet", hostUnmet);
    const vanished = {
      rung: "zero",
      unverified_devices: ["pol/act0"],
      unverified_reasons: [{
        device_handle: "pol/act0",
        reason: "no longer listed by its provider (its host check is unmet)",
      }],
    };
    assert.deepEqual(await unverified(api), vanished, "before the stop");

    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const stop = await api.post("/v0/estop", { reason: "test" });
    assert.equal(stop.status, 200, JSON.stringify(stop.json));
    assert.equal(stop.json.software_safe_state, "zero");
    assert.deepEqual(stop.json.actions, [], "rung 3 calls nothing it cannot list");
    assert.deepEqual(await unverified(api), vanished, "while latched");

    // A reload that restarts pol (its entry changed): lost meanwhile, not gone.
    const restarted = await rt.reload({
      ...rt.config,
      providers: rt.config.providers.map((p) => ({ ...p, timeoutMs: p.timeoutMs + 1000 })),
    });
    assert.deepEqual(restarted.providers?.restarted, ["pol"], JSON.stringify(restarted));
    const pol2 = rt.registry.host("pol")!;
    assert.notEqual(pol2, pol);
    assert.equal(pol2.hostCheck()?.status, "unmet");
    assert.deepEqual(await unverified(api), vanished, "after a reload restarted pol");

    // Back with the device: listed again, unverified for the usual reason only.
    await r.restartAs(pol2, SET_ON_DEVICE, "pol up again with act0", oneDevice);
    assert.deepEqual((await unverified(api)).unverified_reasons, [
      { device_handle: "pol/act0", reason: UNVERIFIED_NO_EXPECTATION },
    ]);

    // A reload that removes pol: its devices are gone, not unverified.
    await rt.reload({ ...rt.config, providers: [] });
    assert.equal(rt.registry.host("pol"), undefined);
    assert.deepEqual((await unverified(api)).unverified_devices, []);
  });
});

Deno.test("Estop rung 3 status names a device a setpoint addresses that no provider lists", async () => {
  const dir = tempDir("estop-zero-setpoint-unlisted-");
  const polFile = `${dir}/pol.json`;
  const hidFile = `${dir}/hid.json`;
  await Deno.writeTextFile(polFile, JSON.stringify(SET_ON_DEVICE));
  await Deno.writeTextFile(hidFile, JSON.stringify(HOST_UNMET_I2C1));
  const fx = await startHttpFixture({
    config: {
      providers: [programmableProvider("pol", polFile), programmableProvider("hid", hidFile)],
      safety: {
        // It leaves pol/act0 uncovered, so the ladder is rung 3, which applies no setpoint.
        setpoints: [{
          deviceHandle: "hid/valve0",
          functionId: 0,
          functionName: "close",
          args: {},
          path: "safety.safe_state.setpoints[0]",
        }],
        zeroIsSafe: true,
      },
    },
  });
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    assert.equal(fx.runtime.registry.host("hid")!.hostCheck()?.status, "unmet");
    assert.deepEqual(await unverified(api), {
      rung: "zero",
      unverified_devices: ["pol/act0", "hid/valve0"],
      unverified_reasons: [
        { device_handle: "pol/act0", reason: UNVERIFIED_NO_EXPECTATION },
        {
          device_handle: "hid/valve0",
          reason: "not listed by its provider (its host check is unmet)",
        },
      ],
    });
  } finally {
    await fx.close();
  }
});
