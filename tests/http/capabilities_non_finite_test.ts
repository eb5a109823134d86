/**
 * GET …/capabilities of a device whose provider declares doubles that are not finite numbers
 * (SignalSpec.poll_hint_hz, ArgSpec.min_double / max_double are wire doubles: NaN and ±Infinity
 * are on the wire). JSON has no such number: a poll hint is null (the document says so), and such
 * an argument bound is left out (anolis' document makes a bound a number when present). A client
 * validating answers against the API's OpenAPI document (or anolis') must read them.
 */
import assert from "node:assert/strict";
import type { InventoryReader } from "../../src/state/mod.ts";
import { capabilitiesFromWire, WireValueType } from "../../src/adpp/mod.ts";
import { tempDir } from "../helpers/kernel.ts";
import { fixtureServices, HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { HttpApi } from "../../src/http/mod.ts";

const CAPS = capabilitiesFromWire("p0", "odd", {
  device: { device_id: "odd", type_id: "test.odd" },
  capabilities: {
    signals: [
      { signal_id: "nan", value_type: WireValueType.DOUBLE, poll_hint_hz: NaN },
      { signal_id: "inf", value_type: WireValueType.DOUBLE, poll_hint_hz: Infinity },
      { signal_id: "neg", value_type: WireValueType.DOUBLE, poll_hint_hz: -Infinity },
      { signal_id: "ok", value_type: WireValueType.DOUBLE, poll_hint_hz: 2 },
    ],
    functions: [{
      function_id: 1,
      name: "set",
      policy: { category: 3 },
      args: [{
        name: "v",
        type: WireValueType.DOUBLE,
        required: true,
        min_double: -Infinity,
        max_double: NaN,
      }],
    }],
  },
});

Deno.test("GET capabilities of a device declaring non-finite doubles answers as its OpenAPI document says: a null hint, no bound", async () => {
  const base = await startHttpFixture({
    start: false,
    config: { runtime: { dataDir: tempDir() } },
  });
  // The kernel's services with an inventory that also holds p0/odd (no provider frame can carry
  // it through the programmable provider's JSON inventory file).
  const services = fixtureServices(base.runtime);
  const real = services.inventory;
  const inventory: InventoryReader = Object.create(real, {
    capabilities: {
      value: (p: string, d: string) => p === "p0" && d === "odd" ? CAPS : real.capabilities(p, d),
    },
  });
  Object.defineProperty(services, "inventory", { value: inventory, enumerable: true });
  const fx = new HttpFixture(base.runtime, services, new HttpApi(services, { apiToken: "" }));
  try {
    // fx.request checks the answer against GET /v0/openapi.json's document.
    const r = await fx.request("GET", "/v0/devices/p0/odd/capabilities");
    assert.equal(r.status, 200, r.text);
    const hints = Object.fromEntries(
      r.json.capabilities.signals.map((s: { signal_id: string; poll_hint_hz: unknown }) => [
        s.signal_id,
        s.poll_hint_hz,
      ]),
    );
    assert.deepEqual(hints, { inf: null, nan: null, neg: null, ok: 2 });
    const arg = r.json.capabilities.functions[0].args.v;
    // Bounds that are no finite number are left out (anolis: a bound is a number when present).
    assert.deepEqual(Object.keys(arg).sort(), ["required", "type"]);
  } finally {
    fx.api.close();
    await base.close();
  }
});
