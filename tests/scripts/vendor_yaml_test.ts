/**
 * vendor/yaml/ is the unmodified ES-module build of the pinned `yaml` package (deno task
 * vendor:yaml), and neither the runtime nor the simulated provider loads the CommonJS build.
 */
import assert from "node:assert/strict";
import { ModuleGraph } from "../helpers/module_graph.ts";
import {
  listFiles,
  modSource,
  npmPackageDir,
  pinnedYamlSpecifier,
  VENDOR_DIR,
} from "../../scripts/vendor_yaml.ts";

const vendorPath = VENDOR_DIR.pathname.replace(/\/$/, "");

Deno.test("vendor/yaml holds the pinned package's ES build byte for byte (deno task vendor:yaml)", async () => {
  const spec = await pinnedYamlSpecifier();
  const pkgDir = await npmPackageDir(spec);
  const expected = await listFiles(`${pkgDir}/browser/dist`);
  const actual = await listFiles(`${vendorPath}/dist`);
  assert.deepStrictEqual(actual, expected, "file list differs: run `deno task vendor:yaml`");
  for (const rel of expected) {
    const a = await Deno.readFile(`${vendorPath}/dist/${rel}`);
    const b = await Deno.readFile(`${pkgDir}/browser/dist/${rel}`);
    assert.ok(
      a.length === b.length && a.every((x, i) => x === b[i]),
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
    const deps = (await ModuleGraph.of(entry)).codeDependencies;
    assert.ok(deps.some((s) => s.endsWith("/vendor/yaml/dist/index.js")), deps.join("\n"));
    assert.deepStrictEqual(deps.filter((s) => /^npm:\/?yaml@/.test(s)), []);
  });
}
