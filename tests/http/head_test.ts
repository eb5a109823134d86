/** HEAD works on every GET route (RFC 9110 §9.3.2): GET's status and headers, no body. */
import assert from "node:assert/strict";
import { ROUTES } from "../../src/http/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { browserLike, rawRequest } from "./raw_http.ts";

/** Real values for the path parameters of the GET routes. */
const PARAMS: Record<string, string> = {
  provider_id: "sim0",
  device_id: "tempctl0",
  run_id: "nope",
  alarm_id: "nope",
};

Deno.test("HttpApi answers HEAD on every GET route with the GET status and headers and no body", async () => {
  const fx = await startHttpFixture();
  try {
    const gets = ROUTES.filter((r) => r.method === "GET" && r.segments.join("/") !== "v0/events");
    assert.ok(gets.length >= 14);
    for (const r of gets) {
      const path = "/" + r.segments.map((s) => s.startsWith(":") ? PARAMS[s.slice(1)] : s)
        .join("/");
      // Values may move between a GET and a HEAD (a poll lands in between), the shape not: the
      // HEAD's length must match a GET's within a few bytes in one of a few tries.
      const lengths: string[] = [];
      for (let attempt = 0; attempt < 5; attempt++) {
        const get = await fx.api.handle(new Request(`http://localhost${path}`), {
          remoteAddr: "127.0.0.1",
        });
        const getBody = new Uint8Array(await get.arrayBuffer());
        const head = await fx.api.handle(
          new Request(`http://localhost${path}`, { method: "HEAD" }),
          { remoteAddr: "127.0.0.1" },
        );
        assert.equal(head.status, get.status, path);
        assert.equal(head.body, null, path);
        assert.equal(head.headers.get("content-type"), get.headers.get("content-type"), path);
        const length = Number(head.headers.get("content-length"));
        lengths.push(`${length} vs ${getBody.byteLength}`);
        if (Math.abs(length - getBody.byteLength) <= 16) break;
        assert.ok(attempt < 4, `${path}: HEAD content-length vs GET body: ${lengths.join(", ")}`);
      }
    }
    // A static answer has exactly GET's length.
    const get = await fx.request("GET", "/v0/devices");
    const head = await fx.api.handle(
      new Request("http://localhost/v0/devices", { method: "HEAD" }),
      {
        remoteAddr: "127.0.0.1",
      },
    );
    assert.equal(
      head.headers.get("content-length"),
      String(new TextEncoder().encode(get.text).length),
    );
  } finally {
    await fx.close();
  }
});

Deno.test("HEAD /v0/events answers the stream's headers without opening a stream", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const head = await fx.api.handle(
      new Request("http://localhost/v0/events", { method: "HEAD" }),
      {
        remoteAddr: "127.0.0.1",
      },
    );
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-type"), "text/event-stream");
    assert.equal(head.body, null);
    assert.equal(fx.api.sseClientCount, 0);
  } finally {
    await fx.close();
  }
});

Deno.test("HEAD /v0/runtime/status over a socket: 200, JSON headers, no body; unknown routes 404", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const { port } = await fx.serve();
    const head = await rawRequest(port, browserLike(port, "HEAD", "/v0/runtime/status"));
    assert.equal(head.status, 200);
    assert.equal(head.headers.get("content-type"), "application/json");
    assert.ok(Number(head.headers.get("content-length")) > 0);
    assert.equal(head.body, "");
    const missing = await rawRequest(port, browserLike(port, "HEAD", "/v0/nope"));
    assert.equal(missing.status, 404);
    assert.equal(missing.body, "");
  } finally {
    await fx.close();
  }
});
