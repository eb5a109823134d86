/**
 * The e-stop drains every provider's in-flight calls before it answers: a call admitted before the
 * latch to a provider the ladder never touches has finished when `POST /v0/estop` returns, and the
 * wait is bounded and reported.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { TypedValue } from "../../src/common/mod.ts";
import { call, d, expectation, manualCall, plantProvider } from "../safety/_fixture.ts";

const SLOW_MS = 800;

/** A manual set_fan call (function 2) to `providerId`'s plant0; `onSent` once it is written. */
function sentCall(
  rt: Kernel,
  providerId: string,
  args: Record<string, TypedValue>,
  onSent: () => void,
) {
  const answer = rt.router.call({
    providerId,
    deviceId: "plant0",
    functionId: 2,
    args,
    origin: "manual",
    onSent,
  });
  // Awaited by the test; a failed assertion before that must not be hidden by its rejection.
  answer.catch(() => {});
  return answer;
}

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
    const sent = Promise.withResolvers<void>();
    const inFlight = sentCall(rt, "other", { duty: d(0.9) }, sent.resolve);
    // The call is on the wire (for SLOW_MS) before the latch: written to the provider.
    await sent.promise;

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

Deno.test("CallRouter.drainFrom is bounded: it reports false while a call is still on the wire", async () => {
  const rt = await startRuntime(testConfig({
    providers: [plantProvider("other", { latencyMs: SLOW_MS })],
  }));
  try {
    await rt.modes.request("MANUAL");
    assert.equal(await rt.router.drainFrom("other")(10), true, "idle provider drains at once");
    const sent = Promise.withResolvers<void>();
    const inFlight = sentCall(rt, "other", { duty: d(0.5) }, sent.resolve);
    await sent.promise; // written to the provider: it answers SLOW_MS after arrival
    // False: the bound ended the wait (the call's end would have made it true).
    assert.equal(await rt.router.drainFrom("other")(100), false);
    assert.equal(await rt.router.drainFrom("other")(SLOW_MS + 2000), true);
    await inFlight;
    // A timed-out barrier left nothing behind: the next call goes through at once.
    await manualCall(rt, "other", "plant0", 2, { duty: d(0.1) });
  } finally {
    await rt.stop();
  }
});
