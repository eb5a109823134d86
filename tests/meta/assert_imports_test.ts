/**
 * Deno 2.9's `node:assert/strict` gives strict `equal`/`deepEqual` on its default export but LOOSE
 * ones as named exports: `import { equal } from "node:assert/strict"; equal(1, "1")` passes. 27
 * test files used them, so their assertions compared loosely. Named imports of the loose names are
 * refused here; import `strictEqual as equal` (or use the default export) instead.
 */
import assert from "node:assert/strict";
import { deepEqual as namedDeepEqual, equal as namedEqual } from "node:assert/strict";

const LOOSE = new Set(["equal", "deepEqual", "notEqual", "notDeepEqual"]);
const IMPORT = /import\s*\{([^}]*)\}\s*from\s*"node:assert(?:\/strict)?"/g;

async function* sources(dir: URL): AsyncGenerator<URL> {
  for await (const e of Deno.readDir(dir)) {
    const url = new URL(e.name + (e.isDirectory ? "/" : ""), dir);
    if (e.isDirectory) yield* sources(url);
    else if (e.name.endsWith(".ts")) yield url;
  }
}

Deno.test("the loose named exports of node:assert/strict are what this file guards against", () => {
  // If Deno fixes its named exports this test fails: then the guard below can go.
  assert.doesNotThrow(() => namedEqual(1 as unknown, "1"));
  assert.doesNotThrow(() => namedDeepEqual({ a: 1 } as unknown, { a: "1" }));
  assert.throws(() => assert.equal(1 as unknown, "1"));
});

Deno.test("no test or bench file imports a loose assertion by name", async () => {
  const offenders: string[] = [];
  for (const root of ["../../tests/", "../../bench/", "../../scripts/"]) {
    for await (const file of sources(new URL(root, import.meta.url))) {
      if (file.pathname.endsWith("/tests/meta/assert_imports_test.ts")) continue;
      const text = await Deno.readTextFile(file);
      for (const m of text.matchAll(IMPORT)) {
        for (const raw of m[1]!.split(",")) {
          const name = raw.trim().split(/\s+as\s+/)[0];
          if (LOOSE.has(name!)) offenders.push(`${file.pathname}: ${name}`);
        }
      }
    }
  }
  assert.deepEqual(offenders, []);
});
