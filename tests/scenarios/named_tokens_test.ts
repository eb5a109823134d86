/**
 * Named tokens with roles end to end (docs/http-api.md, "Roles"): the runtime command, with the
 * single binary's permissions, with `http.tokens` (one token from `token_env`, one inline) and
 * RUNTIME_API_TOKEN, over real HTTP. Each token acts with its role, the viewer may stop the machine
 * but not clear the stop, the token_env variable never reaches the provider's environment, and no
 * token appears in the runtime's log at debug level.
 */
import { apiFetch } from "../helpers/openapi_check.ts";
import assert from "node:assert/strict";
import { startRuntimeChildOnFreePort } from "../helpers/runtime_process.ts";
import {
  killLeftovers,
  providerYaml,
  readScriptedLog,
  scriptedCommand,
  waitFor,
  writeRuntimeConfig,
} from "./process_helpers.ts";

const ADMIN = "admin-secret-4711-0c9d8e7f";
const VIEWER = "viewer-secret-2a3b4c5d6e7f";
const OPERATOR = "operator-secret-9f8e7d6c5b4a";

async function request(
  port: number,
  method: string,
  path: string,
  token: string,
  body?: unknown,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const res = await apiFetch(`http://127.0.0.1:${port}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: res.status, json: await res.json() };
}

Deno.test("runtime with http.tokens: each token acts with its role, the token_env variable stays out of the provider and every token out of the log", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-roles-" });
  const log = `${dir}/provider.log`;
  // With the single binary's permissions: it may read RUNTIME_TOKEN_* and nothing else of note.
  const rt = await startRuntimeChildOnFreePort(async (port) => ({
    config: await writeRuntimeConfig(dir, {
      port,
      http: `  auth_enabled: true
  auth_exempt_loopback: false
  tokens:
    - {name: dash, role: viewer, token_env: RUNTIME_TOKEN_PROBE}
    - {name: shift, role: operator, token: ${OPERATOR}}
`,
      providers: providerYaml("probe", scriptedCommand(["--log", log])),
    }),
    port,
    env: { RUNTIME_API_TOKEN: ADMIN, RUNTIME_TOKEN_PROBE: VIEWER, PROBE_MARKER: "m2" },
    args: ["--log-level", "debug"],
    token: ADMIN,
  })).catch(async (err) => {
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
    throw err;
  });
  const port = rt.port;
  try {
    const probe = async (signal: string) => {
      const r = await request(port, "GET", `/v0/state/probe/probe0?signal_id=${signal}`, VIEWER);
      // deno-lint-ignore no-explicit-any
      return r.status === 200 ? ((r.json.values as any[])?.[0]?.value?.string ?? null) : null;
    };
    // The viewer token (from token_env) reads.
    assert.equal(await waitFor("probe state", () => probe("env_probe_marker"), 30000), "m2");
    assert.equal(await probe("env_runtime_token_probe"), "<unset>", "token_env not inherited");
    assert.equal(await probe("env_runtime_api_token"), "<unset>");

    const call = { provider_id: "probe", device_id: "probe0", function_id: 1, args: {} };
    const refused = await request(port, "POST", "/v0/call", VIEWER, call);
    assert.equal(refused.status, 403);
    assert.deepEqual(refused.json, {
      status: {
        code: "PERMISSION_DENIED",
        message: "POST /v0/call: role operator required (token 'dash' has role viewer)",
      },
    });
    // Everyone may stop the machine; the viewer may not clear the stop, the operator may.
    assert.equal((await request(port, "POST", "/v0/estop", VIEWER)).status, 200);
    assert.equal((await request(port, "POST", "/v0/estop/clear", VIEWER)).status, 403);
    assert.equal((await request(port, "POST", "/v0/estop/clear", OPERATOR)).status, 200);
    // The operator changes the mode; RUNTIME_API_TOKEN is still the admin `default`.
    const mode = await request(port, "POST", "/v0/mode", OPERATOR, { mode: "MANUAL" });
    assert.equal(mode.status, 200, JSON.stringify(mode.json));
    assert.equal((await request(port, "POST", "/v0/mode", ADMIN, { mode: "IDLE" })).status, 200);
    assert.equal((await request(port, "GET", "/v0/mode", "not-a-token-000000")).status, 401);

    const code = await rt.stop();
    const stderr = rt.stderr();
    assert.equal(code, 0, stderr);
    assert.match(stderr, /DEBUG .*POST \/v0\/call -> 403/, "requests were logged at debug");
    for (const token of [ADMIN, VIEWER, OPERATOR]) {
      assert.ok(!stderr.includes(token), "no token in the runtime's log");
    }
  } finally {
    await rt.stop();
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
  }
});
