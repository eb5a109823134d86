/**
 * GET /v0/providers/health → providers[].devices[] carries each device's `type_version` and
 * `descriptor_tags` as its provider declared them in DescribeDevice, with the bounds the later
 * anolis OpenAPI document gives (anolishq/anolis schemas/http/runtime-http.openapi.v0.yaml,
 * ProviderDeviceHealth): "" and {} when the provider declared none; type_version and tag values
 * truncated to 128 bytes on a UTF-8 boundary; tag keys longer than 128 bytes dropped; at most 32
 * tags. A scripted provider (tests/scenarios/_data_provider.ts `descriptors`) as a real child.
 */
import assert from "node:assert/strict";
import { MAX_DESCRIPTOR_TAGS, MAX_DESCRIPTOR_TEXT_BYTES } from "../../src/state/mod.ts";
import { startDataFixture } from "./_data_helpers.ts";

const bytes = (s: string) => new TextEncoder().encode(s).length;

Deno.test("GET /v0/providers/health gives each device its type_version and descriptor_tags, bounded, and empty ones when the provider declares none", async () => {
  const { fx } = await startDataFixture("descriptors");
  try {
    const r = await fx.request("GET", "/v0/providers/health");
    assert.equal(r.status, 200);
    const devices = r.json.providers[0].devices;
    assert.deepEqual(devices.map((d: { device_id: string }) => d.device_id), ["tagged", "bare"]);
    const [tagged, bare] = devices;

    assert.equal(MAX_DESCRIPTOR_TEXT_BYTES, 128);
    assert.equal(MAX_DESCRIPTOR_TAGS, 32);
    // "v" + 63 "é" is 127 bytes; one "é" more would be 129.
    assert.equal(tagged.type_version, `v${"é".repeat(63)}`);
    // The 129-byte key is dropped; of the 41 left, the first 32 in key order are kept.
    const keys = Object.keys(tagged.descriptor_tags);
    assert.deepEqual(keys, [
      "long",
      ...Array.from({ length: 31 }, (_, k) => `t${String(k).padStart(2, "0")}`),
    ]);
    assert.equal(tagged.descriptor_tags.long, "ü".repeat(64));
    assert.equal(bytes(tagged.descriptor_tags.long), 128);
    assert.equal(tagged.descriptor_tags.t00, "x");

    assert.equal(bare.type_version, "");
    assert.deepEqual(bare.descriptor_tags, {});
  } finally {
    await fx.close();
  }
});
