/**
 * The device routes' not-found answers name the client's URL ids as the call router does
 * (namedDeviceHandle: ids cut, not quoted): a 10 kB id in the URL makes no 10 kB message.
 */
import assert from "node:assert/strict";
import { QUOTED_DEVICE_ID_CHARS, QUOTED_PROVIDER_ID_CHARS } from "../../src/common/mod.ts";
import { tempDir } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

const LONG_PROVIDER = "p".repeat(10_000);
const LONG_DEVICE = "d".repeat(10_000);
const CUT = `${"p".repeat(QUOTED_PROVIDER_ID_CHARS)}\u2026/${
  "d".repeat(QUOTED_DEVICE_ID_CHARS)
}\u2026`;

Deno.test("The device, state and history routes cut the ids of a device not found", async () => {
  const fx = await startHttpFixture({ start: false, config: { runtime: { dataDir: tempDir() } } });
  try {
    for (
      const path of [
        `/v0/devices/${LONG_PROVIDER}/${LONG_DEVICE}/capabilities`,
        `/v0/state/${LONG_PROVIDER}/${LONG_DEVICE}`,
        `/v0/history/${LONG_PROVIDER}/${LONG_DEVICE}?since_ms=0`,
      ]
    ) {
      const r = await fx.request("GET", path);
      assert.equal(r.status, 404, `${path.slice(0, 20)}: ${r.text.slice(0, 200)}`);
      assert.equal(r.json.status.message, `Device not found: ${CUT}`);
    }
    // Ids within the bounds are named whole, as before.
    const r = await fx.request("GET", "/v0/state/sim0/tempctl9");
    assert.equal(r.json.status.message, "Device not found: sim0/tempctl9");
  } finally {
    await fx.close();
  }
});
