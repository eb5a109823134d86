/**
 * `after_sequence` on GET /v0/runs/{run_id}/events takes every sequence number a run can have: any
 * integer from 0 to 2^53-1 written in digits (16-digit ones included); anything else is a 400 whose
 * message states that rule and shows what was given. Over a real socket on loopback.
 */
import assert from "node:assert/strict";
import { withRunsFixture } from "../helpers/runtime_fixture.ts";

const RULE = /^after_sequence: must be an integer from 0 to 2\^53-1 written in digits \(got "/;

Deno.test("GET /v0/runs/{id}/events takes a 16-digit after_sequence up to 2^53-1 and states the rule past it", async () => {
  await withRunsFixture({ prefix: "after-sequence-" }, async ({ fx }) => {
    const server = await fx.serve();
    const base = `http://127.0.0.1:${server.port}`;
    const opened = await fetch(`${base}/v0/runs`, { method: "POST" });
    const id = (await opened.json()).run.run_id;
    const get = async (after: string) => {
      const r = await fetch(
        `${base}/v0/runs/${id}/events?after_sequence=${encodeURIComponent(after)}`,
      );
      return { status: r.status, json: await r.json() };
    };
    const one = await get("0");
    assert.equal(one.status, 200);
    assert.equal(one.json.count, 1, "run_opened");
    for (const after of ["1000000000000000", String(Number.MAX_SAFE_INTEGER)]) {
      const r = await get(after);
      assert.equal(r.status, 200, `${after}: ${JSON.stringify(r.json)}`);
      assert.equal(r.json.count, 0);
    }
    for (const after of [String(Number.MAX_SAFE_INTEGER + 1), "-1", "1.5", "1e3", " 1", "x"]) {
      const r = await get(after);
      assert.equal(r.status, 400, after);
      assert.equal(r.json.status.code, "INVALID_ARGUMENT");
      assert.match(r.json.status.message, RULE, after);
      assert.ok(r.json.status.message.endsWith(`${JSON.stringify(after)})`), r.json.status.message);
    }
    const long = "9".repeat(100);
    const cut = await get(long);
    assert.equal(cut.status, 400);
    assert.ok(cut.json.status.message.endsWith(`"${"9".repeat(32)}...")`), cut.json.status.message);
  });
});
