/**
 * The console's keys (console/keys.js) and element-id parts (console/dom.js cssId), under Deno:
 * ids that contain `/`, `_` or `-` never make two keys or two ids equal.
 */
import assert from "node:assert/strict";
import { deviceKey, handleKey, signalKey } from "../../console/keys.js";
import { cssId } from "../../console/dom.js";

Deno.test("signalKey keeps device m signal x/speed apart from device m/x signal speed", () => {
  assert.notEqual(signalKey("s0", "m", "x/speed"), signalKey("s0", "m/x", "speed"));
  assert.notEqual(deviceKey("s0", "m/x"), deviceKey("s0/m", "x"));
  assert.notEqual(deviceKey("s0", "m"), signalKey("s0", "m", ""));
});

Deno.test("handleKey reads a handle as the runtime does: the device is what lies between", () => {
  assert.equal(handleKey("s0/m/x/speed"), signalKey("s0", "m/x", "speed"));
  assert.equal(handleKey("sim0/tempctl0/tc1_temp"), signalKey("sim0", "tempctl0", "tc1_temp"));
  // Not a handle: a key no signal has.
  for (const bad of ["s0/speed", "speed", "/m/x", "s0/m/"]) {
    assert.equal(handleKey(bad), JSON.stringify([bad]), bad);
  }
});

Deno.test("cssId gives different texts different parts, with no '-' to confuse a join", () => {
  const texts = ["m/x", "m_2fx", "m_002fx", "m-x", "m_x", "m", "x", "m x", "title", "é"];
  const parts = texts.map(cssId);
  assert.equal(new Set(parts).size, texts.length, parts.join(" "));
  for (const p of parts) assert.match(p, /^[A-Za-z0-9_]+$/);
  assert.equal(cssId("motorctl0"), "motorctl0");
  assert.equal(cssId("m/x"), "m_002fx");
});
