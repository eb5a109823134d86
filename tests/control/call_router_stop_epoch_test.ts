/**
 * A command sent before a stop is never carried out after it, one layer below HTTP: a call admitted
 * to the router (queued behind a slow call on its provider) before the runtime entered FAULT (or
 * IDLE: the operator disarmed), and whose turn comes after the machine was re-armed, is refused at
 * its turn (FAILED_PRECONDITION, audit `refused_by` stopped) whatever asked for it. A real kernel with the simulated provider as a
 * child process; the stop and the re-arm over the HTTP API.
 */
import assert from "node:assert/strict";
import { refusedBeforeSending } from "../../src/control/mod.ts";
import type { TypedValue } from "../../src/common/mod.ts";
import { afterPolls, waitFor } from "../helpers/kernel.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";

const tv = {
  d: (v: number): TypedValue => ({ type: "double", double: v }),
  i: (v: number): TypedValue => ({ type: "int64", int64: v }),
  s: (v: string): TypedValue => ({ type: "string", string: v }),
};

/** How long the simulated motorctl0 sleeps before answering a call (chaos inject_call_latency). */
const LATENCY_MS = 1500;

async function ok(fx: HttpFixture, method: string, path: string, body?: unknown) {
  const res = await fx.request(method, path, body === undefined ? {} : { body });
  assert.equal(res.status, 200, `${method} ${path}: ${res.text}`);
  return res.json;
}

async function motor1Duty(fx: HttpFixture): Promise<number> {
  const state = await ok(fx, "GET", "/v0/state/sim0/motorctl0?signal_id=motor1_duty");
  return state.values[0].value.double;
}

/** set_motor_duty of motor 1 through the router, as a Sparkplug DCMD asks it. */
function dutyCall(
  fx: HttpFixture,
  duty: number,
  o: { onQueued?: () => void; onSent?: () => void } = {},
) {
  return fx.runtime.router.call({
    providerId: "sim0",
    deviceId: "motorctl0",
    functionName: "set_motor_duty",
    args: { motor_index: tv.i(1), duty: tv.d(duty) },
    origin: "manual",
    source: { kind: "sparkplug" },
    onQueued: o.onQueued,
    onSent: o.onSent,
  });
}

/**
 * Runs `stop` (which must leave the machine re-armed in MANUAL) while a set_motor_duty 0.8 waits in
 * the provider's queue behind a slow set_motor_duty 0.4; returns how the queued call settled.
 */
async function queuedAcrossStop(
  fx: HttpFixture,
  stop: () => Promise<void>,
): Promise<{ settled: "sent" | unknown; duty: number }> {
  await ok(fx, "POST", "/v0/mode", { mode: "MANUAL" });
  await ok(fx, "POST", "/v0/call", {
    provider_id: "sim0",
    device_id: "chaos_control",
    function_id: 3, // inject_call_latency
    args: { device_id: tv.s("motorctl0"), latency_ms: tv.i(LATENCY_MS) },
  });
  let slowSettled = false;
  let slowSent = false;
  const slow = dutyCall(fx, 0.4, { onSent: () => slowSent = true }).finally(() =>
    slowSettled = true
  );
  await waitFor("the slow call sent", () => slowSent);
  let queued = false;
  let queuedSettled = false;
  const late = dutyCall(fx, 0.8, { onQueued: () => queued = true }).then(
    () => "sent" as const,
    (err: unknown) => err,
  ).finally(() => queuedSettled = true);
  await waitFor("the second call queued behind the first", () => queued);
  await stop();
  assert.equal(fx.runtime.modes.current(), "MANUAL");
  // The precondition of the case: re-armed while both calls still wait (the first one sleeps
  // LATENCY_MS in the provider, the second one is queued behind it).
  assert.equal(slowSettled, false, "the slow call finished before the re-arm: no race to test");
  assert.equal(queuedSettled, false);
  await slow;
  const settled = await late;
  await ok(fx, "POST", "/v0/call", {
    provider_id: "sim0",
    device_id: "chaos_control",
    function_id: 5, // clear_faults
    args: {},
  });
  await afterPolls(fx.runtime, "sim0/motorctl0", 2);
  return { settled, duty: await motor1Duty(fx) };
}

async function assertStoppedRefusal(
  fx: HttpFixture,
  r: { settled: unknown; duty: number },
): Promise<void> {
  assert.notEqual(r.settled, "sent", "the call queued before the stop was sent after it");
  assert.equal(r.duty, 0.4, "the call queued before the stop moved the motor after it");
  const err = r.settled as { code?: string; message?: string };
  assert.equal(err.code, "FAILED_PRECONDITION", String(err.message));
  assert.match(String(err.message), /sim0\/motorctl0 set_motor_duty: .*stop.*while it was queued/);
  assert.equal(refusedBeforeSending(err), "stopped");
  const audit = await ok(fx, "GET", "/v0/audit?limit=1000");
  const refused = audit.entries.filter((e: Record<string, unknown>) =>
    e.action === "call" && e.outcome === "refused" && e.refused_by === "stopped"
  );
  assert.equal(refused.length, 1, JSON.stringify(audit.entries));
  assert.equal(refused[0].device_handle, "sim0/motorctl0");
  assert.equal(refused[0].origin.kind, "sparkplug");
}

// IDLE, like FAULT, drains no provider's queue: without the disarm counted as a stop, the call
// asked before it would move the motor once the operator re-armed.
for (
  const [mode, before] of [
    ["FAULT", "a FAULT entry"],
    ["IDLE", "the operator disarmed (MANUAL -> IDLE)"],
  ] as const
) {
  Deno.test(`CallRouter refuses a call queued before ${before} whose turn comes after the re-arm`, async () => {
    const fx = await startHttpFixture({ config: { pollingIntervalMs: 100 } });
    try {
      const r = await queuedAcrossStop(fx, async () => {
        await ok(fx, "POST", "/v0/mode", { mode });
        await ok(fx, "POST", "/v0/mode", { mode: "MANUAL" });
      });
      await assertStoppedRefusal(fx, r);
      // A call admitted after the re-arm is carried out.
      await dutyCall(fx, 0.5);
      await waitFor("motor 1 at 0.5", async () => await motor1Duty(fx) === 0.5);
    } finally {
      await fx.close();
    }
  });
}

Deno.test("CallRouter sends a call queued behind a slow call when no stop came in between", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 100 } });
  try {
    const r = await queuedAcrossStop(fx, async () => {
      // No stop: the same re-arm request (MANUAL -> MANUAL) while the calls wait.
      await ok(fx, "POST", "/v0/mode", { mode: "MANUAL" });
    });
    assert.equal(r.settled, "sent", String((r.settled as Error)?.message));
    assert.equal(r.duty, 0.8);
  } finally {
    await fx.close();
  }
});
