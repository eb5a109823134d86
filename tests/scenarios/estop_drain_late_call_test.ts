/**
 * A call that timed out at the runtime (DEADLINE_EXCEEDED) while its provider was hung is still
 * at the provider, which carries it out once it reads on: the e-stop's drain counts it in flight
 * until the provider answers it (docs/safety.md, step 2). Answered within the drain's bound (the
 * provider's timeout_ms + 1 s), the answer waits for it and says `complete`; answered after, the
 * drain is incomplete and names the provider.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { inertSim } from "../safety/_fixture.ts";
import { callLate, hangSim0, jsonPoster, MOTOR1_HALF_DUTY } from "./_hung_sim.ts";

/** The provider's `timeout_ms`: the drain's bound is this + DRAIN_MARGIN_MS (1 s). */
const CALL_TIMEOUT_MS = 1000;

/**
 * Runs: the sim hangs `hangMs`, a call is sent while it hangs and times out, the e-stop is
 * triggered while the call is at the provider. Returns the e-stop's answer, whether the provider
 * had answered anything since the hang began when that answer came (lastFrameAtMs moved), and
 * whether the call was still late then (the one call sent since the hang).
 */
async function estopWithLateCall(hangMs: number) {
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim("sim0", { restart: false, timeoutMs: CALL_TIMEOUT_MS })],
      // No poll while the provider hangs: the one request on the wire is then the call.
      pollingIntervalMs: 60_000,
      // Rung "none", nothing to read back: the ladder sends nothing to the hung provider, so the
      // e-stop's answer waits for the drain alone.
      safety: {},
    },
  });
  const server = await fx.serve();
  const base = `http://127.0.0.1:${server.port}`;
  const post = jsonPoster(base);
  try {
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    await hangSim0(post, hangMs);
    const session = fx.runtime.registry.host("sim0")!.session!;
    // The hang's own answer was the last frame: any later one comes after the hang.
    const hungSince = session.lastFrameAtMs;

    const callAnswer = post("/v0/call", MOTOR1_HALF_DUTY);
    await waitFor("the call on the wire", () => session.inFlight > 0 ? true : null);
    const stopAnswer = post("/v0/estop", { reason: "call at the provider" });
    const call = await callAnswer;
    assert.equal(
      call.status,
      504,
      `the call times out at the runtime: ${JSON.stringify(call.json)}`,
    );
    const stop = await stopAnswer;
    const answeredSinceHang = session.lastFrameAtMs > hungSince;
    const late = await callLate(session);
    assert.equal(stop.status, 200, JSON.stringify(stop.json));
    return { stop: stop.json, answeredSinceHang, late };
  } finally {
    await fx.close();
  }
}

Deno.test("POST /v0/estop waits for a call that timed out at the runtime until its provider answers it late, within the bound: drain complete", async () => {
  // Answered 600 ms after the call timed out, within the drain's bound of 2 s.
  const { stop, answeredSinceHang, late } = await estopWithLateCall(CALL_TIMEOUT_MS + 600);
  assert.deepEqual(stop.drain, { complete: true, pending_providers: [] });
  assert.ok(answeredSinceHang, "the answer came after the provider answered the late call");
  assert.equal(late, false, "no call is late any more when the answer comes");
});

Deno.test("POST /v0/estop says drain incomplete, naming the provider, for a call that timed out at the runtime and is still at its provider when the bound ends", async () => {
  // The provider reads on 2 s after the drain's bound ended.
  const { stop, answeredSinceHang, late } = await estopWithLateCall(
    CALL_TIMEOUT_MS + 4000,
  );
  assert.deepEqual(stop.drain, { complete: false, pending_providers: ["sim0"] });
  assert.ok(!answeredSinceHang, "the provider was still hung when the answer came");
  assert.equal(late, true, "the timed-out call is still at the provider");
});
