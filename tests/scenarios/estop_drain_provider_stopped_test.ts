/**
 * A provider stopped (a reload, a shutdown: ProviderHost.stop) while it holds a call keeps it:
 * closing its session ends the session at once, but the provider reads on and may carry the call
 * out within its termination budget (src/adpp/client.ts #readLoop). The e-stop's drain therefore
 * counts such a call in flight until the provider's process has exited, not until its session was
 * closed (docs/safety.md, step 2): a call still waiting for its answer at the stop as much as one
 * that had timed out at the runtime (a late call).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { inertSim } from "../safety/_fixture.ts";
import { callLate, hangSim0, jsonPoster, MOTOR1_HALF_DUTY } from "./_hung_sim.ts";

/** The budget the provider is stopped with: it exits on its own long before (stdin closed). */
const STOP_BUDGET_MS = 20_000;

/**
 * Runs: the sim hangs `hangMs`, a call is sent while it hangs, the e-stop is triggered while the
 * call is at the provider, and the provider is stopped (`late`: once the call timed out at the
 * runtime, else at once; `stopFirst`: before the e-stop, which then finds the provider's session
 * being terminated). Returns the e-stop's answer and whether the provider's process had exited
 * when it came.
 */
async function estopThenStop(
  o: { callTimeoutMs: number; hangMs: number; late: boolean; stopFirst?: boolean },
) {
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim("sim0", { restart: false, timeoutMs: o.callTimeoutMs })],
      // No poll while the provider hangs: the one request on the wire is then the call.
      pollingIntervalMs: 60_000,
      // Rung "none", nothing to read back: the e-stop's answer waits for the drain alone.
      safety: {},
    },
  });
  const server = await fx.serve();
  const base = `http://127.0.0.1:${server.port}`;
  const post = jsonPoster(base);
  try {
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    await hangSim0(post, o.hangMs);
    const host = fx.runtime.registry.host("sim0")!;
    const session = host.session!;

    const callAnswer = post("/v0/call", MOTOR1_HALF_DUTY);
    await waitFor("the call on the wire", () => session.inFlight > 0 ? true : null);
    let stopped: Promise<void> | null = o.stopFirst ? host.stop(STOP_BUDGET_MS) : null;
    const stopAnswer = post("/v0/estop", { reason: "call at the provider" });
    if (o.late) {
      const call = await callAnswer;
      assert.equal(call.status, 504, `timed out at the runtime: ${JSON.stringify(call.json)}`);
      // Still at the provider when its session is closed (the provider has not read on yet).
      assert.equal(
        await callLate(session),
        true,
        "the timed-out call is late when the provider is stopped",
      );
    } else if (!o.stopFirst) {
      // Latched, so the drain began (its mark taken on the live session, src/safety/estop.ts).
      await waitFor("the e-stop latched", () => fx.runtime.modes.current() === "FAULT" || null);
      assert.equal(
        session.inFlight,
        1,
        "the call waits for its answer when the provider is stopped",
      );
    }
    stopped ??= host.stop(STOP_BUDGET_MS);
    if (!o.late) {
      const call = await callAnswer;
      assert.equal(call.status, 503, `failed by the session's end: ${JSON.stringify(call.json)}`);
    }
    const stop = await stopAnswer;
    const exited = session.exitCode !== null;
    assert.equal(stop.status, 200, JSON.stringify(stop.json));
    await stopped;
    return { stop: stop.json, exited };
  } finally {
    await fx.close();
  }
}

Deno.test("POST /v0/estop waits for a call its provider held when it was stopped until the provider's process has exited: drain complete", async () => {
  // The provider reads on 1.5 s after the call was sent, carries it out, and exits (stdin closed).
  const { stop, exited } = await estopThenStop({
    callTimeoutMs: 5000,
    hangMs: 1500,
    late: false,
  });
  assert.ok(exited, "the e-stop answered only once the provider that held the call had exited");
  assert.deepEqual(stop.drain, { complete: true, pending_providers: [] });
});

Deno.test("POST /v0/estop waits for a late call (timed out at the runtime) of a provider stopped before it answered until its process has exited: drain complete", async () => {
  // The call times out after 1 s; the provider is stopped then, reads on at 1.6 s and exits,
  // within the drain's bound (its timeout_ms + 1 s from the e-stop).
  const { stop, exited } = await estopThenStop({
    callTimeoutMs: 1000,
    hangMs: 1600,
    late: true,
  });
  assert.ok(exited, "the e-stop answered only once the provider that held the call had exited");
  assert.deepEqual(stop.drain, { complete: true, pending_providers: [] });
});

Deno.test("POST /v0/estop after its provider began to stop waits for the call it held until the provider's process has exited: drain complete", async () => {
  const { stop, exited } = await estopThenStop({
    callTimeoutMs: 5000,
    hangMs: 1500,
    late: false,
    stopFirst: true,
  });
  assert.ok(exited, "the e-stop answered only once the provider that held the call had exited");
  assert.deepEqual(stop.drain, { complete: true, pending_providers: [] });
});
