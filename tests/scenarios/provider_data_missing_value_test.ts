/**
 * A declared signal answered without a value (as the Atlas EZO provider answers a disabled output:
 * no value, quality UNKNOWN) keeps its place with the provider's quality mapped as the C++ runtime
 * does (UNKNOWN -> UNAVAILABLE), its last value or none; the quality change is published and the
 * device's worst quality shows it.
 */
import assert from "node:assert/strict";
import { recordEvents } from "../helpers/kernel.ts";
import { startDataFixture } from "./_data_helpers.ts";

Deno.test("A declared signal answered without a value keeps its place, its last value and the provider's quality", async () => {
  const { fx } = await startDataFixture("values");
  const rec = recordEvents(fx.runtime);
  try {
    const rt = fx.runtime;
    const absent = rt.cache.signal("p0", "missing", "absent");
    assert.equal(absent?.value, null);
    assert.equal(absent?.quality, "UNAVAILABLE");
    assert.deepEqual(rt.cache.signal("p0", "missing", "fading")?.value, {
      type: "double",
      double: 7.25,
    });
    assert.equal(rt.cache.signal("p0", "missing", "fading")?.quality, "OK");
    assert.equal(rt.cache.deviceQuality(rt.cache.device("p0", "missing")!), "UNAVAILABLE");

    let res = await fx.request("GET", "/v0/state/p0/missing");
    assert.equal(res.status, 200);
    assert.equal(res.json.quality, "UNAVAILABLE");
    assert.deepEqual(
      res.json.values.map((s: { signal_id: string; value: unknown; quality: string }) => [
        s.signal_id,
        s.value,
        s.quality,
      ]),
      [
        ["absent", { type: "unknown" }, "UNAVAILABLE"],
        ["fading", { type: "double", double: 7.25 }, "OK"],
      ],
    );

    // The provider stops giving `fading` a value (READ call, allowed in IDLE; the call's
    // post-call poll brings the new answer in before it returns).
    const call = await fx.request("POST", "/v0/call", {
      body: { provider_id: "p0", device_id: "missing", function_id: 1, args: {} },
    });
    assert.equal(call.status, 200, call.text);
    const fading = rt.cache.signal("p0", "missing", "fading");
    assert.deepEqual(fading?.value, { type: "double", double: 7.25 });
    assert.equal(fading?.quality, "UNAVAILABLE");
    const changes = rec.events.filter((e) =>
      e.kind === "quality_change" && e.device_id === "missing" && e.signal_id === "fading"
    );
    assert.deepEqual(
      changes.map((e) => e.kind === "quality_change" && [e.old_quality, e.new_quality]),
      [["OK", "UNAVAILABLE"]],
    );
    res = await fx.request("GET", "/v0/state/p0/missing");
    assert.equal(
      res.json.values.find((s: { signal_id: string }) => s.signal_id === "fading").quality,
      "UNAVAILABLE",
    );
    const device = rt.providerHealth()[0]!.devices.find((d) => d.device_id === "missing");
    assert.equal(device?.stale_signal_count, 2);
  } finally {
    rec.stop();
    await fx.close();
  }
});
