/** The console's words for a function's declared policy (console/devices.js policyText). */
import assert from "node:assert/strict";
import { policyText } from "../../console/devices.js";

const none = {
  allowed_modes: [],
  requires_lease: false,
  min_interval_ms: 0,
  is_idempotent: false,
  safety_profile: "",
};

Deno.test("policyText says what the runtime enforces of a function's declared policy", () => {
  assert.equal(policyText(undefined), "");
  assert.equal(policyText(none), "");
  assert.equal(policyText({ ...none, is_idempotent: true, safety_profile: "x" }), "");
  assert.equal(policyText({ ...none, allowed_modes: ["MANUAL", "AUTO"] }), "only in MANUAL, AUTO");
  assert.equal(
    policyText({ ...none, min_interval_ms: 1000, requires_lease: true }),
    "at most every 1000 ms · needs a lease (refused: the runtime grants none)",
  );
});
