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
  quoteDeviceId,
  quoteProviderTextWithin,
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

Deno.test("quoteDeviceHandle and quoteDeviceId escape DEL, every C1 control and U+2028/U+2029 as quoteProviderTextWithin does", () => {
  // JSON.stringify alone leaves these raw: a terminal takes CSI U+009B as an escape sequence,
  // some viewers break lines on NEL U+0085 and U+2028/U+2029.
  const controls = [0x2028, 0x2029];
  for (let code = 0x7f; code <= 0x9f; code++) controls.push(code);
  for (const c of controls.map((code) => String.fromCharCode(code))) {
    const escaped = `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
    assert.equal(quoteDeviceHandle(`p${c}`, `d${c}0`), `"p${escaped}/d${escaped}0"`);
    assert.equal(quoteDeviceId(`d${c}0`), `"d${escaped}0"`);
    // Still JSON, that parses back to the text.
    assert.equal(JSON.parse(quoteDeviceHandle("p", `d${c}0`)), `p/d${c}0`);
  }
  // Neighbours are left as they are: ~ (U+007E), NBSP (U+00A0).
  assert.equal(quoteDeviceHandle("p~", "d\u00a0"), '"p~/d\u00a0"');
  // Each part cut as namedDeviceHandle first, then quoted: the quoted form of the cut text.
  const d = "d".repeat(QUOTED_DEVICE_ID_CHARS);
  assert.equal(
    quoteDeviceId(`${d}\u009b`),
    quoteProviderTextWithin(`${d}\u009b`, QUOTED_DEVICE_ID_CHARS),
  );
  assert.equal(quoteDeviceId(`${d}\u009b`), `"${d}\u2026"`);
  assert.equal(quoteDeviceId(`${d.slice(1)}\u009b`), `"${d.slice(1)}\\u009b"`);
  assert.equal(
    quoteDeviceHandle("x".repeat(10_000), "y".repeat(10_000)).length,
    QUOTED_PROVIDER_ID_CHARS + QUOTED_DEVICE_ID_CHARS + 5,
  );
});
