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

Deno.test("layerProblems refuses a run-time Deno use outside host/: line, port", async () => {
  const problems = await problemsOf({
    "main.ts": [
      `// Deno.exit(1) in a comment and "Deno.args" in a string are not uses`,
      `const port = Deno.env.get("RUNTIME_PORT");`,
      `export const os: typeof Deno.build.os = Deno.build.os;`,
      `export function stop(): never {`,
      `  return globalThis.Deno.exit(Number(port));`,
      `}`,
      `export const d = Deno;`,
      "",
    ].join("\n"),
    "app/process.ts": `export const argv = Deno.args;\n`,
    "control/gate.ts": `export const now = () => Deno.cwd();\n`,
  });
  assert.deepEqual(problems.toSorted(), [
    "src/app/process.ts:1: Deno.args at run time outside host/; use host/mod.ts: " +
    "commandLineArguments",
    "src/control/gate.ts:1: Deno.cwd at run time outside host/; take it as a port from the " +
    "composition root (app/, main.ts), which gets it from host/: workingDirectory",
    "src/main.ts:2: Deno.env at run time outside host/; use host/mod.ts: readEnvironment " +
    "(a plain read) or secretFromEnvironment (a secret)",
    "src/main.ts:3: Deno.build at run time outside host/; use host/mod.ts: operatingSystem",
    "src/main.ts:5: Deno.exit at run time outside host/; use host/mod.ts: exitProcess",
    "src/main.ts:7: Deno at run time outside host/; use host/mod.ts: a host port the " +
    "composition root hands in",
  ]);
});

Deno.test("layerProblems allows Deno types anywhere, values in host/, provider_sdk/", async () => {
  const problems = await problemsOf({
    "app/process.ts": [
      `export let first: { readonly signal: Deno.Signal } | null = null;`,
      `export function stat(info: Deno.FileInfo): boolean { return info.isFile; }`,
      `export type Os = typeof Deno.build.os;`,
      `export interface Closer extends Deno.Closer {}`,
      `export class C implements Deno.Closer { close(): void {} }`,
      `export const s = null as Deno.Signal | null;`,
      "",
    ].join("\n"),
    "host/env.ts": `export const env = (n: string) => Deno.env.get(n);\n`,
    "provider_sdk/run.ts": `export const stop = () => Deno.exit(0);\n`,
  });
  assert.deepEqual(problems, []);
});

Deno.test("the repository's src/ has no layering problem", async () => {
  assert.deepEqual(await layerProblems(), []);
});
