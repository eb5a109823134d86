import assert from "node:assert/strict";
import { isOtherDeviceAnswer } from "../../src/adpp/mod.ts";

Deno.test("isOtherDeviceAnswer is true only for a non-empty device_id naming another device", () => {
  assert.equal(isOtherDeviceAnswer("tempctl0", "tempctl0"), false);
  assert.equal(isOtherDeviceAnswer("tempctl0", ""), false); // unset: taken as the asked device
  assert.equal(isOtherDeviceAnswer("tempctl0", "tempctl1"), true);
  assert.equal(isOtherDeviceAnswer("tempctl0", "tempctl00"), true);
  assert.equal(isOtherDeviceAnswer("", "tempctl0"), true);
});
