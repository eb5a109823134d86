/**
 * The generated modules under src/ (scripts/gen_*.ts) are plain JavaScript in ASCII with their
 * types in a declaration file next to them, and each declaration file declares exactly the names
 * the module exports. Why JavaScript: Deno keeps a transpiled `.ts` module with an inline source
 * map that also holds the original source; a `.js` module is kept as its text alone.
 */
import assert from "node:assert/strict";

const SRC = new URL("../../src/", import.meta.url);

/** Every `.js` file under src/, relative to it. */
async function jsModules(dir = SRC, prefix = ""): Promise<string[]> {
  const out: string[] = [];
  for await (const e of Deno.readDir(dir)) {
    if (e.isDirectory) {
      out.push(...await jsModules(new URL(`${e.name}/`, dir), `${prefix}${e.name}/`));
    } else if (e.name.endsWith(".js")) out.push(`${prefix}${e.name}`);
  }
  return out.sort();
}

/** The value names a declaration file exports (`default` for a default export). */
function declaredNames(dts: string): string[] {
  const names = [...dts.matchAll(/^export declare (?:const|let|var|function|class) ([\w$]+)/gm)]
    .map((m) => m[1]!);
  if (/^export default /m.test(dts)) names.push("default");
  return names.sort();
}

Deno.test("the generated modules are the .js files under src/", async () => {
  assert.deepEqual(await jsModules(), [
    "adpp/_codec.js",
    "config/_structure_validator.js",
    "http/_console_assets.js",
    "http/_request_validators.js",
    "sparkplug/_codec.js",
  ]);
});

Deno.test("every .js module under src/ is pure ASCII", async () => {
  for (const rel of await jsModules()) {
    const text = await Deno.readTextFile(new URL(rel, SRC));
    const at = text.search(/[\u0080-\uffff]/);
    assert.equal(
      at,
      -1,
      `src/${rel}: non-ASCII character at offset ${at}. V8 stores a module source holding even ` +
        `one non-ASCII character as a two-byte (UTF-16) string, twice the memory for the life ` +
        `of the process: the generator must escape it (asciiOnly in scripts/generated_js.ts)`,
    );
  }
});

Deno.test("every .js module under src/ takes its types from a declaration file that declares exactly its exports", async () => {
  for (const rel of await jsModules()) {
    const js = new URL(rel, SRC);
    const base = rel.slice(rel.lastIndexOf("/") + 1, -".js".length);
    const first = (await Deno.readTextFile(js)).split("\n")[0];
    assert.equal(first, `// @ts-self-types="./${base}.d.ts"`, `src/${rel}: first line`);
    const dts = await Deno.readTextFile(new URL(`${base}.d.ts`, js));
    const exported = Object.keys(await import(js.href)).sort();
    assert.ok(exported.length > 0, `src/${rel} exports something`);
    const where = `src/${rel.slice(0, -".js".length)}.d.ts vs. src/${rel}`;
    assert.deepEqual(declaredNames(dts), exported, where);
  }
});
