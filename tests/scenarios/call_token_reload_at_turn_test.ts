/**
 * A call queued behind a slow call to the same provider, whose token a reload lowers to viewer or
 * removes while it waits (docs/http-api.md, "Roles"): at its turn its admission is asked again, as
 * the gates are; it is answered 403 or 401 as the first check would have, never sent (the motor's
 * duty stays as the slow call set it), and audited as a refused call naming the check. A foreign
 * page's call that only its token let past the origin check, from a loopback-exempt client, is
 * refused at its turn by the origin check (`http.cors_allowed_origins` itself needs a restart,
 * so a token's removal is how a reload takes a page's admission away). The runtime
 * serves real HTTP on loopback (loopback not exempt); the simulated provider runs as a child
 * process and holds every call to its motor controller by its `inject_call_latency`.
 */
import assert from "node:assert/strict";
import type { ApiTokenConfig, Config } from "../../src/config/mod.ts";
import type { CallRequest } from "../../src/control/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { i, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";
import {
  ADMIN,
  fetchAs,
  NIGHT,
  OPERATOR,
  refusedEntries,
  reloadTokens,
  SHIFT,
  tokenHttp,
} from "./_token_reload_rig.ts";

/**
 * How long the sim holds each call to its motor controller: long enough for the queued call and
 * the reload to happen while the first call holds the provider (checked, not assumed), within the
 * provider's timeout_ms.
 */
const LATENCY_MS = 3000;

/** A web page's origin that `http.cors_allowed_origins` does not list. */
const FOREIGN = "http://evil.example";

function config(o: { exemptLoopback?: boolean } = {}): Config {
  return testConfig({
    providers: [inertSim("sim0", { timeoutMs: 10_000 })],
    pollingIntervalMs: 60_000,
    http: tokenHttp(o),
  });
}

/** POST /v0/call setting motor 1's duty, with `token` (from a page of `origin` when given). */
function setDuty(rt: Kernel, token: string, duty: number, origin?: string): Promise<Response> {
  return fetchAs(rt, "/v0/call", token, {
    provider_id: "sim0",
    device_id: "motorctl0",
    function_id: 10,
    args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: duty } },
  }, origin === undefined ? {} : { origin });
}

/**
 * A slow call (admin, duty 0.3) holding sim0, the operator's call (duty 0.7) queued behind it, then
 * a reload to `tokens`: both answers, the duty after both, and the audit entries of refused calls.
 */
async function queuedCallThenReload(
  tokens: readonly ApiTokenConfig[],
  o: { exemptLoopback?: boolean; origin?: string } = {},
) {
  const rt = await startServing(config(o));
  try {
    await rt.modes.request("MANUAL");
    // Which calls have reached sim0's queue (admitted to it, the first one holding it).
    let queued = 0;
    const route = rt.router.call.bind(rt.router);
    rt.router.call = (req: CallRequest) =>
      route({
        ...req,
        onQueued: () => {
          queued++;
          req.onQueued?.();
        },
      });
    await manualCall(rt, "sim0", "chaos_control", 3, {
      device_id: { type: "string", string: "motorctl0" },
      latency_ms: i(LATENCY_MS),
    });
    queued = 0;
    const session = rt.registry.host("sim0")!.session!;
    const slow = setDuty(rt, ADMIN, 0.3);
    await waitFor("the slow call at sim0", () => session.inFlight > 0, 10_000, 0);
    const waiting = setDuty(rt, OPERATOR, 0.7, o.origin);
    await waitFor("the operator's call queued behind it", () => queued === 2, 10_000, 0);
    await reloadTokens(rt, tokens);
    assert.ok(session.inFlight > 0, "the slow call still held sim0 when the reload was done");
    const first = await slow;
    assert.equal(first.status, 200, await first.clone().text());
    await first.body?.cancel();
    const second = await waiting;
    const duty = await readSignal(rt, "sim0", "motorctl0", "motor1_duty");
    const refused = (await refusedEntries(rt, "call")).map((e) => ({
      origin: e.origin.token_name,
      device_handle: e.device_handle,
      function: e.function,
      refused_by: e.refused_by,
      reason: e.reason,
    }));
    return {
      status: second.status,
      challenge: second.headers.get("www-authenticate"),
      body: await second.json(),
      duty,
      refused,
    };
  } finally {
    await rt.stop();
  }
}

