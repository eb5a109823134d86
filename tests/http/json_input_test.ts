/**
 * Hostile and mistyped JSON: nesting is bounded for every body before anything runs, and a run
 * request's mistyped member is a 400 naming it, with nothing opened or written.
 */
import assert from "node:assert/strict";
import { MAX_JSON_DEPTH } from "../../src/http/mod.ts";
import {
  type FixtureResponse,
  type RunsFixture,
  startHttpFixture,
  withRunsFixture,
} from "../helpers/runtime_fixture.ts";

function assert400(r: FixtureResponse, message: string | RegExp) {
  assert.equal(r.status, 400, r.text);
  assert.equal(r.json.status.code, "INVALID_ARGUMENT");
  if (typeof message === "string") assert.equal(r.json.status.message, message);
  else assert.match(r.json.status.message, message);
}

/** JSON text of an array nested `depth` levels (`[[]]` is 2). */
const nestedText = (depth: number) => "[".repeat(depth) + "]".repeat(depth);

/** withRunsFixture whose journals, whatever was written, must replay cleanly afterwards. */
const withRuns = (fn: (f: RunsFixture) => Promise<void>) =>
  withRunsFixture({ prefix: "http-json-", replays: true }, fn);

const DEPTH_MESSAGE =
  `Invalid JSON: nested deeper than ${MAX_JSON_DEPTH} levels (arrays and objects)`;

Deno.test("POST /v0/runs with 4,000 nested arrays in params is 400 and opens nothing", async () => {
  await withRuns(async ({ fx, dir: dataDir }) => {
    const body = `{"params":{"p":${nestedText(4000)}}}`;
    assert.ok(body.length < 9000);
    assert400(await fx.request("POST", "/v0/runs", { body }), DEPTH_MESSAGE);
    const list = await fx.request("GET", "/v0/runs");
    assert.equal(list.status, 200);
    assert.equal(list.json.count, 0);
    assert.equal(await Deno.readTextFile(`${dataDir}/runs.jsonl`), "");
  });
});

Deno.test("Every JSON body is bounded to MAX_JSON_DEPTH levels, brackets in strings not counted", async () => {
  await withRuns(async ({ fx }) => {
    assert.equal(MAX_JSON_DEPTH, 32);
    // Level 1 is the body object: params at level 2, so 31 more levels fit exactly.
    const fits = await fx.request("POST", "/v0/runs", {
      body: `{"params":{"p":${nestedText(MAX_JSON_DEPTH - 2)}},"experiment_label":"[[[[{{{{"}`,
    });
    assert.equal(fits.status, 200, fits.text);
    const id = fits.json.run.run_id;
    const tooDeep = `{"type":"t","payload":{"p":${nestedText(MAX_JSON_DEPTH - 1)}}}`;
    assert400(await fx.request("POST", `/v0/runs/${id}/events`, { body: tooDeep }), DEPTH_MESSAGE);
    assert.equal((await fx.request("GET", `/v0/runs/${id}/events`)).json.count, 1);
    for (
      const path of ["/v0/mode", "/v0/call", `/v0/runs/${id}/close`, "/v0/runs", "/v0/estop/clear"]
    ) {
      const r = await fx.request("POST", path, { body: `{"x":${nestedText(MAX_JSON_DEPTH)}}` });
      if (path === "/v0/estop/clear") {
        assert.equal(r.status, 200, "the clear reads no body");
      } else {
        assert400(r, DEPTH_MESSAGE);
      }
    }
    assert.equal(fx.runtime.modes.current(), "IDLE");
    assert.equal((await fx.request("GET", `/v0/runs/${id}`)).json.run.state, "open");
    // The e-stop never refuses: an over-deep reason body is ignored and the stop happens.
    const estop = await fx.request("POST", "/v0/estop", { body: nestedText(5000) });
    assert.equal(estop.status, 200);
    assert.equal(estop.json.latched, true);
  });
});

