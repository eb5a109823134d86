/** Device handles (`provider/device`): providerIdOf, the provider of one. */
import assert from "node:assert/strict";
import {
  deviceHandle,
  namedDeviceHandle,
  namedDeviceId,
  namedProviderId,
  providerIdOf,
  QUOTED_DEVICE_ID_CHARS,
  QUOTED_PROVIDER_ID_CHARS,
  quoteDeviceHandle,
} from "../../src/common/mod.ts";

Deno.test("providerIdOf gives the text before the first / of a device handle, the whole text without one", () => {
  assert.equal(providerIdOf(deviceHandle("sim0", "tempctl0")), "sim0");
  // A device id may hold a / of its own: the provider's id never does.
  assert.equal(providerIdOf("sim0/a/b"), "sim0");
  assert.equal(providerIdOf("sim0/"), "sim0");
  assert.equal(providerIdOf("/d"), "");
  assert.equal(providerIdOf("sim0"), "sim0");
  assert.equal(providerIdOf(""), "");
  // What the expression it replaced gave, for each of these.
  for (const h of ["sim0/tempctl0", "sim0/a/b", "sim0/", "/d", "sim0", ""]) {
    assert.equal(providerIdOf(h), h.split("/", 1)[0]);
  }
});

Deno.test("namedDeviceHandle cuts the provider id to QUOTED_PROVIDER_ID_CHARS and the device id to QUOTED_DEVICE_ID_CHARS; quoteDeviceHandle quotes that", () => {
  const p = "p".repeat(QUOTED_PROVIDER_ID_CHARS);
  const d = "d".repeat(QUOTED_DEVICE_ID_CHARS);
  // At the bounds: whole.
  assert.equal(namedDeviceHandle(p, d), `${p}/${d}`);
  assert.equal(namedProviderId(p), p);
  assert.equal(namedDeviceId(d), d);
  // One past each: cut, marked with an ellipsis.
  const cut = `${p}\u2026/${d}\u2026`;
  assert.equal(namedDeviceHandle(`${p}x`, `${d}y`), cut);
  assert.equal(namedProviderId(`${p}x`), `${p}\u2026`);
  assert.equal(namedDeviceId(`${d}y`), `${d}\u2026`);
  assert.equal(quoteDeviceHandle(`${p}x`, `${d}"y`), JSON.stringify(cut));
  assert.equal(quoteDeviceHandle("sim0", 'd"0'), '"sim0/d\\"0"');
});
