/**
 * The committed config validator (src/config/_structure_validator.ts) is ajv's standalone code
 * for the current RUNTIME_CONFIG_SCHEMA, and the runtime loads no ajv to use it.
 */
import assert from "node:assert/strict";
import { configValidatorSource, VALIDATOR_MODULE } from "../../scripts/gen_config_validator.ts";

Deno.test("_structure_validator.ts is generated from the current schema (deno task config:validator)", () => {
  assert.ok(
    Deno.readTextFileSync(VALIDATOR_MODULE) === configValidatorSource(),
    "src/config/_structure_validator.ts is out of date: run `deno task config:validator`",
  );
});

Deno.test("the runtime's module graph loads neither ajv nor its helpers", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL("../../src/main.ts", import.meta.url).pathname],
    stdout: "piped",
    stderr: "piped",
  }).output();
  assert.ok(out.success, new TextDecoder().decode(out.stderr));
  const info = JSON.parse(new TextDecoder().decode(out.stdout));
  const npm: string[] = info.modules.filter((m: { kind: string }) => m.kind === "npm")
    .map((m: { npmPackage: string }) => m.npmPackage);
  assert.ok(npm.length > 0, "the graph lists its npm packages");
  assert.deepEqual(npm.filter((p) => p.startsWith("ajv@")), []);
});
