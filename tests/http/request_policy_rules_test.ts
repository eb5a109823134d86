/**
 * The request policy's rules one by one (RequestPolicy called directly with real Request objects):
 * which hosts a loopback-bound API answers for, which origins may change state, which bodies
 * count as JSON. request_policy_test.ts drives the same rules over a real socket.
 */
import assert from "node:assert/strict";
import {
  isJsonContentType,
  MAX_QUOTED_HEADER_CHARS,
  type PolicyRefusal,
  RequestPolicy,
} from "../../src/http/mod.ts";
import { testConfig, type TestConfigOptions } from "../helpers/sim_config.ts";

function policy(http: TestConfigOptions["http"] = {}): RequestPolicy {
  return new RequestPolicy(testConfig({ http }).http);
}

/** A request to `target` with exactly these headers (no Host unless given, as HTTP/1.0). */
function request(
  method: string,
  target: string,
  headers: Record<string, string> = {},
): { req: Request; url: URL } {
  const req = new Request(target, { method, headers });
  return { req, url: new URL(target) };
}

function checkHost(
  p: RequestPolicy,
  host: string | null,
  target = "http://127.0.0.1:8080/v0/mode",
) {
  const { req, url } = request("GET", target, host === null ? {} : { host });
  return p.checkHost(req, url);
}

function assertRefused(r: PolicyRefusal | null, status: number, mentions: string[]): void {
  assert.ok(r !== null, "expected a refusal");
  assert.equal(r.httpStatus, status);
  assert.equal(r.code, status === 415 ? "INVALID_ARGUMENT" : "PERMISSION_DENIED");
  for (const m of mentions) assert.ok(r.message.includes(m), `${m} not in: ${r.message}`);
}

Deno.test("RequestPolicy.changesState is false for GET, HEAD and OPTIONS only", () => {
  for (const m of ["GET", "HEAD", "OPTIONS"]) assert.equal(RequestPolicy.changesState(m), false, m);
  for (const m of ["POST", "PUT", "PATCH", "DELETE"]) {
    assert.equal(RequestPolicy.changesState(m), true, m);
  }
});

Deno.test("RequestPolicy.checkHost trusts 127.0.0.0/8 as addresses, not as text", () => {
  const p = policy();
  for (const host of ["127.0.0.1", "127.100.200.254:8080", "127.255.255.255", "localhost:1"]) {
    assert.equal(checkHost(p, host, `http://${host}/v0/mode`), null, host);
  }
  // Not an address (an octet past 255), or malformed: refused, never an exception.
  for (
    const host of [
      "127.0.0.256",
      "evil.example:localhost",
      "localhost:80@evil.example",
      "[::1]evil.example",
      "localhost:1:2",
      "localhost:123456",
    ]
  ) {
    assertRefused(checkHost(p, host), 403, [`'${host}'`]);
  }
});

Deno.test("RequestPolicy.checkHost checks both the Host header and the request target", () => {
  const p = policy();
  // Host names another site while the target is loopback.
  assertRefused(checkHost(p, "evil.example", "http://localhost:8080/v0/mode"), 403, [
    "'evil.example'",
  ]);
  // No Host header (HTTP/1.0): the target's authority is judged.
  assert.equal(checkHost(p, null, "http://localhost:8080/v0/mode"), null);
  assertRefused(checkHost(p, null, "http://evil.example:8080/v0/mode"), 403, [
    "'evil.example:8080'",
  ]);
});

Deno.test("RequestPolicy.checkHost names what it answers for and quotes at most MAX_QUOTED_HEADER_CHARS", () => {
  const p = policy();
  assertRefused(checkHost(p, "evil.example"), 403, ["localhost", "[::1]", "http.allowed_hosts"]);
  const exact = `${"a".repeat(MAX_QUOTED_HEADER_CHARS - 4)}.com`;
  assertRefused(checkHost(p, exact), 403, [`'${exact}'`]);
  const longer = `${"a".repeat(MAX_QUOTED_HEADER_CHARS - 3)}.com`;
  const r = checkHost(p, longer);
  assertRefused(r, 403, [`'${longer.slice(0, MAX_QUOTED_HEADER_CHARS)}…'`]);
  assert.equal(r!.message.includes(longer), false);
});

