/**
 * The e-stop drains every provider's in-flight calls before it answers: a call admitted before the
 * latch to a provider the ladder never touches has finished when `POST /v0/estop` returns, and the
 * wait is bounded and reported.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, d, expectation, manualCall, plantProvider } from "../safety/_fixture.ts";

const SLOW_MS = 800;

Deno.test("Estop answers only after in-flight calls to untouched providers have finished", async () => {
  const rt = await startRuntime(testConfig({
    providers: [plantProvider("fast"), plantProvider("other", { latencyMs: SLOW_MS })],
    safety: {
      // The ladder touches `fast` only.
      hooks: [call("fast/plant0", "set_fan", { duty: { double: 0 } })],
      expect: [expectation("fast/plant0/fan_duty", { equals: 0 })],
    },
  }));
  try {
    await rt.modes.request("MANUAL");
    const sentAt = Date.now();
    const inFlight = manualCall(rt, "other", "plant0", 2, { duty: d(0.9) });
    // Let the call reach the provider (it is on the wire for SLOW_MS).
    await new Promise((r) => setTimeout(r, 100));

    const result = await rt.estop.trigger("drain");
    const answeredAt = Date.now();
    assert.deepEqual(result.drain, { complete: true, pending_providers: [] });
    // The provider finished the call (it answers SLOW_MS after arrival) before the answer.
    assert.ok(
      answeredAt - sentAt >= SLOW_MS,
      `answered ${answeredAt - sentAt} ms after the in-flight call was sent`,
    );
    await inFlight;
    const arrival = rt.cache.signal("other", "plant0", "last_call_ms")?.value;
    assert.ok(arrival?.type === "double" && arrival.double + SLOW_MS <= answeredAt);
  } finally {
    await rt.stop();
  }
});

Deno.test("CallRouter.drain is bounded: it reports false while a call is still on the wire", async () => {
  const rt = await startRuntime(testConfig({
    providers: [plantProvider("other", { latencyMs: SLOW_MS })],
  }));
  try {
    await rt.modes.request("MANUAL");
    assert.equal(await rt.router.drain("other", 10), true, "idle provider drains at once");
    const inFlight = manualCall(rt, "other", "plant0", 2, { duty: d(0.5) });
    await new Promise((r) => setTimeout(r, 50));
    const t0 = performance.now();
    assert.equal(await rt.router.drain("other", 100), false);
    assert.ok(performance.now() - t0 < SLOW_MS - 200, "the bound, not the call, ended the wait");
    assert.equal(await rt.router.drain("other", SLOW_MS + 2000), true);
    await inFlight;
    // A timed-out barrier left nothing behind: the next call goes through at once.
    await manualCall(rt, "other", "plant0", 2, { duty: d(0.1) });
  } finally {
    await rt.stop();
  }
});
