/** Unit tests of the HTTP building blocks that need no runtime. */
import assert from "node:assert/strict";
import { RuntimeError, type TypedValue } from "../../src/common/mod.ts";
import {
  CALL_BODY_SCHEMA,
  callArgs,
  type CallBody,
  eventPasses,
  formatSseFrame,
  HTTP_STATUS_OF,
  isLoopbackAddress,
  loadRequestValidators,
  originMatches,
  readJsonBody,
  resolveApiToken,
  responseForError,
  validateRequestBody,
} from "../../src/http/mod.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";

await loadRequestValidators();

function invalid(fn: () => unknown, message: string | RegExp): void {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof RuntimeError);
    assert.equal(err.code, "INVALID_ARGUMENT");
    if (typeof message === "string") assert.equal(err.message, message);
    else assert.match(err.message, message);
    return true;
  });
}

/** A POST /v0/call body through its generated validator, as the router gets its args. */
function parseArgs(args: unknown): Record<string, TypedValue> {
  const body = { provider_id: "p", device_id: "d", function_id: 1, args };
  return callArgs(validateRequestBody<CallBody>("callFunction", CALL_BODY_SCHEMA, body).args);
}

/** One argument `args.<name>` of a POST /v0/call body through the validator. */
function parseTypedValue(json: unknown, path: string): TypedValue {
  const name = path.replace(/^args\./, "");
  return (parseArgs({ [name]: json })[name])!;
}

Deno.test("HTTP_STATUS_OF maps every status code of the contract", () => {
  assert.deepEqual(HTTP_STATUS_OF, {
    OK: 200,
    INVALID_ARGUMENT: 400,
    UNAUTHENTICATED: 401,
    PERMISSION_DENIED: 403,
    NOT_FOUND: 404,
    FAILED_PRECONDITION: 409,
    RESOURCE_EXHAUSTED: 429,
    INTERNAL: 500,
    UNAVAILABLE: 503,
    DEADLINE_EXCEEDED: 504,
  });
});

Deno.test("responseForError turns a plain exception into 500 INTERNAL with its text", async () => {
  const res = responseForError(new Error("boom"));
  assert.equal(res.status, 500);
  assert.deepEqual(await res.json(), { status: { code: "INTERNAL", message: "boom" } });
  const nf = responseForError(new RuntimeError("NOT_FOUND", "Device not found: a/b"));
  assert.equal(nf.status, 404);
  assert.deepEqual(await nf.json(), {
    status: { code: "NOT_FOUND", message: "Device not found: a/b" },
  });
});

Deno.test("POST /v0/call's schema accepts every value type in its JSON shape", () => {
  assert.deepEqual(parseTypedValue({ type: "double", double: 0.5 }, "v"), {
    type: "double",
    double: 0.5,
  });
  assert.deepEqual(parseTypedValue({ type: "int64", int64: -3 }, "v"), {
    type: "int64",
    int64: -3,
  });
  assert.deepEqual(parseTypedValue({ type: "uint64", uint64: 2 ** 53 - 1 }, "v"), {
    type: "uint64",
    uint64: 2 ** 53 - 1,
  });
  assert.deepEqual(parseTypedValue({ type: "bool", bool: false }, "v"), {
    type: "bool",
    bool: false,
  });
  assert.deepEqual(parseTypedValue({ type: "string", string: "" }, "v"), {
    type: "string",
    string: "",
  });
  assert.deepEqual(parseTypedValue({ type: "bytes", base64: "AQID" }, "v"), {
    type: "bytes",
    base64: "AQID",
  });
  assert.deepEqual(parseTypedValue({ type: "bytes", base64: "" }, "v"), {
    type: "bytes",
    base64: "",
  });
});