Deno.test("RequestPolicy.checkHost matches http.allowed_hosts by name, and by port when given", () => {
  const p = policy({ allowedHosts: ["rig.local", "panel.local:9000", "[fe80::1]:8080"] });
  for (const host of ["rig.local", "RIG.local:1234", "panel.local:9000", "[fe80::1]:8080"]) {
    assert.equal(checkHost(p, host), null, host);
  }
  for (const host of ["panel.local", "panel.local:9001", "[fe80::1]", "rig.local.evil"]) {
    assertRefused(checkHost(p, host), 403, [`'${host}'`]);
  }
  // Bound elsewhere than loopback, the API answers for any Host.
  assert.equal(checkHost(policy({ bind: "0.0.0.0" }), "evil.example"), null);
});

function post(origin: string | null, host: string | null, target = `http://${host}/v0/mode`) {
  const headers: Record<string, string> = {};
  if (origin !== null) headers.origin = origin;
  if (host !== null) headers.host = host;
  return request("POST", target, headers);
}

Deno.test("RequestPolicy.checkOrigin judges only state-changing requests that carry Origin", () => {
  const p = policy();
  for (const method of ["GET", "HEAD", "OPTIONS"]) {
    const { req, url } = request(method, "http://127.0.0.1:8080/v0/mode", {
      origin: "http://evil.example",
    });
    assert.equal(p.checkOrigin(req, url, false), null, method);
  }
  const none = post(null, "127.0.0.1:8080");
  assert.equal(p.checkOrigin(none.req, none.url, false), null);
  const evil = post("http://evil.example", "127.0.0.1:8080");
  assertRefused(p.checkOrigin(evil.req, evil.url, false), 403, [
    "'http://evil.example'",
    "http.cors_allowed_origins",
  ]);
  assert.equal(p.checkOrigin(evil.req, evil.url, true), null);
});

Deno.test("RequestPolicy.checkOrigin takes the API's own origin from the target when Host is absent", () => {
  const p = policy();
  const { req, url } = post("http://127.0.0.1:8080", null, "http://127.0.0.1:8080/v0/mode");
  assert.equal(p.checkOrigin(req, url, false), null);
});

Deno.test("RequestPolicy.checkOrigin trusts its own origin on an IP address, never on a name", () => {
  const p = policy({ bind: "0.0.0.0", allowInsecureBind: true });
  const check = (host: string, origin: string) => {
    const { req, url } = post(origin, host, "http://127.0.0.1:8080/v0/mode");
    return p.checkOrigin(req, url, false);
  };
  for (
    const [host, origin] of [
      ["192.0.2.10:8080", "http://192.0.2.10:8080"],
      ["10.255.255.255", "http://10.255.255.255"],
      ["[fe80::1]:8080", "http://[fe80::1]:8080"],
      ["[FE80::1]:8080", "http://[fe80::1]:8080"],
    ]
  ) {
    assert.equal(check(host!, origin!), null, host);
  }
  for (
    const [host, origin] of [
      // A DNS name that starts like an address is still a name a rebinding page can use.
      ["1.2.3.4.evil.example", "http://1.2.3.4.evil.example"],
      ["rig.example:8080", "http://rig.example:8080"],
      // A Host with an empty port is not a host:port; its origin would be the bare name.
      ["evil.example:", "http://evil.example"],
      // A Host no URL can hold.
      ["evil example", "http://evil example"],
      ["192.0.2.10:8080", "http://192.0.2.10:8081"],
    ]
  ) {
    assertRefused(check(host!, origin!), 403, [origin!]);
  }
});