Deno.test("POST /v0/call queued behind a slow call whose token a reload lowers to viewer is answered 403 at its turn, never sent, audited as refused by role", async () => {
  const r = await queuedCallThenReload([{ ...SHIFT, role: "viewer" }]);
  assert.equal(r.status, 403, JSON.stringify(r.body));
  assert.deepEqual(r.body, {
    status: {
      code: "PERMISSION_DENIED",
      message: "POST /v0/call: role operator required (token 'shift' has role viewer)",
    },
  });
  assert.equal(r.duty, 0.3, "the queued call was never sent: the slow call's duty stays");
  assert.deepEqual(r.refused, [{
    origin: "shift",
    device_handle: "sim0/motorctl0",
    function: "set_motor_duty",
    refused_by: "role",
    reason: "PERMISSION_DENIED: role operator required (shift has role viewer): the API tokens " +
      "were replaced (configuration reload) while it waited to act (its turn, or its hooks)",
  }]);
});

Deno.test("POST /v0/call queued behind a slow call whose token a reload removes is answered 401 at its turn, never sent, audited as refused by auth", async () => {
  const r = await queuedCallThenReload([]);
  assert.equal(r.status, 401, JSON.stringify(r.body));
  assert.equal(r.challenge, "Bearer");
  assert.equal(r.body.status.code, "UNAUTHENTICATED");
  assert.equal(r.body.status.message, "Missing or invalid bearer token");
  assert.equal(r.duty, 0.3, "the queued call was never sent: the slow call's duty stays");
  assert.deepEqual(r.refused, [{
    origin: "shift",
    device_handle: "sim0/motorctl0",
    function: "set_motor_duty",
    refused_by: "auth",
    reason: "UNAUTHENTICATED: token 'shift' no longer admits: the API tokens were replaced " +
      "(configuration reload) while it waited to act (its turn, or its hooks)",
  }]);
});

Deno.test("POST /v0/call queued behind a slow call through a reload that keeps its token goes out at its turn", async () => {
  const r = await queuedCallThenReload([SHIFT, NIGHT]);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.duty, 0.7, "the queued call was sent after the slow one");
  assert.deepEqual(r.refused, []);
});

Deno.test("POST /v0/call from a foreign page admitted by its token alone, queued behind a slow call, is answered 403 at its turn when a reload removes the token, never sent, audited as refused by origin", async () => {
  // Loopback exempt: without its token the caller still acts (as admin 'local'), but its page's
  // origin is no longer let through by a token: the origin check is what refuses it.
  const r = await queuedCallThenReload([], { exemptLoopback: true, origin: FOREIGN });
  assert.equal(r.status, 403, JSON.stringify(r.body));
  const policy = `Origin not allowed to change state: '${FOREIGN}' (list it in ` +
    "http.cors_allowed_origins, `*` does not count, or send the bearer token)";
  assert.deepEqual(r.body, { status: { code: "PERMISSION_DENIED", message: policy } });
  assert.equal(r.duty, 0.3, "the queued call was never sent: the slow call's duty stays");
  assert.deepEqual(r.refused, [{
    origin: "shift",
    device_handle: "sim0/motorctl0",
    function: "set_motor_duty",
    refused_by: "origin",
    reason: `PERMISSION_DENIED: ${policy}: the API tokens were replaced (configuration reload) ` +
      "while it waited to act (its turn, or its hooks)",
  }]);
});

Deno.test("POST /v0/call from a foreign page queued behind a slow call through a reload that keeps its token goes out at its turn", async () => {
  const r = await queuedCallThenReload([SHIFT], { exemptLoopback: true, origin: FOREIGN });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.duty, 0.7, "the queued call was sent after the slow one");
  assert.deepEqual(r.refused, []);
});
