/**
 * int64 values in request bodies are taken exactly as written or refused with a 400 naming the
 * field: a JSON number that parsing into a double would round to an integer (a fraction lost, a
 * digit beyond 2^53 dropped) never reaches a call or a parameter as that rounded integer. Over
 * real HTTP on loopback: the body's bytes as a client sends them.
 */
import assert from "node:assert/strict";
import { assertApiAnswer } from "../helpers/openapi_check.ts";
import {
  type FixtureResponse,
  type HttpFixture,
  startHttpFixture,
} from "../helpers/runtime_fixture.ts";

/**
 * Serves `fx`'s API on loopback and returns a sender of one request over that socket: `body` as
 * written (a string is sent verbatim, another value as JSON), the answer checked against the
 * OpenAPI document as HttpFixture.request checks it.
 */
async function overHttp(
  fx: HttpFixture,
): Promise<(method: string, path: string, body?: unknown) => Promise<FixtureResponse>> {
  const server = await fx.serve();
  return async (method, path, body) => {
    const init: RequestInit = { method };
    if (body !== undefined) {
      init.body = typeof body === "string" ? body : JSON.stringify(body);
      init.headers = { "content-type": "application/json" };
    }
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`, init);
    const text = await res.text();
    const contentType = res.headers.get("content-type");
    assertApiAnswer({ method, path, status: res.status, contentType, body: text });
    const json = contentType?.startsWith("application/json") ? JSON.parse(text) : undefined;
    return { status: res.status, headers: res.headers, json, text };
  };
}

function assert400(r: FixtureResponse, message: RegExp) {
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.status.code, "INVALID_ARGUMENT");
  assert.match(r.json.status.message, message);
}

const AUTOMATION = {
  enabled: true,
  parameters: [
    { name: "count", type: "int64" as const, allowedValues: [], default: 5 },
    { name: "ratio", type: "double" as const, allowedValues: [], default: 0.5 },
  ],
};

Deno.test("POST /v0/parameters over HTTP: an int64 value JSON would round is a 400 naming the parameter; doubles and exact integers pass", async () => {
  const fx = await startHttpFixture({ start: false, config: { automation: AUTOMATION } });
  try {
    const request = await overHttp(fx);
    const set = (name: string, value: string) =>
      request("POST", "/v0/parameters", `{"name":"${name}","value":${value}}`);
    for (const written of ["9007199254740991.4", "2.0000000000000001", "1e-400"]) {
      const r = await set("count", written);
      assert400(
        r,
        new RegExp(`^Invalid value for parameter 'count': .*${written.replace(".", "\\.")}`),
      );
    }
    assert400(await set("count", "9007199254740993"), /parameter 'count': .*9007199254740993/);
    assert.equal((await request("GET", "/v0/parameters")).json.parameters[0].value, 5);
    // Exact integers however written; a double parameter takes the nearest double as always.
    assert.equal((await set("count", "9007199254740991")).json.parameter.value, 9007199254740991);
    assert.equal((await set("count", "7.0e0")).json.parameter.value, 7);
    assert.equal((await set("ratio", "2.0000000000000001")).json.parameter.value, 2);
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/call over HTTP: an int64 argument JSON would round is a 400 naming the argument, nothing called", async () => {
  const fx = await startHttpFixture();
  try {
    const request = await overHttp(fx);
    assert.equal((await request("POST", "/v0/mode", { mode: "MANUAL" })).status, 200);
    const call = (index: string) =>
      request(
        "POST",
        "/v0/call",
        `{"provider_id":"sim0","device_id":"motorctl0","function_id":10,"args":{` +
          `"motor_index":{"type":"int64","int64":${index}},"duty":{"type":"double","double":0.25}}}`,
      );
    // The calls of set_motor_duty the audit trail records as accepted (sent to the provider),
    // identical consecutive ones merged into one entry's `count`.
    const accepted = async () => {
      const audit = (await request("GET", "/v0/audit?limit=100")).json;
      return (audit.entries as Record<string, unknown>[])
        .filter((e) =>
          e.action === "call" && e.function === "set_motor_duty" && e.outcome === "accepted"
        )
        .reduce((n, e) => n + (e.count as number), 0);
    };
    // The body-wide check answers (request_validation.ts, every integer member the schema
    // declares, call arguments included): the route's own conversion never sees a rounded one.
    assert400(
      await call("1.0000000000000001"),
      /^args\.motor_index\.int64: 1\.0000000000000001 is not an integer as written \(a JSON number read as a double: it would arrive as 1\)$/,
    );
    const raw = (args: string) =>
      request(
        "POST",
        "/v0/call",
        `{"provider_id":"sim0","device_id":"motorctl0","function_id":10,"args":{${args}}}`,
      );
    assert400(
      await raw(`"n":{"type":"uint64","uint64":3.0000000000000001}`),
      /^args\.n\.uint64: 3\.0000000000000001 is not an integer as written/,
    );
    // An integer member beside another type's value is refused all the same.
    assert400(
      await raw(`"n":{"type":"double","double":1,"int64":2.0000000000000001}`),
      /^args\.n\.int64: 2\.0000000000000001 is not an integer as written/,
    );
    assert.equal(await accepted(), 0, "no refused call reached the provider");
    assert.equal((await call("1")).status, 200);
    assert.equal((await call("1.0")).status, 200);
    assert.equal(await accepted(), 2, "the two exact calls reached the provider");
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/parameters over HTTP: an int64 value JSON would round is refused and audited as sent, never as the rounded number", async () => {
  const fx = await startHttpFixture({ start: false, config: { automation: AUTOMATION } });
  try {
    const server = await fx.serve();
    const base = `http://127.0.0.1:${server.port}`;
    const set = async (name: string, value: string) => {
      const r = await fetch(`${base}/v0/parameters`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: `{"name":"${name}","value":${value}}`,
      });
      return { status: r.status, text: await r.text() };
    };
    const refused = await set("count", "9007199254740993");
    assert.equal(refused.status, 400, refused.text);
    assert.match(
      JSON.parse(refused.text).status.message,
      /^Invalid value for parameter 'count': expected an integer \(int64\) within ±\(2\^53-1\), got 9007199254740993 \(not an integer as written: JSON reads it as number 9007199254740992\) \(rule: type\)$/,
    );
    await set("count", "9007199254740991.4");
    // A double parameter takes the nearest double; its entry still says what was sent.
    const ratio = await set("ratio", "9007199254740993");
    assert.equal(ratio.status, 200, ratio.text);
    assert.match(ratio.text, /"value":9007199254740992\b/);
    const count = await fetch(`${base}/v0/parameters`).then((r) => r.json());
    assert.equal(count.parameters[0].value, 5, "the int64 parameter is unchanged");
    // The audit trail's parameter entries, oldest first: each value as the client wrote it (the
    // raw text: a JSON.parse of the answer would round it again).
    const audit = await fetch(`${base}/v0/audit?limit=10`).then((r) => r.text());
    const values = [...audit.matchAll(/"action":"parameter".*?"args":\{"value":([^}]*)\}/g)]
      .map((m) => m[1]);
    assert.equal(values.length, 3, audit);
    assert.deepEqual(new Set(values), new Set(["9007199254740993", '"9007199254740991.4"']));
    assert.equal(values.filter((v) => v === "9007199254740993").length, 2, audit);
  } finally {
    await fx.close();
  }
});
