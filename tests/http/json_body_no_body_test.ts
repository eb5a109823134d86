/**
 * declaresNoBody and readJsonBody: a request without a body (`Content-Length: 0`) is read as none
 * at once, with no read timer; one that may carry a body (chunked, HTTP/2 without
 * content-length) is read. An HTTP/1.1 request with neither Content-Length nor Transfer-Encoding
 * (RFC 9112 section 6.3: no body) is one the e-stop takes as bodiless (declaresNoBody), but
 * readJsonBody reads it under its timer (it ends at once): an HTTP/2 request may write a literal
 * `host` header too, and Deno does not tell the two apart (h2_host_header_body_test.ts).
 */
import assert from "node:assert/strict";
import type { TimerId } from "../../src/common/mod.ts";
import { declaresNoBody, readJsonBody } from "../../src/http/json_body.ts";

/** A POST as Deno.serve hands it over: always a body stream (`text`, then its end). */
function post(headers: Record<string, string>, text = ""): Request {
  return new Request("http://127.0.0.1:8080/v0/estop", {
    method: "POST",
    headers,
    body: new ReadableStream<Uint8Array>({
      start(c) {
        if (text !== "") c.enqueue(new TextEncoder().encode(text));
        c.close();
      },
    }),
  });
}

const CASES: { what: string; headers: Record<string, string>; none: boolean; read?: true }[] = [
  {
    what: "HTTP/1.1, neither header (curl -X POST)",
    headers: { host: "h" },
    none: true,
    read: true,
  },
  { what: "Content-Length: 0", headers: { host: "h", "content-length": "0" }, none: true },
  { what: "Content-Length: 00", headers: { host: "h", "content-length": "00" }, none: true },
  { what: "Content-Length: 14", headers: { host: "h", "content-length": "14" }, none: false },
  { what: "HTTP/1.1 chunked", headers: { host: "h", "transfer-encoding": "chunked" }, none: false },
  { what: "HTTP/2, no content-length (no Host)", headers: {}, none: false },
  { what: "HTTP/2, content-length 0", headers: { "content-length": "0" }, none: true },
];

Deno.test("declaresNoBody: HTTP/1.1 without Content-Length and Transfer-Encoding has no body; chunked and HTTP/2 without a length may", () => {
  for (const c of CASES) assert.equal(declaresNoBody(post(c.headers)), c.none, c.what);
  assert.equal(declaresNoBody(new Request("http://h/", { method: "POST" })), true, "body null");
});

Deno.test("readJsonBody reads a request without a body as none with no read timer; one that may carry a body is read under its timer", async () => {
  for (const c of CASES) {
    let timers = 0;
    const clock = {
      setTimer: (_fn: () => void, _ms: number): TimerId => (timers++, 0 as unknown as TimerId),
      clearTimer: (_id: TimerId) => {},
    };
    const req = post(c.headers, c.none ? "" : '{"reason":"r"}');
    const body = await readJsonBody(req, { maxBytes: 1024, timeoutMs: 1000, clock });
    assert.deepEqual(body, c.none ? undefined : { reason: "r" }, c.what);
    assert.equal(timers, c.none && c.read !== true ? 0 : 1, `${c.what}: read timers`);
    assert.equal(req.bodyUsed, true, `${c.what}: read or released, not left unread`);
  }
});