Deno.test("POST /v0/runs answers 400 naming a mistyped member and opens nothing", async () => {
  await withRuns(async ({ fx, dir: dataDir }) => {
    const cases: Array<[unknown, string]> = [
      [{ params: "x" }, "params: must be a JSON object, got string"],
      [{ params: [1] }, "params: must be a JSON object, got array"],
      [{ experiment_label: 5 }, "experiment_label: must be a string or null, got number"],
      [
        { tag_scope: { provider_ids: "sim0" } },
        "tag_scope.provider_ids: must be an array of strings, got string",
      ],
      [
        { tag_scope: { signal_ids: ["a", 2] } },
        "tag_scope.signal_ids[1]: must be a string, got number",
      ],
      [{ tag_scope: "all" }, "tag_scope: must be a JSON object, got string"],
      [[1], "body: must be a JSON object"],
      ["7", "body: must be a JSON object"],
    ];
    for (const [body, message] of cases) {
      assert400(await fx.request("POST", "/v0/runs", { body }), message);
    }
    assert.equal((await fx.request("GET", "/v0/runs")).json.count, 0);
    assert.equal(await Deno.readTextFile(`${dataDir}/runs.jsonl`), "");
    // null counts as absent; unknown members are ignored.
    const open = await fx.request("POST", "/v0/runs", {
      body: { params: null, experiment_label: null, tag_scope: { device_ids: null }, extra: 1 },
    });
    assert.equal(open.status, 200, open.text);
    assert.deepEqual(open.json.run.params, {});
    assert.equal(open.json.run.experiment_label, null);
    assert.deepEqual(open.json.run.tag_scope, { provider_ids: [], device_ids: [], signal_ids: [] });
  });
});

