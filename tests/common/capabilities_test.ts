/** Device handles (`provider/device`): providerIdOf, the provider of one. */
import assert from "node:assert/strict";
import { deviceHandle, providerIdOf } from "../../src/common/mod.ts";

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
