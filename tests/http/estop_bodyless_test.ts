/**
 * POST /v0/estop over a real socket: a request that declares no body (`Content-Length: 0`, what
 * fetch and most clients send for a POST without one) triggers with no reason, not with a reason
 * "still arriving" (Estop.onReasonArriving): under Deno.serve such a request still has a body
 * stream, of 0 bytes, so `req.body === null` alone never said "no body" there. A request with a
 * body still hands its reason over as it arrives.
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

Deno.test("POST /v0/estop with Content-Length: 0 over a socket triggers with no reason arriving; one with a body hands its reason over", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 5000 } });
  const arriving: Promise<string | null>[] = [];
  fx.runtime.estop.onReasonArriving((reason) => arriving.push(reason));
  const { port } = await fx.serve();
  const url = `http://127.0.0.1:${port}/v0/estop`;
  try {
    const empty = await fetch(url, { method: "POST" });
    assert.equal(empty.status, 200);
    await empty.body?.cancel();
    assert.equal(fx.runtime.estop.status().latched, true);
    assert.equal(arriving.length, 0, "no body: no reason arriving");

    const withReason = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reason: "guard door" }),
    });
    assert.equal(withReason.status, 200);
    await withReason.body?.cancel();
    assert.equal(arriving.length, 1, "a body: its reason arriving");
    assert.equal(await arriving[0], "guard door");
  } finally {
    await fx.close();
  }
});