Deno.test("Run markers, close and event pages answer 400 naming a mistyped member", async () => {
  await withRuns(async ({ fx }) => {
    const id = (await fx.request("POST", "/v0/runs")).json.run.run_id;
    const markers: Array<[unknown, string]> = [
      [{}, "type: missing"],
      [{ type: 5 }, "type: must be a string, got number"],
      [{ type: "t", payload: "x" }, "payload: must be a JSON object, got string"],
      [
        { type: "t", occurred_at_epoch_ms: "now" },
        "occurred_at_epoch_ms: must be a non-negative integer",
      ],
      ['"x"', "body: must be a JSON object with a type"],
    ];
    for (const [body, message] of markers) {
      assert400(await fx.request("POST", `/v0/runs/${id}/events`, { body }), message);
    }
    assert400(
      await fx.request("POST", `/v0/runs/${id}/close`, { body: { close_reason: 3 } }),
      /^close_reason: must be one of operator_stop, completed, failed, superseded/,
    );
    for (const q of ["after_sequence=-1", "after_sequence=x", "after_sequence=1.5"]) {
      assert400(
        await fx.request("GET", `/v0/runs/${id}/events?${q}`),
        /^after_sequence: must be an integer from 0 to 2\^53-1 written in digits \(got "/,
      );
    }
    await fx.request("POST", `/v0/runs/${id}/events`, { body: { type: "a" } });
    await fx.request("POST", `/v0/runs/${id}/events`, { body: { type: "b" } });
    const page = await fx.request("GET", `/v0/runs/${id}/events?after_sequence=1&limit=1`);
    assert.deepEqual(page.json.events.map((e: { type: string }) => e.type), ["a"]);
    // limit/offset keep anolis's leniency: unparseable takes the default (docs/http-api.md).
    assert.equal((await fx.request("GET", `/v0/runs/${id}/events?limit=x`)).json.count, 3);
    assert.equal((await fx.request("GET", "/v0/runs?limit=x&offset=y")).json.count, 1);
    assert.equal((await fx.request("GET", `/v0/runs/${id}`)).json.run.state, "open");
  });
});

Deno.test("limit/offset written as a number that is not a safe integer (1e20, 20 digits, 1.5) are 400 naming the field, on runs and events pages", async () => {
  await withRuns(async ({ fx }) => {
    const id = (await fx.request("POST", "/v0/runs", { body: {} })).json.run.run_id;
    for (const path of ["/v0/runs", `/v0/runs/${id}/events`]) {
      for (const field of ["limit", "offset"]) {
        for (const v of ["1e20", "99999999999999999999", "-99999999999999999999", "1.5"]) {
          assert400(
            await fx.request("GET", `${path}?${field}=${v}`),
            `${field}: must be an integer from -(2^53-1) to 2^53-1 (got ${v})`,
          );
        }
      }
      // Leniency kept for what does not read as a number, and a large safe value is cut.
      assert.equal((await fx.request("GET", `${path}?limit=x&offset=y`)).status, 200);
      assert.equal((await fx.request("GET", `${path}?limit=9007199254740991`)).status, 200);
    }
  });
});

Deno.test("run params and marker payload refuse an integer JSON parsing would round (beyond 2^53) with a 400 naming it; doubles and exact integers are kept", async () => {
  await withRuns(async ({ fx, dir: dataDir }) => {
    assert400(
      await fx.request("POST", "/v0/runs", {
        body: '{"params":{"recipe":{"batch_ids":[1,9007199254740993]}}}',
      }),
      "params.recipe.batch_ids[1]: 9007199254740993 is not an integer as written " +
        "(a JSON number read as a double: it would arrive as 9007199254740992)",
    );
    assert.equal(await Deno.readTextFile(`${dataDir}/runs.jsonl`), "", "nothing opened");
    const open = await fx.request("POST", "/v0/runs", {
      body: '{"params":{"big":9007199254740992,"gain":0.1,"near_one":1.0000000000000001}}',
    });
    assert.equal(open.status, 200, open.text);
    assert.deepEqual(open.json.run.params, { big: 9007199254740992, gain: 0.1, near_one: 1 });
    const id = open.json.run.run_id;
    assert400(
      await fx.request("POST", `/v0/runs/${id}/events`, {
        body: '{"type":"sample","payload":{"serial":12345678901234567890}}',
      }),
      "payload.serial: 12345678901234567890 is not an integer as written " +
        "(a JSON number read as a double: it would arrive as 12345678901234567000)",
    );
    const events = await fx.request("GET", `/v0/runs/${id}/events`);
    assert.equal(events.json.count, 1, "no marker recorded");
  });
});

Deno.test("run params and marker payload refuse a number beyond any double (1e400, -1e400) with a 400 naming it, not store it as null", async () => {
  await withRuns(async ({ fx, dir: dataDir }) => {
    assert400(
      await fx.request("POST", "/v0/runs", {
        body: '{"params":{"gain":0.5,"limits":[1,-1e400]}}',
      }),
      "params.limits[1]: -1e400 is beyond any double (a JSON number read as a double: " +
        "it would arrive as -Infinity)",
    );
    assert.equal(await Deno.readTextFile(`${dataDir}/runs.jsonl`), "", "nothing opened");
    const open = await fx.request("POST", "/v0/runs", {
      body: '{"params":{"big":1e22,"tiny":-1e-300}}',
    });
    assert.equal(open.status, 200, open.text);
    assert.deepEqual(open.json.run.params, { big: 1e22, tiny: -1e-300 }, "finite doubles are kept");
    const id = open.json.run.run_id;
    assert400(
      await fx.request("POST", `/v0/runs/${id}/events`, {
        body: '{"type":"sample","payload":{"reading":{"peak":1e400}}}',
      }),
      "payload.reading.peak: 1e400 is beyond any double (a JSON number read as a double: " +
        "it would arrive as Infinity)",
    );
    const events = await fx.request("GET", `/v0/runs/${id}/events`);
    assert.equal(events.json.count, 1, "no marker recorded");
  });
});

Deno.test("run params and marker payload keep a double written with an exponent (6.02e23, 1.7e308) that JSON stores as written, refusing only an integer stored as another", async () => {
  await withRuns(async ({ fx }) => {
    const open = await fx.request("POST", "/v0/runs", {
      body: '{"params":{"avogadro":6.02e23,"top":1.7e308,"planck":6.62607015e-34}}',
    });
    assert.equal(open.status, 200, open.text);
    assert.deepEqual(open.json.run.params, {
      avogadro: 6.02e23,
      top: 1.7e308,
      planck: 6.62607015e-34,
    });
    const id = open.json.run.run_id;
    const marker = await fx.request("POST", `/v0/runs/${id}/events`, {
      body: '{"type":"sample","payload":{"count":1.5e20}}',
    });
    assert.equal(marker.status, 200, marker.text);
    assert.deepEqual(marker.json.event.payload, { count: 1.5e20 });
    assert400(
      await fx.request("POST", `/v0/runs/${id}/events`, {
        body: '{"type":"sample","payload":{"serial":9.007199254740993e15}}',
      }),
      "payload.serial: 9.007199254740993e15 is not an integer as written " +
        "(a JSON number read as a double: it would arrive as 9007199254740992)",
    );
  });
});

Deno.test("POST /v0/parameters: a number beyond any double (1e400, -1e400) is a 400 naming it as written, whatever the parameter's type", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: {
      automation: {
        enabled: true,
        parameters: [
          { name: "ratio", type: "double", allowedValues: [], default: 0.5 },
          { name: "count", type: "int64", allowedValues: [], default: 5 },
          { name: "armed", type: "bool", allowedValues: [], default: false },
        ],
      },
    },
  });
  try {
    const set = (name: string, value: string) =>
      fx.request("POST", "/v0/parameters", { body: `{"name":"${name}","value":${value}}` });
    assert400(
      await set("ratio", "1e400"),
      "Invalid value for parameter 'ratio': expected a number (double), got 1e400 (beyond any " +
        "double: JSON reads it as number Infinity) (rule: type)",
    );
    assert400(
      await set("count", "-1e400"),
      "Invalid value for parameter 'count': expected an integer (int64) within \u00b1(2^53-1), got " +
        "-1e400 (beyond any double: JSON reads it as number -Infinity) (rule: type)",
    );
    assert400(
      await set("armed", "1e400"),
      "Invalid value for parameter 'armed': expected a boolean, got 1e400 (beyond any double: " +
        "JSON reads it as number Infinity) (rule: type)",
    );
    assert.equal((await fx.request("GET", "/v0/parameters")).json.parameters[0].value, 0.5);
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/call: a number beyond any double (1e400, -1e400) in an argument or the function id is a 400 naming it as written, not 'must be a number'", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const call = (functionId: string, args: string) =>
      fx.request("POST", "/v0/call", {
        body: `{"provider_id":"sim0","device_id":"motorctl0","function_id":${functionId},` +
          `"args":{${args}}}`,
      });
    const beyond = (written: string, infinity: string) =>
      `${written} is beyond any double (a JSON number read as a double: it would arrive as ${infinity})`;
    assert400(
      await call("10", '"duty":{"type":"double","double":1e400}'),
      `args.duty.double: ${beyond("1e400", "Infinity")}`,
    );
    assert400(
      await call("10", '"motor_index":{"type":"int64","int64":-1e400}'),
      `args.motor_index.int64: ${beyond("-1e400", "-Infinity")}`,
    );
    assert400(await call("1E400", ""), `function_id: ${beyond("1E400", "Infinity")}`);
    // A value that is not a number is still named by its schema's message.
    assert400(
      await call("10", '"duty":{"type":"double","double":"0.5"}'),
      "args.duty.double: must be a number",
    );
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/call with args null is a 400 saying what args must be, not 'missing' (args may be left out); a required member null is still missing", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const call = (members: string) =>
      fx.request("POST", "/v0/call", {
        body: `{"provider_id":"sim0","device_id":"motorctl0",${members}}`,
      });
    assert400(
      await call('"function_id":10,"args":null'),
      "args: must be an object of typed values",
    );
    assert400(
      await call('"function_id":null'),
      "function_id: missing (name dispatch is not accepted over HTTP)",
    );
    assert400(
      await call('"function_id":10,"args":{"duty":{"type":"double","double":null}}'),
      "args.duty.double: missing",
    );
    assert400(
      await call('"function_id":10,"args":{"duty":null}'),
      "args.duty: must be a typed value object",
    );
  } finally {
    await fx.close();
  }
});

