/**
 * asciiOnly (scripts/generated_js.ts), with which every generator writes its module: the text
 * becomes ASCII and each string or regular expression literal keeps its value.
 */
import assert from "node:assert/strict";
import { asciiOnly, typesUrlOf } from "../../scripts/generated_js.ts";

/** Evaluates a module text (ASCII or not) and returns its `value` export. */
async function valueOf(source: string): Promise<unknown> {
  const url = `data:text/javascript;base64,${
    btoa(String.fromCharCode(...new TextEncoder().encode(source)))
  }`;
  return (await import(url)).value;
}

Deno.test("asciiOnly escapes every non-ASCII code unit and keeps literal values", async () => {
  const cases = [
    `export const value = ${JSON.stringify("caf\u00e9 \u2264 5 \u2026 \u{1F6D1} end")};`,
    `export const value = "\\\\\u00b1";`, // an escaped backslash, then the character
    `export const value = /^\u00e9+\u{1F6D1}$/u.test("\u00e9\u00e9\u{1F6D1}");`,
    `export const value = \`\u03bc\${1}\`; // \u00b5 in a comment`,
    `export const value = "ascii only";`,
  ];
  for (const source of cases) {
    const escaped = asciiOnly(source);
    assert.doesNotMatch(escaped, /[\u0080-\uffff]/, escaped);
    assert.deepEqual(await valueOf(escaped), await valueOf(source), source);
  }
  assert.equal(asciiOnly("\u{1F6D1}"), "\\ud83d\\uded1", "outside the BMP: a surrogate pair");
  assert.equal(asciiOnly('"\u00e9"'), '"\\u00e9"');
  assert.equal(asciiOnly("plain text\n"), "plain text\n");
});

Deno.test("asciiOnly refuses a non-ASCII character right after an odd run of backslashes", () => {
  // "\é" is an identity escape, "\<U+2028>" a line continuation: "\\u00e9" would change both.
  assert.throws(() => asciiOnly('"\\\u00e9"'), /U\+00e9 at offset 2 follows a backslash/);
  assert.throws(() => asciiOnly('x = "\\\\\\\u2028"'), /U\+2028 at offset 8 follows a backslash/);
});

Deno.test("typesUrlOf names the declaration file next to a .js module", () => {
  const js = new URL("file:///repo/src/adpp/_codec.js");
  assert.equal(typesUrlOf(js).href, "file:///repo/src/adpp/_codec.d.ts");
  assert.throws(() => typesUrlOf(new URL("file:///repo/src/adpp/_codec.ts")), /not a \.js module/);
});
