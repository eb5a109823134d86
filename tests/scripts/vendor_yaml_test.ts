/**
 * vendor/yaml/ is the ES-module build of the pinned `yaml` package (deno task vendor:yaml), with
 * non-ASCII characters escaped and nothing else changed, and neither the runtime nor the simulated
 * provider loads the CommonJS build.
 */
import assert from "node:assert/strict";
import { ModuleGraph } from "../helpers/module_graph.ts";
import { asciiOnly } from "../../scripts/generated_js.ts";
import {
  listFiles,
  modSource,
  npmPackageDir,
  pinnedYamlSpecifier,
  VENDOR_DIR,
} from "../../scripts/vendor_yaml.ts";

const vendorPath = VENDOR_DIR.pathname.replace(/\/$/, "");

Deno.test("vendor/yaml holds the pinned package's ES build, non-ASCII escaped (deno task vendor:yaml)", async () => {
  const spec = await pinnedYamlSpecifier();
  const pkgDir = await npmPackageDir(spec);
  const expected = await listFiles(`${pkgDir}/browser/dist`);
  const actual = await listFiles(`${vendorPath}/dist`);
  assert.deepStrictEqual(actual, expected, "file list differs: run `deno task vendor:yaml`");
  for (const rel of expected) {
    const a = await Deno.readTextFile(`${vendorPath}/dist/${rel}`);
    const b = asciiOnly(await Deno.readTextFile(`${pkgDir}/browser/dist/${rel}`));
    assert.ok(
      a === b,
      `vendor/yaml/dist/${rel} differs from ${spec}: run \`deno task vendor:yaml\``,
    );
  }
  assert.strictEqual(
    await Deno.readTextFile(`${vendorPath}/LICENSE`),
    await Deno.readTextFile(`${pkgDir}/LICENSE`),
  );
  assert.strictEqual(await Deno.readTextFile(`${vendorPath}/mod.ts`), modSource(spec));
});

for (
  const [name, entry] of [
    ["runtime", "src/main.ts"],
    ["simulated provider", "examples/providers/sim/main.ts"],
  ]
) {
  Deno.test(`the ${name} loads yaml's ES build, not its CommonJS build`, async () => {
    const deps = (await ModuleGraph.of(entry!)).codeDependencies;
    assert.ok(deps.some((s) => s.endsWith("/vendor/yaml/dist/index.js")), deps.join("\n"));
    assert.deepStrictEqual(deps.filter((s) => /^npm:\/?yaml@/.test(s)), []);
  });
}