Deno.test("RequestPolicy.checkOrigin accepts a listed origin only as a bare scheme://host[:port]", () => {
  const p = policy({ corsAllowedOrigins: ["*", "http://*.lab.local"] });
  const check = (origin: string) => {
    const { req, url } = post(origin, "127.0.0.1:8080");
    return p.checkOrigin(req, url, false);
  };
  assert.equal(check("http://console.lab.local"), null);
  // Matches the glob as text, but is not an origin a browser sends: a path, or not a URL.
  for (const origin of ["http://evil.example/.lab.local", "http://a b.lab.local"]) {
    assertRefused(check(origin), 403, [origin]);
  }
});

/** Body limits whose read timer never fires (the bodies here are all there). */
const LIMITS = {
  maxBytes: 1024,
  timeoutMs: 1000,
  clock: { setTimer: () => 0, clearTimer: () => {} },
};

Deno.test("RequestPolicy.checkContentType requires JSON for a state-changing request with a body", async () => {
  const p = policy();
  const check = (method: string, headers: Record<string, string>) =>
    p.checkContentType(new Request("http://127.0.0.1:8080/v0/mode", { method, headers }), LIMITS);
  assert.equal(await check("GET", { "content-type": "text/plain", "content-length": "5" }), null);
  assert.equal(await check("POST", {}), null);
  assert.equal(await check("POST", { "content-type": "text/plain", "content-length": "0" }), null);
  assertRefused(await check("POST", { "content-length": "5" }), 415, ["got none"]);
  assertRefused(await check("POST", { "content-type": "text/plain", "content-length": "5" }), 415, [
    "'text/plain'",
  ]);
  assertRefused(
    await check("POST", { "content-type": "text/plain", "transfer-encoding": "chunked" }),
    415,
    [
      "'text/plain'",
    ],
  );
  assert.equal(
    await check("POST", { "content-type": "application/json", "content-length": "5" }),
    null,
  );
});

Deno.test("RequestPolicy.checkContentType reads an HTTP/2 body that comes without content-length: refused when not JSON and not empty", async () => {
  const p = policy();
  // As Deno.serve hands an HTTP/2 POST over: no Host (`:authority`), a body stream.
  const h2 = (headers: Record<string, string>, body: string) => {
    // Bytes, not text: a text body would bring a Content-Type of its own.
    const req = new Request("http://127.0.0.1:8080/v0/mode", {
      method: "POST",
      headers,
      body: new TextEncoder().encode(body),
    });
    return { req, refusal: p.checkContentType(req, LIMITS) };
  };
  const texted = h2({ "content-type": "text/plain" }, "MANUAL");
  assertRefused(await texted.refusal, 415, ["'text/plain'"]);
  assertRefused(await h2({}, "x").refusal, 415, ["got none"]);
  const empty = h2({}, "");
  assert.equal(await empty.refusal, null);
  assert.equal(empty.req.bodyUsed, true, "read to its end");
  const json = h2({ "content-type": "application/json" }, "{}");
  assert.equal(await json.refusal, null);
  assert.equal(json.req.bodyUsed, false, "a JSON body is left to its route");
});

Deno.test("isJsonContentType accepts application/json with a UTF-8 charset or none", () => {
  for (
    const value of [
      "application/json",
      "Application/JSON",
      "application/json ; charset=utf-8",
      "application/json;charset=UTF8",
      'application/json; charset="utf-8"',
      'application/json; charset="UTF8"',
      "application/json; charset = utf-8",
      "application/json; boundary=x; charset=utf-8",
      // A parameter without `=` is no charset, whatever it is called.
      "application/json; charsets",
      "application/json; charset",
    ]
  ) {
    assert.equal(isJsonContentType(value), true, value);
  }
  for (
    const value of [
      "text/plain",
      "application/jsonx",
      "application/json; charset=iso-8859-1",
      'application/json; charset="latin1"',
      "application/json; charset=",
      'application/json; charset=""utf-8""',
      "application/json; charset=utf-8; charset=latin1",
    ]
  ) {
    assert.equal(isJsonContentType(value), false, value);
  }
});
