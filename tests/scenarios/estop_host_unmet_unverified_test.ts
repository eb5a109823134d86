/**
 * Two features on one device, over real HTTP and a real provider process: the e-stop's list of
 * the devices it cannot verify (`estop.unverified_devices`) and a provider that is up with its
 * host check unmet, so it lists no device. The ladder calls a device that provider does not list:
 * the call fails NOT_FOUND and nothing reads the device back, so status must name it as not known
 * to be safe, with why -- not only once the device is back (docs/safety.md, "Verified safe
 * state").
 */
import assert from "node:assert/strict";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import {
  HOST_UNMET_I2C1 as HOST_UNMET,
  type Inventory,
  programmableProvider,
} from "../helpers/programmable_provider.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { Api } from "./alarms_helpers.ts";
import { UNVERIFIED_NO_EXPECTATION } from "../../src/safety/mod.ts";

const ACTUATE = 3;

const WITH_DEVICE: Inventory = {
  devices: {
    act0: {
      signals: [],
      functions: [{ function_id: 10, name: "pulse", policy: { category: ACTUATE }, args: [] }],
    },
  },
};

Deno.test("Estop status names a ladder device its host-unmet provider does not list", async () => {
  const dir = tempDir("estop-host-unmet-unverified-");
  const file = `${dir}/pol.json`;
  await Deno.writeTextFile(file, JSON.stringify(HOST_UNMET));
  const fx = await startHttpFixture({
    config: {
      providers: [
        programmableProvider("pol", file, {
          restart: { maxAttempts: 5, backoffMs: [0, 0, 0, 0, 0] },
        }),
      ],
      safety: {
        hooks: [{
          deviceHandle: "pol/act0",
          functionId: 0,
          functionName: "pulse",
          args: {},
          path: "safety.safe_state.hooks[0]",
        }],
      },
    },
  });
  try {
    const rt = fx.runtime;
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
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
    await Deno.writeTextFile(file, JSON.stringify(WITH_DEVICE));
    const pid = pol.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor(
      "pol up again with act0",
      () => pol.available && pol.session!.pid !== pid && pol.devices.length === 1,
      30_000,
    );
    const back = await estop();
    assert.deepEqual(back.unverified_devices, ["pol/act0"]);
    assert.deepEqual(back.unverified_reasons, [
      { device_handle: "pol/act0", reason: UNVERIFIED_NO_EXPECTATION },
    ]);
  } finally {
    await fx.close();
  }
});
