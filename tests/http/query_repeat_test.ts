/**
 * A query parameter that takes one value, given more than once, is 400 naming it on every route:
 * the first value alone used to be taken silently, so `GET /v0/events?signal_id=a&signal_id=b`
 * (the form GET /v0/state and /v0/history take) streamed signal a only (docs/http-api.md
 * "Errors").
 */
import assert from "node:assert/strict";
import { ROUTES } from "../../src/http/routes.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

Deno.test("GET /v0/events?signal_id=a&signal_id=b is 400 naming signal_id, not a stream of a alone", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const server = await fx.serve();
    const res = await apiFetch(
      `http://127.0.0.1:${server.port}/v0/events?signal_id=tc1_temp&signal_id=tc2_temp`,
    );
    const text = res.headers.get("content-type") === "text/event-stream"
      ? (await res.body?.cancel(), "(an event stream)")
      : await res.text();
    assert.equal(res.status, 400, text);
    assert.deepEqual(JSON.parse(text), {
      status: {
        code: "INVALID_ARGUMENT",
        message: "signal_id: given 2 times; this parameter takes one value",
      },
    });
  } finally {
    await fx.close();
  }
});

Deno.test("Every single-valued query parameter of every GET route given twice is 400 naming it; repeatable ones are not", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    for (const r of ROUTES) {
      if (r.method !== "GET") continue;
      const path = "/" + r.segments.map((s) => s.startsWith(":") ? "x" : s).join("/");
      for (const q of r.doc.query ?? []) {
        const res = await fx.request("GET", `${path}?${q.name}=1&${q.name}=2`);
        if (q.repeated) {
          assert.doesNotMatch(res.text, /given 2 times/, `${path} ${q.name}: may repeat`);
          continue;
        }
        assert.equal(res.status, 400, `${path} ${q.name}: ${res.text}`);
        assert.equal(
          res.json.status.message,
          `${q.name}: given 2 times; this parameter takes one value`,
          `${path}`,
        );
      }
    }
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/events?provder=sim0 (a misspelled filter) is 400 naming it, not the unfiltered stream", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const server = await fx.serve();
    const res = await apiFetch(`http://127.0.0.1:${server.port}/v0/events?provder=sim0`);
    const text = res.headers.get("content-type") === "text/event-stream"
      ? (await res.body?.cancel(), "(an event stream)")
      : await res.text();
    assert.equal(res.status, 400, text);
    assert.deepEqual(JSON.parse(text), {
      status: {
        code: "INVALID_ARGUMENT",
        message: '"provder": unknown query parameter; GET /v0/events takes provider_id, ' +
          "device_id, signal_id, last_event_id",
      },
    });
  } finally {
    await fx.close();
  }
});

Deno.test("Every route but the e-stop refuses a query parameter it does not take, naming it; the cache-buster _ passes everywhere", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    for (const r of ROUTES) {
      const path = "/" + r.segments.map((s) => s.startsWith(":") ? "x" : s).join("/");
      const method = r.method;
      const body = method === "POST" ? {} : undefined;
      const buster = await fx.request(method, `${path}?_=1700000000000`, { body });
      assert.doesNotMatch(buster.text, /unknown query parameter/, `${method} ${path}?_=`);
      const res = await fx.request(method, `${path}?bogus=1`, { body });
      if (r.anyBody) {
        assert.doesNotMatch(res.text, /unknown query parameter/, `${method} ${path}`);
        continue;
      }
      assert.equal(res.status, 400, `${method} ${path}: ${res.text}`);
      assert.match(
        res.json.status.message,
        /^"bogus": unknown query parameter; /,
        `${method} ${path}`,
      );
    }
  } finally {
    await fx.close();
  }
});
