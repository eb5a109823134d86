/**
 * A browser page of another origin (the anolis workbench, with its CORS grant) sends
 * POST /v0/estop as JSON, so the browser first sends a preflight (OPTIONS). The e-stop has
 * request slots of its own (PRIORITY_REQUEST_SLOTS) so that it is never refused for capacity; its
 * preflight must have them too, or the browser never sends the stop (docs/http-api.md
 * "Concurrency bound").
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

const ORIGIN = "http://localhost:3000";

Deno.test("the preflight of POST /v0/estop is answered while slow bodies hold every request slot", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { threadPoolSize: 1, corsAllowedOrigins: [ORIGIN] } },
  });
  const { port } = await fx.serve();
  const slow = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    // The only slot: a body that never finishes arriving.
    await slow.write(new TextEncoder().encode(
      `POST /v0/mode HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"mode":`,
    ));
    await waitFor("the slot taken", () => fx.api.inFlight === 1);
    assert.equal((await fx.request("GET", "/v0/devices")).status, 503, "every slot is taken");
    for (const path of ["/v0/estop", "/v0/estop/clear"]) {
      const pre = await fx.request("OPTIONS", path, {
        headers: {
          origin: ORIGIN,
          "access-control-request-method": "POST",
          "access-control-request-headers": "content-type",
        },
      });
      assert.equal(pre.status, 204, `${path}: ${pre.text}`);
      assert.equal(pre.headers.get("access-control-allow-origin"), ORIGIN);
    }
  } finally {
    slow.close();
    await fx.close();
  }
});