Deno.test("POST /v0/call's schema rejects malformed typed values naming the field", () => {
  invalid(
    () => parseTypedValue({ type: "double" }, "args.duty"),
    'args.duty: missing "double" member',
  );
  invalid(() => parseTypedValue({ double: 1 }, "args.duty"), 'args.duty: missing "type"');
  invalid(() => parseTypedValue(5, "args.duty"), "args.duty: must be a typed value object");
  invalid(() => parseTypedValue({ type: 3 }, "args.x"), "args.x.type: must be a string");
  invalid(
    () => parseTypedValue({ type: "float", float: 1 }, "args.x"),
    /^args\.x\.type: unknown value type "float"/,
  );
  invalid(
    () => parseTypedValue({ type: "double", double: "1" }, "args.x"),
    "args.x.double: must be a number",
  );
  invalid(
    () => parseTypedValue({ type: "int64", int64: 1.5 }, "args.n"),
    /^args\.n\.int64: must be an integer/,
  );
  invalid(() => parseTypedValue({ type: "int64", int64: 2 ** 53 }, "args.n"), /^args\.n\.int64:/);
  invalid(() => parseTypedValue({ type: "uint64", uint64: -1 }, "args.n"), /^args\.n\.uint64:/);
  invalid(
    () => parseTypedValue({ type: "bool", bool: 1 }, "args.b"),
    "args.b.bool: must be a boolean",
  );
  invalid(
    () => parseTypedValue({ type: "string", string: 1 }, "args.s"),
    "args.s.string: must be a string",
  );
  invalid(
    () => parseTypedValue({ type: "bytes", bytes: "AQID" }, "args.r"),
    'args.r: missing "base64" member',
  );
  // unpadded, URL alphabet, stray characters
  for (const bad of ["AQI", "AQ-_", "AQ==AQ==", "A Q=="]) {
    invalid(
      () => parseTypedValue({ type: "bytes", base64: bad }, "args.r"),
      /^args\.r\.base64: must be base64/,
    );
  }
});

Deno.test("POST /v0/call's args keep argument names as data, even __proto__", () => {
  const args = parseArgs(JSON.parse('{"__proto__":{"type":"bool","bool":true}}'));
  assert.deepEqual(Object.keys(args), ["__proto__"]);
  assert.equal("toString" in args, false);
  invalid(() => parseArgs([]), "args: must be an object of typed values");
  assert.deepEqual(
    callArgs(
      validateRequestBody<CallBody>("callFunction", CALL_BODY_SCHEMA, {
        provider_id: "p",
        device_id: "d",
        function_id: 1,
      }).args,
    ),
    {},
  );
});

Deno.test("isLoopbackAddress covers 127.0.0.0/8, ::1 and IPv4-mapped loopback only", () => {
  for (const a of ["127.0.0.1", "127.1.2.3", "127.255.255.254", "::1", "::ffff:127.0.0.1"]) {
    assert.equal(isLoopbackAddress(a), true, a);
  }
  for (const a of ["10.0.0.1", "128.0.0.1", "::ffff:10.0.0.1", "0.0.0.0", "::", "192.168.1.127"]) {
    assert.equal(isLoopbackAddress(a), false, a);
  }
});

Deno.test("resolveApiToken prefers RUNTIME_API_TOKEN over http.auth_token", () => {
  const http = testConfig({ http: { authToken: "from-yaml" } }).http;
  assert.equal(resolveApiToken(http, "from-env"), "from-env");
  assert.equal(resolveApiToken(http, undefined), "from-yaml");
  assert.equal(resolveApiToken(http, ""), "from-yaml");
});

Deno.test("originMatches handles *, one-star globs and exact entries", () => {
  assert.equal(originMatches("*", "http://x"), true);
  assert.equal(originMatches("http://localhost:*", "http://localhost:5173"), true);
  assert.equal(originMatches("http://localhost:*", "http://localhost.evil.com"), false);
  assert.equal(originMatches("https://*.example.com", "https://ui.example.com"), true);
  assert.equal(originMatches("https://*.example.com", "https://example.com"), false);
  assert.equal(originMatches("http://a", "http://a"), true);
  assert.equal(originMatches("http://a", "http://ab"), false);
  // The star stands for any text, none included, between a prefix and a suffix that never overlap.
  assert.equal(originMatches("http://ui*.lab.local", "http://ui.lab.local"), true);
  assert.equal(originMatches("https://a*a.lab", "https://aa.lab"), true);
  assert.equal(originMatches("https://a*a.lab", "https://a.lab"), false);
  // More than one star: exact text, neither star a wildcard.
  assert.equal(originMatches("http://*.*.lab", "http://*.*.lab"), true);
  assert.equal(originMatches("http://*.*.lab", "http://a.b.lab"), false);
  assert.equal(originMatches("http://*.*.lab", "http://a.*.lab"), false);
});

