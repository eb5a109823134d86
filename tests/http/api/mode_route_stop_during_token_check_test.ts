/**
 * An arming request sent before a stop is never carried out after it (docs/safety.md, section 4):
 * POST /v0/mode MANUAL takes turns between its body's arrival and its effect (the token check
 * asked again before the transition, `stillAdmitted`, digests the presented token off the event
 * loop's thread); a FAULT entered in one of them (an alarm, a device loss, another console) must
 * hold, and the request is refused 409 (`refused_by: stopped` in the audit trail), as a clear and
 * a call are. The FAULT is made to fall exactly in that turn: the request's `authorization` header,
 * read again by the token check once the body is in, enters FAULT -- a race no socket can time
 * deterministically. The simulated provider runs as a child process.
 */
import assert from "node:assert/strict";
import { assertApiAnswer } from "../../helpers/openapi_check.ts";
import { startHttpFixture } from "../../helpers/runtime_fixture.ts";

/**
 * POST /v0/mode `mode` with a bearer token, whose `authorization` header, read once its body has
 * been read to its end, runs `during` first (the turn of the token check before the transition).
 */
function modeRacing(mode: string, during: () => void): Request {
  let bodyDone = false;
  let fired = false;
  const text = new TextEncoder().encode(JSON.stringify({ mode }));
  let sent = false;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (!sent) {
        sent = true;
        controller.enqueue(text);
        return;
      }
      bodyDone = true;
      controller.close();
    },
  });
  const headers = new Headers({
    "content-type": "application/json",
    authorization: "Bearer some-token",
  });
  const racing = new Proxy(headers, {
    get(target, prop) {
      if (prop === "get") {
        return (name: string) => {
          if (name.toLowerCase() === "authorization" && bodyDone && !fired) {
            fired = true;
            during();
          }
          return target.get(name);
        };
      }
      const v = Reflect.get(target, prop, target);
      return typeof v === "function" ? v.bind(target) : v;
    },
  });
  class RacingRequest extends Request {
    override get headers(): Headers {
      return racing;
    }
  }
  return new RacingRequest("http://localhost/v0/mode", { method: "POST", body, headers });
}

Deno.test("POST /v0/mode MANUAL sent before a FAULT entered during its token check is refused 409 and the mode stays FAULT", async () => {
  const fx = await startHttpFixture({ config: { pollingIntervalMs: 200 } });
  try {
    assert.equal(fx.runtime.modes.current(), "IDLE");
    let fault: Promise<unknown> | null = null;
    const res = await fx.api.handle(
      modeRacing("MANUAL", () => {
        // Committed synchronously: the runtime is in FAULT from here on.
        fault = fx.runtime.modes.request("FAULT");
        assert.equal(fx.runtime.modes.current(), "FAULT");
      }),
      { remoteAddr: "127.0.0.1" },
    );
    assert.ok(fault !== null, "the token check read the header once the body was in");
    await fault;
    const text = await res.text();
    // Before the fix: 200 {"mode":"MANUAL"} -- armed by a request sent before the FAULT.
    assert.equal(res.status, 409, text);
    assertApiAnswer({
      method: "POST",
      path: "/v0/mode",
      status: res.status,
      contentType: res.headers.get("content-type"),
      body: text,
    });
    assert.match(text, /POST \/v0\/mode/);
    assert.equal(fx.runtime.modes.current(), "FAULT", "the later FAULT holds");
    const audit = await fx.request("GET", "/v0/audit");
    assert.equal(audit.status, 200, audit.text);
    assert.ok(
      audit.json.entries.some((e: Record<string, unknown>) =>
        e.action === "mode" && e.function === "MANUAL" && e.outcome === "refused" &&
        e.refused_by === "stopped"
      ),
      audit.text,
    );
    // A request sent after that FAULT re-arms, as always.
    const again = await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
    assert.equal(again.status, 200, again.text);
    assert.equal(fx.runtime.modes.current(), "MANUAL");
  } finally {
    await fx.close();
  }
});
