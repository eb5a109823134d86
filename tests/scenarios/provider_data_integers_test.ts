/**
 * 64-bit integers beyond ±2^53 reach the cache, GET /v0/state and SSE exactly (the exact decimal
 * digits as a JSON number, as the C++ runtime writes them), with quality OK.
 */
import assert from "node:assert/strict";
import { startDataFixture } from "./_data_helpers.ts";
import { RawSseFrames } from "./_data_helpers.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

Deno.test("int64/uint64 values beyond 2^53 are stored and served exactly", async () => {
  const { fx } = await startDataFixture("values");
  try {
    const cache = fx.runtime.cache;
    const v = (sid: string) => cache.signal("p0", "ints", sid)?.value;
    assert.deepEqual(v("u64_max"), { type: "uint64", uint64: 18446744073709551615n });
    assert.deepEqual(v("i64_min"), { type: "int64", int64: -9223372036854775808n });
    assert.deepEqual(v("i64_max"), { type: "int64", int64: 9223372036854775807n });
    // Within the safe range a plain number, as before.
    assert.deepEqual(v("small"), { type: "int64", int64: -42 });

    const res = await fx.request("GET", "/v0/state/p0/ints");
    assert.equal(res.status, 200);
    assert.match(
      res.text,
      /"signal_id":"u64_max","value":\{"type":"uint64","uint64":18446744073709551615\}/,
    );
    assert.match(res.text, /"value":\{"type":"int64","int64":-9223372036854775808\}/);
    assert.match(res.text, /"value":\{"type":"int64","int64":9223372036854775807\}/);
    assert.match(res.text, /"value":\{"type":"int64","int64":-42\}/);
    assert.equal(res.json.quality, "OK");
    for (const s of res.json.values) assert.equal(s.quality, "OK", s.signal_id);

    const all = await fx.request("GET", "/v0/state");
    assert.equal(all.status, 200);
    assert.match(all.text, /"uint64":18446744073709551615\}/);

    // big_counter alternates 2^64-1 / 2^64-2: SSE sees each change with its exact digits.
    const server = await fx.serve();
    const stream = await apiFetch(
      `http://127.0.0.1:${server.port}/v0/events?provider_id=p0&device_id=ints&signal_id=big_counter`,
    );
    assert.equal(stream.status, 200);
    const frames = new RawSseFrames(stream.body!);
    try {
      const seen = new Set<string>();
      // Bounded: a value that never alternates fails the assertion below instead of hanging.
      for (let frame = 0; frame < 50 && seen.size < 2; frame++) {
        const f = await frames.next();
        assert.equal(f.event, "state_update");
        const m = /"value":\{"type":"uint64","uint64":(\d+)\}/.exec(f.data);
        assert.ok(m, f.data);
        seen.add(m[1]!);
      }
      assert.deepEqual([...seen].sort(), ["18446744073709551614", "18446744073709551615"]);
    } finally {
      await frames.cancel();
    }
  } finally {
    await fx.close();
  }
});
