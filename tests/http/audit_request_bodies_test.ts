/**
 * What the audit trail records of an actuating request's body, over real HTTP on loopback
 * (docs/http-api.md "Audit trail"): a parameter value is recorded as sent (any JSON value,
 * bounded as every entry is), and a body that is refused before anything is decided (malformed
 * JSON, a missing or mistyped member) is not recorded, on POST /v0/mode as on /v0/parameters
 * and /v0/call. A kernel that was never started: no provider processes are needed.
 */
import assert from "node:assert/strict";
import { AUDIT_MAX_TEXT_BYTES } from "../../src/audit/mod.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { automationOptions } from "../scenarios/automation_helpers.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/** The API of a kernel never started, over loopback, with automation (and so parameters). */
async function withApi(
  body: (
    send: (path: string, body: unknown) => Promise<{ status: number; json: Json }>,
    audit: () => Promise<Json[]>,
  ) => Promise<void>,
): Promise<void> {
  const fx = await startHttpFixture({ start: false, config: automationOptions(null) });
  try {
    const url = `http://127.0.0.1:${(await fx.serve()).port}`;
    const send = async (path: string, b: unknown) => {
      const r = await apiFetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: typeof b === "string" ? b : JSON.stringify(b),
      });
      return { status: r.status, json: await r.json() };
    };
    const audit = async () => {
      const r = await apiFetch(`${url}/v0/audit?limit=1000`);
      assert.equal(r.status, 200);
      return (await r.json()).entries;
    };
    await body(send, audit);
  } finally {
    await fx.close();
  }
}

Deno.test("POST /v0/parameters refused for its value records the value as sent: an array as an array, an object as an object, bounded", async () => {
  await withApi(async (send, audit) => {
    const long = "x".repeat(AUDIT_MAX_TEXT_BYTES + 100);
    const values: unknown[] = [["a"], { not: "a scalar", n: [1, 2] }, ["a", long], 1e400];
    for (const value of values) {
      const r = await send("/v0/parameters", { name: "target_temp", value });
      assert.equal(r.status, 400, JSON.stringify(r.json));
    }
    // JSON.stringify writes 1e400 (Infinity) as null: the last body is sent as text.
    const big = await send("/v0/parameters", '{"name": "target_temp", "value": 1e400}');
    assert.equal(big.status, 400, JSON.stringify(big.json));
    const entries = await audit();
    assert.deepEqual(
      entries.map((e) => [e.action, e.function, e.outcome, e.refused_by]),
      values.map(() => ["parameter", "target_temp", "refused", "validation"]).concat([
        ["parameter", "target_temp", "refused", "validation"],
      ]),
    );
    assert.deepEqual(entries[0].args, { value: ["a"] });
    assert.deepEqual(entries[1].args, { value: { not: "a scalar", n: [1, 2] } });
    // The long text is cut as every text of an entry is (AUDIT_MAX_TEXT_BYTES, with a marker).
    const [first, cut] = entries[2].args.value;
    assert.equal(first, "a");
    assert.match(cut, /^x+ \[truncated: \d+ of 4196 bytes kept\]$/);
    assert.ok(new TextEncoder().encode(cut).length <= AUDIT_MAX_TEXT_BYTES, cut.length);
    // null (as JSON.stringify sent it) is recorded as null; 1e400 as written.
    assert.deepEqual(entries[3].args, { value: null });
    assert.deepEqual(entries[4].args, { value: "1e400" });
  });
});

Deno.test("POST /v0/mode with a malformed or mistyped body answers 400 and records nothing, as POST /v0/parameters and POST /v0/call", async () => {
  await withApi(async (send, audit) => {
    const refused: [string, unknown, RegExp][] = [
      ["/v0/mode", "{not json", /^Invalid JSON:/],
      ["/v0/mode", { mode: 1 }, /^mode: must be a string/],
      ["/v0/mode", { mode: "RUN" }, /^mode: must be one of/],
      ["/v0/mode", {}, /^mode: /],
      ["/v0/mode", [], /^body: must be a JSON object/],
      ["/v0/parameters", "{not json", /^Invalid JSON:/],
      ["/v0/parameters", { name: 7, value: 1 }, /^name: must be a string/],
      ["/v0/call", "{not json", /^Invalid JSON:/],
      ["/v0/call", { provider_id: "sim0", device_id: 1, function_id: 0 }, /^device_id: /],
    ];
    for (const [path, body, message] of refused) {
      const r = await send(path, body);
      assert.equal(r.status, 400, `${path} ${JSON.stringify(body)}: ${JSON.stringify(r.json)}`);
      assert.equal(r.json.status.code, "INVALID_ARGUMENT");
      assert.match(r.json.status.message, message, `${path} ${JSON.stringify(body)}`);
    }
    assert.deepEqual(
      (await audit()).map((e) => [e.action, e.function, e.outcome, e.refused_by, e.reason]),
      [],
      "a body refused before anything was decided is not an audit decision",
    );
    // A request that names a mode is recorded, accepted or refused.
    assert.equal((await send("/v0/mode", { mode: "AUTO" })).status, 409);
    assert.equal((await send("/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.deepEqual(
      (await audit()).map((e) => [e.action, e.function, e.outcome, e.refused_by]),
      [["mode", "AUTO", "refused", "mode"], ["mode", "MANUAL", "accepted", null]],
    );
  });
});
