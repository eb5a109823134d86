/**
 * int64 values in request bodies are taken exactly as written or refused with a 400 naming the
 * field: a JSON number that parsing into a double would round to an integer (a fraction lost, a
 * digit beyond 2^53 dropped) never reaches a call or a parameter as that rounded integer.
 */
import assert from "node:assert/strict";
import { type FixtureResponse, startHttpFixture } from "../helpers/runtime_fixture.ts";

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

Deno.test("POST /v0/parameters: an int64 value JSON would round is a 400 naming the parameter; doubles and exact integers pass", async () => {
  const fx = await startHttpFixture({ start: false, config: { automation: AUTOMATION } });
  try {
    const set = (name: string, value: string) =>
      fx.request("POST", "/v0/parameters", { body: `{"name":"${name}","value":${value}}` });
    for (const written of ["9007199254740991.4", "2.0000000000000001", "1e-400"]) {
      const r = await set("count", written);
      assert400(
        r,
        new RegExp(`^Invalid value for parameter 'count': .*${written.replace(".", "\\.")}`),
      );
    }
    assert400(await set("count", "9007199254740993"), /parameter 'count': .*9007199254740993/);
    assert.equal((await fx.request("GET", "/v0/parameters")).json.parameters[0].value, 5);
    // Exact integers however written; a double parameter takes the nearest double as always.
    assert.equal((await set("count", "9007199254740991")).json.parameter.value, 9007199254740991);
    assert.equal((await set("count", "7.0e0")).json.parameter.value, 7);
    assert.equal((await set("ratio", "2.0000000000000001")).json.parameter.value, 2);
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/call: an int64 argument JSON would round is a 400 naming the argument, nothing called", async () => {
  const fx = await startHttpFixture();
  try {
    await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
    const call = (index: string) =>
      fx.request("POST", "/v0/call", {
        body: `{"provider_id":"sim0","device_id":"motorctl0","function_id":10,"args":{` +
          `"motor_index":{"type":"int64","int64":${index}},"duty":{"type":"double","double":0.25}}}`,
      });
    // The body-wide check answers (request_validation.ts, every integer member the schema
    // declares, call arguments included): the route's own conversion never sees a rounded one.
    assert400(
      await call("1.0000000000000001"),
      /^args\.motor_index\.int64: 1\.0000000000000001 is not an integer as written \(a JSON number read as a double: it would arrive as 1\)$/,
    );
    const raw = (args: string) =>
      fx.request("POST", "/v0/call", {
        body: `{"provider_id":"sim0","device_id":"motorctl0","function_id":10,"args":{${args}}}`,
      });
    assert400(
      await raw(`"n":{"type":"uint64","uint64":3.0000000000000001}`),
      /^args\.n\.uint64: 3\.0000000000000001 is not an integer as written/,
    );
    // An integer member beside another type's value is refused all the same.
    assert400(
      await raw(`"n":{"type":"double","double":1,"int64":2.0000000000000001}`),
      /^args\.n\.int64: 2\.0000000000000001 is not an integer as written/,
    );
    assert.equal((await call("1")).status, 200);
    assert.equal((await call("1.0")).status, 200);
  } finally {
    await fx.close();
  }
});
