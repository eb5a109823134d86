/**
 * A clear never releases a stop that latched after the clear was sent. POST /v0/estop/clear takes
 * turns between its arrival and its effect (the token check, the body it discards): an alarm's
 * e-stop latching in one of them must hold, and the clear is refused 409 (`refused_by: stopped`
 * in the audit trail). The latch is made to fall exactly in that turn: the clear's body is a
 * stream whose cancel (the handler discarding it) triggers the e-stop -- a race no socket can
 * time deterministically. The simulated provider runs as a child process.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { assertApiAnswer } from "../helpers/openapi_check.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

/** A clear whose body, when the handler discards it, lets `during` run first (the race's turn). */
function clearRacing(during: () => void): Request {
  const body = new ReadableStream<Uint8Array>({
    cancel() {
      during();
    },
  });
  return new Request("http://localhost/v0/estop/clear", {
    method: "POST",
    body,
    headers: { "content-type": "application/json" },
  });
}

Deno.test("a clear sent before an e-stop latched is refused and the latch holds", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 200 } });
  try {
    // The clear is sent while nothing is latched (an operator's second click); a stop comes
    // before it takes effect.
    let stop: Promise<unknown> | null = null;
    const res = await fx.api.handle(
      clearRacing(() => {
        stop = fx.runtime.estop.trigger("alarm while the clear was on its way");
      }),
      { remoteAddr: "127.0.0.1" },
    );
    assert.ok(stop !== null, "the handler discarded the clear's body (the race's turn ran)");
    await stop;
    const text = await res.text();
    assert.equal(res.status, 409, text);
    // As the API document has it (its status and body).
    assertApiAnswer({
      method: "POST",
      path: "/v0/estop/clear",
      status: res.status,
      contentType: res.headers.get("content-type"),
      body: text,
    });
    assert.match(text, /FAILED_PRECONDITION/);
    assert.match(text, /POST \/v0\/estop\/clear/);
    assert.equal(fx.runtime.estop.status().latched, true, "the later stop still holds");
    const audit = await fx.request("GET", "/v0/audit");
    assert.equal(audit.status, 200, audit.text);
    assert.ok(
      audit.json.entries.some((e: { action: string; outcome: string; refused_by?: string }) =>
        e.action === "estop_clear" && e.outcome === "refused" && e.refused_by === "stopped"
      ),
      audit.text,
    );
    // A clear sent after that stop releases it, as always.
    const again = await fx.request("POST", "/v0/estop/clear");
    assert.equal(again.status, 200, again.text);
    await waitFor("released", () => fx.runtime.estop.status().latched === false);
  } finally {
    await fx.close();
  }
});

Deno.test("a clear with no stop in its way releases the latch (the refusal is for a later stop only)", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 200 } });
  try {
    await fx.runtime.estop.trigger("before the clear was sent");
    const res = await fx.api.handle(clearRacing(() => {}), { remoteAddr: "127.0.0.1" });
    assert.equal(res.status, 200, await res.text());
    assert.equal(fx.runtime.estop.status().latched, false);
  } finally {
    await fx.close();
  }
});
