/**
 * The committed config validator (src/config/_structure_validator.js) is ajv's standalone code
 * for the current RUNTIME_CONFIG_SCHEMA, and the runtime loads no ajv to use it.
 */
import assert from "node:assert/strict";
import { ModuleGraph } from "../helpers/module_graph.ts";
import {
  configValidatorSource,
  configValidatorTypes,
  VALIDATOR_MODULE,
  VALIDATOR_TYPES,
} from "../../scripts/gen_config_validator.ts";

Deno.test("_structure_validator.js is generated from the current schema (deno task config:validator)", () => {
  assert.ok(
    Deno.readTextFileSync(VALIDATOR_MODULE) === configValidatorSource(),
    "src/config/_structure_validator.js is out of date: run `deno task config:validator`",
  );
  assert.ok(
    Deno.readTextFileSync(VALIDATOR_TYPES) === configValidatorTypes(),
    "src/config/_structure_validator.d.ts is out of date: run `deno task config:validator`",
  );
});

Deno.test("the runtime's module graph loads neither ajv nor its helpers", async () => {
  const npm = (await ModuleGraph.of("src/main.ts")).npmPackages;
  assert.ok(npm.length > 0, "the graph lists its npm packages");
  assert.deepEqual(npm.filter((p) => p.startsWith("ajv@")), []);
});
