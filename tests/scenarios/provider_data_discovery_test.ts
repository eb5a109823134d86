/**
 * Discovery keys each device by the id that was asked for. A DescribeDevice answer naming another
 * device, duplicate or missing ids, ids that are not addressable as a URL path segment and ids
 * (device or signal) with a control character are refused with a warning that provider health
 * shows.
 */
import assert from "node:assert/strict";
import { MAX_DISCOVERY_WARNINGS } from "../../src/providers/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { dataProvider } from "./_data_helpers.ts";

Deno.test("Discovery refuses a DescribeDevice answer that renames a device onto another, and unaddressable ids", async () => {
  const fx = await startHttpFixture({
    config: { providers: [dataProvider("p0", "discovery")], pollingIntervalMs: 50 },
  });
  try {
    const rt = fx.runtime;
    // ListDevices: a, b, ".", "..", a, "", c, "d\u0000", e. b described itself as a: skipped, not
    // a second a.
    assert.deepEqual(rt.registry.devices().map((d) => d.deviceId), ["a", "c"]);
    assert.equal(rt.registry.capabilities("p0", "a")?.device.label, "Device A");
    assert.equal((rt.registry.capabilities("p0", "a")?.functions[0])!.name, "act_a");
    // An answer without a device id is keyed by the id that was asked for.
    assert.equal(rt.registry.capabilities("p0", "c")?.device.label, "Device C");

    const devices = await fx.request("GET", "/v0/devices");
    assert.equal(devices.status, 200);
    assert.deepEqual(
      devices.json.devices.map((d: { device_id: string }) => d.device_id),
      ["a", "c"],
    );
    const state = await fx.request("GET", "/v0/state");
    assert.deepEqual(
      state.json.devices.map((d: { device_id: string }) => d.device_id),
      ["a", "c"],
    );

    const health = await fx.request("GET", "/v0/providers/health");
    assert.equal(health.status, 200);
    const p0 = health.json.providers[0];
    // The anolis fields are all still there, unchanged in shape.
    for (
      const key of [
        "provider_id",
        "state",
        "lifecycle_state",
        "last_seen_ago_ms",
        "uptime_seconds",
        "device_count",
        "degraded",
        "failed_device_count",
        "reported",
        "supervision",
        "devices",
      ]
    ) assert.ok(key in p0, `provider health lacks ${key}`);
    assert.equal(p0.device_count, 2);
    assert.deepEqual(p0.devices.map((d: { device_id: string }) => d.device_id), ["a", "c"]);
    const warnings: string[] = p0.discovery_warnings;
    assert.equal(warnings.length, 7, JSON.stringify(warnings));
    const named = (re: RegExp) => warnings.filter((w) => re.test(w)).length;
    assert.equal(named(/"b" answered for device "a"/), 1);
    assert.equal(named(/"\." cannot be addressed/), 1);
    assert.equal(named(/"\.\." cannot be addressed/), 1);
    assert.equal(named(/"a" more than once/), 1);
    assert.equal(named(/without id/), 1);
    // A device id or a signal id with a control character: quoted escaped.
    assert.equal(named(/^device id "d\\u0000" has a control character; device skipped$/), 1);
    assert.equal(
      named(/^DescribeDevice "e" declares signal "x\\r", which has a control character; device/),
      1,
    );
  } finally {
    await fx.close();
  }
});

Deno.test("Discovery warnings are bounded: the last kept entry counts the rest", async () => {
  const fx = await startHttpFixture({ config: { providers: [dataProvider("p0", "many_bad")] } });
  try {
    assert.deepEqual(fx.runtime.registry.devices().map((d) => d.deviceId), ["ok"]);
    const warnings = fx.runtime.providerHealth()[0]!.discovery_warnings!;
    assert.equal(warnings.length, MAX_DISCOVERY_WARNINGS);
    const duplicates = warnings.filter((w) => /"ok" more than once; device skipped$/.test(w));
    assert.equal(duplicates.length, MAX_DISCOVERY_WARNINGS - 1);
    // 30 duplicates in all: 19 listed, the 20th entry stands for the other 11.
    assert.equal(warnings[MAX_DISCOVERY_WARNINGS - 1], "11 more devices skipped");
  } finally {
    await fx.close();
  }
});
