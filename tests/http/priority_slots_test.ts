/**
 * The e-stop is never refused for capacity: with every `http.thread_pool_size` slot held by slow
 * request bodies and by a call to a hung provider, POST /v0/estop, its clear and GET
 * /v0/runtime/status still answer.
 */
import assert from "node:assert/strict";
import { HttpApi, PRIORITY_REQUEST_SLOTS } from "../../src/http/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { fixtureServices, HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { HEATER_OFF, heldSlowRig } from "../safety/_held_slow_rig.ts";
import { plantProvider } from "../safety/_fixture.ts";
import { browserLike, rawRequest, type RawResponse } from "./raw_http.ts";

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

Deno.test("presses during a slow stop leave the priority slots to status, the clear and a press", async () => {
  // The stop's ladder call to "slow" answers only when the test lets it (held).
  const { r, held } = await heldSlowRig(plantProvider("plant"), [HEATER_OFF]);
  const services = fixtureServices(r.kernel);
  const fx = new HttpFixture(r.kernel, services, new HttpApi(services, { apiToken: "" }));
  const estop = r.kernel.estop;
  const presses: Promise<RawResponse>[] = [];
  try {
    const { port } = await fx.serve();
    const press = () => {
      presses.push(rawRequest(port, browserLike(port, "POST", "/v0/estop")));
    };
    press();
    await waitFor("the first press latched", () => estop.triggerCount === 1);
    // An anxious operator: as many presses as there are priority slots, while the first stop is
    // held. Each latches and joins the one further stop queued behind it.
    for (let i = 1; i < PRIORITY_REQUEST_SLOTS; i++) press();
    await waitFor("every press latched", () => estop.triggerCount === PRIORITY_REQUEST_SLOTS);
    const status = await rawRequest(port, browserLike(port, "GET", "/v0/runtime/status"));
    assert.equal(status.status, 200, status.body);
    assert.equal(status.json.estop.latched, true);
    // One more press latches at once (its answer comes with the stop it joined).
    press();
    await waitFor(
      "the further press latched",
      () => estop.triggerCount === PRIORITY_REQUEST_SLOTS + 1,
    );
    const clear = await rawRequest(port, browserLike(port, "POST", "/v0/estop/clear"));
    assert.equal(clear.status, 200, clear.body);
    assert.equal(estop.status().latched, false);
    // Released while the presses still wait for their stop: the next press latches again.
    press();
    await waitFor("the press after the clear latched", () => estop.latched === true);
    held.resolve();
    for (const res of await Promise.all(presses)) assert.equal(res.status, 200, res.body);
  } finally {
    held.resolve();
    await Promise.allSettled(presses);
    await fx.close();
    await r.stop();
  }
});

Deno.test("a press latches while every priority slot is held, also when released", async () => {
  // The API's body reads time out on this clock, which the test never moves.
  const fx = await startHttpFixture({ start: false, apiClock: new ManualClock() });
  const bodies: ReadableStreamDefaultController<Uint8Array>[] = [];
  const clears: Promise<Response>[] = [];
  try {
    // Clears whose bodies (not declared: HTTP/2 without content-length) never arrive: each holds
    // a priority slot while the content-type check waits for their first bytes.
    for (let i = 0; i < PRIORITY_REQUEST_SLOTS; i++) {
      const body = new ReadableStream<Uint8Array>({ start: (c) => void bodies.push(c) });
      clears.push(fx.api.handle(
        new Request("http://localhost/v0/estop/clear", { method: "POST", body }),
        { remoteAddr: "127.0.0.1" },
      ));
    }
    await waitFor("every priority slot held", () => fx.api.inFlight === PRIORITY_REQUEST_SLOTS);
    assert.equal((await fx.request("GET", "/v0/runtime/status")).status, 503, "no slot is free");
    assert.equal(fx.runtime.estop.status().latched, false);
    const press = await fx.request("POST", "/v0/estop");
    assert.equal(press.status, 200, press.text);
    assert.equal(press.json.latched, true);
    assert.equal(fx.runtime.estop.status().latched, true);
  } finally {
    for (const c of bodies) c.close();
    await Promise.all(clears);
    await fx.close();
  }
});
