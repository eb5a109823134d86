/**
 * A call in flight to a hung simulated provider: the shared parts of the scenarios that hang the
 * sim (its chaos_control `hang`), send a call while it hangs and act meanwhile (an e-stop).
 */
import assert from "node:assert/strict";
import type { ProviderSession } from "../../src/providers/mod.ts";

/** A JSON POST to the runtime at `base`: its status and parsed answer (as fetch parses it). */
// deno-lint-ignore no-explicit-any
export type JsonPost = (path: string, body: unknown) => Promise<{ status: number; json: any }>;

/** JSON POSTs to the runtime served at `base` (`http://127.0.0.1:<port>`). */
export function jsonPoster(base: string): JsonPost {
  return async (path, body) => {
    const r = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    return { status: r.status, json: await r.json() };
  };
}

/** Hangs sim0 for `ms` (its chaos_control function 7, answered before it hangs). */
export async function hangSim0(post: JsonPost, ms: number): Promise<void> {
  const hang = await post("/v0/call", {
    provider_id: "sim0",
    device_id: "chaos_control",
    function_id: 7,
    args: { duration_ms: { type: "int64", int64: ms } },
  });
  assert.equal(hang.status, 200, JSON.stringify(hang.json));
}

/** `POST /v0/call` body: sim0's motor 1 to duty 0.5 (set_motor_duty, function 10). */
export const MOTOR1_HALF_DUTY = {
  provider_id: "sim0",
  device_id: "motorctl0",
  function_id: 10,
  args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.5 } },
} as const;

/**
 * Whether a call sent on `session` so far is late (timed out at the runtime, not answered since):
 * its late-call wait, asked with its bound already out, says false at once while one is.
 */
export async function callLate(session: ProviderSession): Promise<boolean> {
  return !await session.lateCallsWait()(AbortSignal.abort());
}
