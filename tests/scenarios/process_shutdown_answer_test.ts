/**
 * SIGTERM while a device call is in flight: the HTTP server shuts down first (the providers stay
 * up until it is down), and a call its provider answers after more than HTTP_SHUTDOWN_DRAIN_MS
 * lost its answer: the connection was dropped at 1 s, so the client could not know whether the
 * call had acted. Its answer is now awaited (HTTP_SHUTDOWN_ANSWER_MS), within the process's
 * shutdown budget (exit 0).
 */
import assert from "node:assert/strict";
import { HTTP_SHUTDOWN_ANSWER_MS, HTTP_SHUTDOWN_DRAIN_MS } from "../../src/host/mod.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { waitFor } from "../helpers/kernel.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import {
  providerYaml,
  startRuntimeOnFreePort,
  within,
  writeRuntimeConfig,
} from "./process_helpers.ts";

/** The provider answers the call this long after it gets it: past the drain bound, within the answer bound. */
const CALL_LATENCY_MS = HTTP_SHUTDOWN_DRAIN_MS + 1000;

Deno.test("SIGTERM while a device call slower than the 1 s drain is in flight: the call is answered, and the runtime exits 0", async () => {
  assert.ok(CALL_LATENCY_MS + 500 < HTTP_SHUTDOWN_ANSWER_MS);
  const dir = await Deno.makeTempDir({ prefix: "runtime-shutdown-answer-" });
  const { port, rt } = await startRuntimeOnFreePort((port) =>
    writeRuntimeConfig(dir, {
      port,
      providers: providerYaml(
        "sim0",
        {
          command: Deno.execPath(),
          args: [
            "run",
            "--quiet",
            "--allow-read",
            "--allow-env",
            SIM_MAIN,
            "--config",
            SIM_INERT_YAML,
          ],
        },
        "    timeout_ms: 5000\n",
      ),
    })
  );
  const base = `http://127.0.0.1:${port}`;
  const post = (path: string, body: unknown) =>
    apiFetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  try {
    await waitFor("sim0 available", async () => {
      const r = await apiFetch(`${base}/v0/devices`);
      return ((await r.json()).devices ?? []).length > 0;
    }, 30_000);
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const inject = await post("/v0/call", {
      provider_id: "sim0",
      device_id: "chaos_control",
      function_id: 3,
      args: {
        device_id: { type: "string", string: "relayio0" },
        latency_ms: { type: "int64", int64: CALL_LATENCY_MS },
      },
    });
    assert.equal(inject.status, 200, await inject.text());
    const call = post("/v0/call", {
      provider_id: "sim0",
      device_id: "relayio0",
      function_id: 1,
      args: { enabled: { type: "bool", bool: true } },
    }).then(async (r) => ({ status: r.status, text: await r.text() }), (e) => ({
      status: 0,
      text: `no answer: ${e}`,
    }));
    // The call is in flight (the scrape itself is one request).
    await waitFor("the call in flight", async () => {
      const m = await (await apiFetch(`${base}/metrics`)).text();
      return Number(/^runtime_http_requests_in_flight (\d+)$/m.exec(m)?.[1] ?? 0) >= 2;
    }, 5000);
    rt.child.kill("SIGTERM");
    const answer = await call;
    assert.equal(answer.status, 200, answer.text);
    assert.equal(JSON.parse(answer.text).status.code, "OK");
    const exit = await within(rt.exit, 20_000);
    if (exit === "timeout") assert.fail("the runtime did not exit");
    assert.equal(exit.code, 0, exit.stderr);
    assert.doesNotMatch(exit.stderr, /still answering/);
  } finally {
    await rt.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});