Deno.test("eventPasses applies device filters to device events and signal filter to signal events", () => {
  const su = {
    kind: "state_update" as const,
    provider_id: "sim0",
    device_id: "tempctl0",
    signal_id: "tc1_temp",
    value: { type: "double" as const, double: 1 },
    quality: "OK" as const,
    timestamp_ms: 1,
  };
  const avail = {
    kind: "device_availability" as const,
    provider_id: "sim0",
    device_id: "tempctl0",
    available: true,
    timestamp_ms: 1,
  };
  const health = {
    kind: "provider_health_change" as const,
    provider_id: "sim1",
    state: "AVAILABLE" as const,
    timestamp_ms: 1,
  };
  const none = { providerId: "", deviceId: "", signalId: "" };
  assert.equal(eventPasses(su, none), true);
  assert.equal(eventPasses(su, { ...none, signalId: "tc2_temp" }), false);
  assert.equal(eventPasses(su, { ...none, deviceId: "tempctl0", signalId: "tc1_temp" }), true);
  assert.equal(eventPasses(avail, { ...none, signalId: "tc2_temp" }), true);
  assert.equal(eventPasses(avail, { ...none, providerId: "sim1" }), false);
  // provider_health_change is outside the filter scope: always delivered.
  assert.equal(eventPasses(health, { ...none, providerId: "sim0" }), true);
});

Deno.test("formatSseFrame writes event, <boot>-<n> id and one-line data without the kind", () => {
  const frame = formatSseFrame({
    id: 57,
    event: { kind: "mode_change", previous_mode: "MANUAL", new_mode: "AUTO", timestamp_ms: 1 },
  }, "3f9a0c12");
  assert.equal(
    frame,
    'event: mode_change\nid: 3f9a0c12-57\ndata: {"previous_mode":"MANUAL","new_mode":"AUTO","timestamp_ms":1}\n\n',
  );
  const multi = formatSseFrame({
    id: 1,
    event: { kind: "bt_error", node: "", error: "a\nb", timestamp_ms: 2 },
  }, "b");
  assert.equal(multi.split("\n").length, 5); // event, id, data, blank, ""
});

const LIMITS = { maxBytes: 16, timeoutMs: 5000, clock: new ManualClock() };

Deno.test("readJsonBody parses JSON and reports invalid JSON with the Invalid JSON prefix", async () => {
  const ok = new Request("http://x/", { method: "POST", body: '{"a":1}' });
  assert.deepEqual(await readJsonBody(ok, LIMITS), { a: 1 });
  const empty = new Request("http://x/", { method: "POST", body: "  " });
  assert.equal(await readJsonBody(empty, LIMITS), undefined);
  const bad = new Request("http://x/", { method: "POST", body: "{a" });
  await assert.rejects(readJsonBody(bad, LIMITS), (err: RuntimeError) => {
    assert.equal(err.code, "INVALID_ARGUMENT");
    assert.match(err.message, /^Invalid JSON: /);
    return true;
  });
});

Deno.test("readJsonBody refuses a body over the limit, declared or streamed", async () => {
  const declared = new Request("http://x/", {
    method: "POST",
    body: "x".repeat(17),
    headers: { "content-length": "17" },
  });
  await assert.rejects(readJsonBody(declared, LIMITS), /body: larger than the 16-byte limit/);
  // A chunked body (no Content-Length) is counted while it streams.
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      c.enqueue(new Uint8Array(10));
      c.enqueue(new Uint8Array(10));
      c.close();
    },
  });
  const chunked = new Request("http://x/", { method: "POST", body: stream });
  await assert.rejects(readJsonBody(chunked, LIMITS), /body: larger than the 16-byte limit/);
});

Deno.test("readJsonBody gives up on a body that stops arriving", async () => {
  let ctl!: ReadableStreamDefaultController<Uint8Array>;
  const stream = new ReadableStream<Uint8Array>({
    start(c) {
      ctl = c;
      c.enqueue(new TextEncoder().encode("{"));
    },
  });
  const req = new Request("http://x/", { method: "POST", body: stream });
  const clock = new ManualClock();
  let settled = false;
  const read = readJsonBody(req, { maxBytes: 1024, timeoutMs: 30, clock });
  read.catch(() => {}).finally(() => (settled = true));
  clock.advance(29);
  await flushMicrotasks();
  assert.equal(settled, false, "still waiting one millisecond before the limit");
  clock.advance(1);
  await assert.rejects(read, /body: not received completely within 30 ms/);
  assert.equal(clock.pendingTimers, 0);
  try {
    ctl.close();
  } catch {
    // cancelled by the reader already
  }
});
