/** The Health view's supervision words (console/health.js restartsText). */
import assert from "node:assert/strict";
import { HealthView, restartsText } from "../../console/health.js";

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

Deno.test("HealthView.load shows the newest read of the health, whichever answer arrives last", async () => {
  // Two reads under way (an availability event, then a reload's full refresh): the older answer,
  // arriving last, must not replace the newer one (a provider a reload failed to start showed
  // DOWN without its reason; the Devices view's badges went back in time).
  const answers: ((r: unknown) => void)[] = [];
  const seen: string[] = [];
  const view = new HealthView({
    api: { get: () => new Promise((resolve) => answers.push(resolve)) },
    isVisible: () => false,
    onDevice: (_p: string, _d: string, health: string) => seen.push(health),
  });
  const older = view.load();
  const newer = view.load();
  const reading = (health: string) => ({
    providers: [{ provider_id: "p0", devices: [{ device_id: "d0", health }] }],
  });
  answers[1]!(reading("OK"));
  await newer;
  answers[0]!(reading("UNAVAILABLE"));
  await older;
  assert.deepEqual(seen, ["OK"], "the older read arrived last and was shown");
});
