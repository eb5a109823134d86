/**
 * The committed request validators (src/http/_request_validators.js) are ajv's standalone code
 * for the current route table's request schemas; they are loaded with the first request body, and
 * the document's code only when GET /v0/openapi.json is first asked for.
 */
import assert from "node:assert/strict";
import { ModuleGraph } from "../helpers/module_graph.ts";
import {
  REQUEST_VALIDATORS_MODULE,
  REQUEST_VALIDATORS_TYPES,
  requestValidatorsFiles,
} from "../../scripts/gen_request_validators.ts";

Deno.test("_request_validators.js is generated from the current route table (deno task api:validators)", () => {
  const { source, types } = requestValidatorsFiles();
  assert.ok(
    Deno.readTextFileSync(REQUEST_VALIDATORS_MODULE) === source,
    "src/http/_request_validators.js is out of date: run `deno task api:validators`",
  );
  assert.ok(
    Deno.readTextFileSync(REQUEST_VALIDATORS_TYPES) === types,
    "src/http/_request_validators.d.ts is out of date: run `deno task api:validators`",
  );
});

Deno.test("src/main.ts loads the request validators and the OpenAPI document's code only on demand", async () => {
  const all = await ModuleGraph.of("src/main.ts");
  const graph = all.staticModules;
  assert.ok(graph.some((s) => s.endsWith("/src/http/routes.ts")), "the graph is the API's");
  const onDemand = /\/src\/http\/((openapi|response_schemas)\.ts|_request_validators\.js)$/;
  assert.deepEqual(graph.filter((s) => onDemand.test(s)), []);
  // The import is a static string: the module is in the graph `deno compile` embeds.
  assert.deepEqual(all.modules.filter((s) => s.endsWith("/src/http/_request_validators.js")), [
    new URL("../../src/http/_request_validators.js", import.meta.url).href,
  ]);
});