Deno.test("A lone surrogate escape (\\ud800) in a body's string or member name is 400 Invalid JSON, as invalid UTF-8 is, not sent on as U+FFFD; a pair passes; the e-stop still latches", async () => {
  await withRuns(async ({ fx, dir: dataDir }) => {
    const lone = (where: string) =>
      `Invalid JSON: ${where} (a \\uD800-\\uDFFF escape without its pair): not Unicode text`;
    assert400(
      await fx.request("POST", "/v0/call", {
        body: '{"provider_id":"sim0","device_id":"motorctl0","function_id":10,' +
          '"args":{"label":{"type":"string","string":"a\\udc00b"}}}',
      }),
      lone('member "string" holds a string with a lone surrogate'),
    );
    assert400(
      await fx.request("POST", "/v0/runs", { body: '{"params":{"x\\ud800":1}}' }),
      lone('the member name "x\\ud800" holds a lone surrogate'),
    );
    assert400(
      await fx.request("POST", "/v0/runs", { body: '{"experiment_label":"\\ud83d"}' }),
      lone('member "experiment_label" holds a string with a lone surrogate'),
    );
    assert.equal(await Deno.readTextFile(`${dataDir}/runs.jsonl`), "", "nothing opened");
    const open = await fx.request("POST", "/v0/runs", {
      body: '{"experiment_label":"\\ud83d\\ude00"}',
    });
    assert.equal(open.status, 200, open.text);
    assert.equal(open.json.run.experiment_label, "\u{1F600}");
    // The e-stop ignores a body it cannot read: it latches all the same.
    const stop = await fx.request("POST", "/v0/estop", { body: '{"reason":"\\udfff"}' });
    assert.equal(stop.status, 200, stop.text);
    assert.equal(stop.json.latched, true);
  });
});
