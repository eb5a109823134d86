/**
 * scripts/lint_layers.ts (deno task lint:layers) checks the generated `.js` modules like the `.ts`
 * ones: an import from a `.js` file and an import of another folder's private `.js` file count.
 */
import assert from "node:assert/strict";
import { layerProblems } from "../../scripts/lint_layers.ts";

/** Writes `files` (path relative to the tree -> text) under a temporary src/ and lints it. */
async function problemsOf(files: Record<string, string>): Promise<string[]> {
  const dir = await Deno.makeTempDir({ prefix: "lint_layers_" });
  try {
    for (const [rel, text] of Object.entries(files)) {
      const path = `${dir}/src/${rel}`;
      await Deno.mkdir(path.slice(0, path.lastIndexOf("/")), { recursive: true });
      await Deno.writeTextFile(path, text);
    }
    return await layerProblems(`${dir}/src/`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("layerProblems sees an upward import from a generated .js module", async () => {
  const problems = await problemsOf({
    "common/_gen.js": `import { x } from "../http/mod.ts";\nexport const y = x;\n`,
    "http/mod.ts": `export const x = 1;\n`,
  });
  assert.deepEqual(problems, [
    "src/common/_gen.js: upward import common (layer 0) -> http (layer 7)",
  ]);
});

Deno.test("layerProblems sees an import of another folder's private .js module", async () => {
  const problems = await problemsOf({
    "http/routes.ts": `import { validate } from "../config/_validator.js";\nexport { validate };\n`,
    "config/_validator.js": `export const validate = () => true;\n`,
  });
  assert.deepEqual(problems, [
    "src/http/routes.ts: imports ../config/_validator.js; use config/mod.ts",
    "src/http/routes.ts: imports private file ../config/_validator.js",
  ]);
});

Deno.test("layerProblems accepts a .js module importing its own folder's files", async () => {
  const problems = await problemsOf({
    "adpp/_codec.js":
      `// @ts-self-types="./_codec.d.ts"\nimport { R } from "./_reader.ts";\nexport const r = R;\n`,
    "adpp/_codec.d.ts": `export declare const r: number;\n`,
    "adpp/_reader.ts": `export const R = 1;\n`,
    "adpp/mod.ts": `export { r } from "./_codec.js";\n`,
  });
  assert.deepEqual(problems, []);
});

Deno.test("the repository's src/ has no layering problem", async () => {
  assert.deepEqual(await layerProblems(), []);
});
