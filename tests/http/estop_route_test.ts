/**
 * POST /v0/estop latches before its optional body has arrived: a client that sends the headers
 * and then trickles (or never finishes) its `{"reason": ...}` body cannot delay the stop.
 */
import assert from "node:assert/strict";
import { ESTOP_REASON_READ_TIMEOUT_MS } from "../../src/http/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

const encoder = new TextEncoder();

Deno.test("POST /v0/estop latches at once although its body never finishes arriving", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 5000 } });
  const { port } = await fx.serve();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const t0 = performance.now();
    await conn.write(encoder.encode(
      `POST /v0/estop HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"reason":`,
    ));
    await waitFor("latched", () => fx.runtime.estop.status().latched);
    const latchedAfter = performance.now() - t0;
    assert.ok(
      latchedAfter < ESTOP_REASON_READ_TIMEOUT_MS / 2,
      `latched ${Math.round(latchedAfter)} ms after the headers`,
    );
    assert.equal(fx.runtime.modes.current(), "FAULT");
    // The answer still comes, once the bounded wait for the reason is over.
    const buf = new Uint8Array(4096);
    const n = await conn.read(buf);
    assert.match(new TextDecoder().decode(buf.subarray(0, n ?? 0)), /^HTTP\/1\.1 200/);
  } finally {
    conn.close();
    await fx.close();
  }
});
