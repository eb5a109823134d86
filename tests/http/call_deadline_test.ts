/** POST /v0/call answers 504 when the provider does not reply within its timeout_ms. */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { simProvider } from "../helpers/sim_config.ts";

Deno.test("POST /v0/call answers 504 DEADLINE_EXCEEDED for a call the provider answers too late", async () => {
  const fx = await startHttpFixture({
    // timeout_ms bounds the provider's start-up answers too: 1000 ms, not 300 (ListDevices took
    // longer on a loaded CI machine once); the injected latency is well past it.
    config: { providers: [simProvider("sim0", { timeoutMs: 1000 })], pollingIntervalMs: 1000 },
  });
  try {
    const mode = await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
    assert.equal(mode.status, 200);
    // chaos_control inject_call_latency: every call to relayio0 sleeps 3000 ms first.
    const inject = await fx.request("POST", "/v0/call", {
      body: {
        provider_id: "sim0",
        device_id: "chaos_control",
        function_id: 3,
        args: {
          device_id: { type: "string", string: "relayio0" },
          latency_ms: { type: "int64", int64: 3000 },
        },
      },
    });
    assert.equal(inject.status, 200, inject.text);
    const r = await fx.request("POST", "/v0/call", {
      body: {
        provider_id: "sim0",
        device_id: "relayio0",
        function_id: 1,
        args: { enabled: { type: "bool", bool: true } },
      },
    });
    assert.equal(r.status, 504, r.text);
    assert.equal(r.json.status.code, "DEADLINE_EXCEEDED");
  } finally {
    await fx.close();
  }
});
