/**
 * Every module the runtime and the simulated provider load is pure ASCII (bench/README.md,
 * "Footprint", fourth round): V8 keeps each module's source text for the life of the process and
 * stores a text that holds even one non-ASCII character as a two-byte string, so a single `--` in
 * a comment written as an em dash doubles that module's share of the heap. In code, write a
 * non-ASCII character as an escape (`"\u2026"`); in comments, write ASCII (`->`, `<=`, `sec. 4`).
 */
import assert from "node:assert/strict";
import { ModuleGraph } from "../helpers/module_graph.ts";

/** `file:line:column U+XXXX` of each line's first character outside printable ASCII (tab and CR allowed). */
export function nonAsciiPlaces(file: string, text: string): string[] {
  const places: string[] = [];
  text.split("\n").forEach((line, i) => {
    const col = line.search(/[^\t\n\r\x20-\x7e]/);
    if (col >= 0) {
      const code = line.charCodeAt(col).toString(16).toUpperCase().padStart(4, "0");
      places.push(`${file}:${i + 1}:${col + 1} U+${code}`);
    }
  });
  return places;
}

Deno.test("nonAsciiPlaces names the line, column and character", () => {
  assert.deepStrictEqual(nonAsciiPlaces("a.ts", "ok\nx = 1; // \u2192 y\n\u00b1"), [
    "a.ts:2:11 U+2192",
    "a.ts:3:1 U+00B1",
  ]);
  assert.deepStrictEqual(nonAsciiPlaces("a.ts", 'const s = "\\u2026";'), []);
});

for (
  const [name, entry] of [
    ["runtime", "src/main.ts"],
    ["simulated provider", "examples/providers/sim/main.ts"],
  ]
) {
  Deno.test(`every module the ${name} loads is ASCII`, async () => {
    const files = (await ModuleGraph.of(entry!)).modules.filter((s) => s.startsWith("file:"));
    assert.ok(files.length > 20, `the ${name}'s graph: ${files.join(", ")}`);
    const places: string[] = [];
    for (const spec of files) {
      const path = new URL(spec).pathname;
      places.push(...nonAsciiPlaces(path, await Deno.readTextFile(path)));
    }
    assert.deepStrictEqual(places, []);
  });
}
