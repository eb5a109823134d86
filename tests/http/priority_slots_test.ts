/**
 * The e-stop is never refused for capacity: with every `http.thread_pool_size` slot held by slow
 * request bodies and by a call to a hung provider, POST /v0/estop, its clear and GET
 * /v0/runtime/status still answer.
 */
import assert from "node:assert/strict";
import { PRIORITY_REQUEST_SLOTS } from "../../src/http/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { browserLike, rawRequest } from "./raw_http.ts";

const encoder = new TextEncoder();

Deno.test("POST /v0/estop answers 200 while slow bodies and a hung provider hold every request slot", async () => {
  const fx = await startHttpFixture({
    config: {
      providers: [simProvider("sim0", { timeoutMs: 3000, restart: false })],
      pollingIntervalMs: 5000,
      http: { threadPoolSize: 3 },
    },
  });
  const { port } = await fx.serve();
  const slow: Deno.Conn[] = [];
  let hungCall: Promise<unknown> | null = null;
  try {
    assert.equal((await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } })).status, 200);
    // Slots 1 and 2: bodies that never finish arriving, over real sockets.
    for (let i = 0; i < 2; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      slow.push(conn);
      await conn.write(encoder.encode(
        `POST /v0/mode HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
          `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"mode":`,
      ));
    }
    await waitFor("2 requests in flight", () => fx.api.inFlight === 2);
    // chaos_control hang: the provider answers this call, then nothing for 2 s.
    const hang = await fx.request("POST", "/v0/call", {
      body: {
        provider_id: "sim0",
        device_id: "chaos_control",
        function_id: 7,
        args: { duration_ms: { type: "int64", int64: 2000 } },
      },
    });
    assert.equal(hang.status, 200, hang.text);
    // Slot 3: a call that waits on the hung provider.
    hungCall = fx.request("POST", "/v0/call", {
      body: {
        provider_id: "sim0",
        device_id: "relayio0",
        function_id: 1,
        args: { enabled: { type: "bool", bool: true } },
      },
    });
    await waitFor("3 requests in flight", () => fx.api.inFlight === 3);
    const busy = await fx.request("GET", "/v0/devices");
    assert.equal(busy.status, 503, "every ordinary slot is taken");

    const estop = await rawRequest(port, browserLike(port, "POST", "/v0/estop"));
    assert.equal(estop.status, 200, estop.body);
    assert.equal(estop.json.latched, true);
    const status = await rawRequest(port, browserLike(port, "GET", "/v0/runtime/status"));
    assert.equal(status.status, 200, status.body);
    assert.equal(status.json.estop.latched, true);
    const clear = await rawRequest(port, browserLike(port, "POST", "/v0/estop/clear"));
    assert.equal(clear.status, 200, clear.body);
    assert.equal(fx.runtime.estop.status().latched, false);
    // The slow bodies still hold their slots. (The call to the hung provider may have finished:
    // the e-stop drains in-flight calls, bounded by timeout_ms + 1 s, before it answers.)
    assert.ok(fx.api.inFlight >= 2, "the ordinary requests are still held");
    assert.deepEqual(estop.json.drain, { complete: true, pending_providers: [] });
  } finally {
    for (const c of slow) c.close();
    await hungCall;
    await fx.close();
  }
});

Deno.test("HttpApi bounds the priority routes by PRIORITY_REQUEST_SLOTS of their own", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { threadPoolSize: 1 } },
    api: { priorityRequestSlots: 1 },
  });
  try {
    assert.equal(PRIORITY_REQUEST_SLOTS, 16);
    // One e-stop whose optional body trickles in holds the only priority slot.
    let body!: ReadableStreamDefaultController<Uint8Array>;
    const stream = new ReadableStream<Uint8Array>({ start: (c) => (body = c) });
    const first = fx.api.handle(
      new Request("http://localhost/v0/estop", { method: "POST", body: stream }),
      { remoteAddr: "127.0.0.1" },
    );
    const busy = await fx.request("GET", "/v0/runtime/status");
    assert.equal(busy.status, 503);
    assert.match(busy.json.status.message, /e-stop\/status requests in progress/);
    // The ordinary slot is untouched.
    assert.equal((await fx.request("GET", "/v0/devices")).status, 200);
    body.close();
    assert.equal((await first).status, 200);
    assert.equal((await fx.request("GET", "/v0/runtime/status")).status, 200);
  } finally {
    await fx.close();
  }
});
