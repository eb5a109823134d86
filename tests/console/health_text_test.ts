/** The Health view's supervision words (console/health.js restartsText). */
import assert from "node:assert/strict";
import { restartsText } from "../../console/health.js";

const sup = {
  enabled: true,
  attempt_count: 0,
  max_attempts: 3,
  crash_detected: false,
  circuit_open: false,
  next_restart_in_ms: null,
};

Deno.test("restartsText never shows more restarts attempted than allowed", () => {
  assert.equal(restartsText(sup), "0 of 3");
  assert.equal(restartsText({ ...sup, attempt_count: 2, crash_detected: true }), "2 of 3");
  assert.equal(restartsText({ ...sup, attempt_count: 3 }), "3 of 3");
  // The circuit opens at the failure after the last allowed restart: the API counts it (as
  // anolis does, attempt_count = max_attempts + 1), but no restart was attempted for it.
  assert.equal(restartsText({ ...sup, attempt_count: 4, circuit_open: true }), "3 of 3");
  assert.equal(restartsText(undefined), "0 of 0");
});
