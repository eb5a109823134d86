/**
 * The committed request validators (src/http/_request_validators.ts) are ajv's standalone code
 * for the current route table's request schemas; they are loaded with the first request body, and
 * the document's code only when GET /v0/openapi.json is first asked for.
 */
import assert from "node:assert/strict";
import { ModuleGraph } from "../helpers/module_graph.ts";
import {
  REQUEST_VALIDATORS_MODULE,
  requestValidatorsSource,
} from "../../scripts/gen_request_validators.ts";

Deno.test("_request_validators.ts is generated from the current route table (deno task api:validators)", () => {
  assert.ok(
    Deno.readTextFileSync(REQUEST_VALIDATORS_MODULE) === requestValidatorsSource(),
    "src/http/_request_validators.ts is out of date: run `deno task api:validators`",
  );
});

Deno.test("src/main.ts loads the request validators and the OpenAPI document's code only on demand", async () => {
  const graph = (await ModuleGraph.of("src/main.ts")).staticModules;
  assert.ok(graph.some((s) => s.endsWith("/src/http/routes.ts")), "the graph is the API's");
  assert.deepEqual(
    graph.filter((s) => /\/src\/http\/(openapi|response_schemas|_request_validators)\.ts$/.test(s)),
    [],
  );
});
