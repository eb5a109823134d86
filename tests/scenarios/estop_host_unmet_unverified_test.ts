/**
 * Two features on one device, over real HTTP and a real provider process: the e-stop's list of
 * the devices it cannot verify (`estop.unverified_devices`) and a provider that is up with its
 * host check unmet, so it lists no device. The ladder calls a device that provider does not list:
 * the call fails NOT_FOUND and nothing reads the device back, so status must name it as not known
 * to be safe, with why -- not only once the device is back (docs/safety.md, "Verified safe
 * state").
 */
import assert from "node:assert/strict";
import type { Inventory } from "../helpers/programmable_provider.ts";
import {
  ACTUATE,
  HOST_UNMET_I2C1 as HOST_UNMET,
  oneDevice,
  PULSE_HOOK,
  withHostUnmetRig,
} from "./_host_unmet_rig.ts";
import { UNVERIFIED_NO_EXPECTATION } from "../../src/safety/mod.ts";

const WITH_DEVICE: Inventory = {
  devices: {
    act0: {
      signals: [],
      functions: [{ function_id: 10, name: "pulse", policy: { category: ACTUATE }, args: [] }],
    },
  },
};

Deno.test("Estop status names a ladder device its host-unmet provider does not list", async () => {
  const safety = { hooks: [PULSE_HOOK] };
  await withHostUnmetRig("estop-host-unmet-unverified-", HOST_UNMET, safety, async (r) => {
    const { rt, api } = r;
    const estop = async () => (await api.get("/v0/runtime/status")).json.estop;
    const pol = rt.registry.host("pol")!;
    assert.equal(pol.available, true);
    assert.equal(pol.hostCheck()?.status, "unmet");
    const unlisted = {
      unverified_devices: ["pol/act0"],
      unverified_reasons: [{
        device_handle: "pol/act0",
        reason: "not listed by its provider (its host check is unmet)",
      }],
    };
    const before = await estop();
    assert.deepEqual(
      {
        unverified_devices: before.unverified_devices,
        unverified_reasons: before.unverified_reasons,
      },
      unlisted,
      "before the stop",
    );

    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const stop = await api.post("/v0/estop", { reason: "test" });
    assert.equal(stop.status, 200, JSON.stringify(stop.json));
    assert.deepEqual(stop.json.actions.map((a: { success: boolean }) => a.success), [false]);
    assert.match(stop.json.actions[0].error, /^NOT_FOUND: /);
    assert.equal(stop.json.verification.outcome, "unverifiable");
    const latched = await estop();
    assert.equal(latched.latched, true);
    assert.deepEqual(
      {
        unverified_devices: latched.unverified_devices,
        unverified_reasons: latched.unverified_reasons,
      },
      unlisted,
      "while latched",
    );

    // Back with the device: listed, still unverified (no expectation covers it).
    await r.restartAs(pol, WITH_DEVICE, "pol up again with act0", oneDevice);
    const back = await estop();
    assert.deepEqual(back.unverified_devices, ["pol/act0"]);
    assert.deepEqual(back.unverified_reasons, [
      { device_handle: "pol/act0", reason: UNVERIFIED_NO_EXPECTATION },
    ]);
  });
});
