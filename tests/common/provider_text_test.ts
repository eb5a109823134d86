import assert from "node:assert/strict";
import {
  PROVIDER_TEXT_CHARS,
  providerText,
  providerTextWithin,
  quoteProviderText,
  quoteProviderTextWithin,
} from "../../src/common/mod.ts";

Deno.test("providerText keeps PROVIDER_TEXT_CHARS characters and cuts one more with an ellipsis", () => {
  const limit = "d".repeat(PROVIDER_TEXT_CHARS);
  assert.equal(PROVIDER_TEXT_CHARS, 80);
  assert.equal(providerText(""), "");
  assert.equal(providerText(limit), limit);
  assert.equal(providerText(`${limit}x`), `${limit}\u2026`);
});

Deno.test("quoteProviderText JSON-quotes the cut text", () => {
  const limit = "d".repeat(PROVIDER_TEXT_CHARS);
  assert.equal(quoteProviderText('a"b'), '"a\\"b"');
  assert.equal(quoteProviderText(`${limit}xy`), `"${limit}\u2026"`);
});

Deno.test("quoteProviderText escapes the line breaks JSON.stringify leaves raw: NEL U+0085, U+2028, U+2029", () => {
  // Before: kept raw, a line break to some log viewers, editors and JavaScript readers.
  assert.equal(
    quoteProviderText("a\u0085INFO b\u2028c\u2029d"),
    '"a\\u0085INFO b\\u2028c\\u2029d"',
  );
  assert.equal(JSON.parse(quoteProviderText("a\u0085b\u2028c\u2029d")), "a\u0085b\u2028c\u2029d");
  // Cut first, then escaped: the bound counts the text's characters, not the escapes.
  const name = "\u2028".repeat(PROVIDER_TEXT_CHARS + 1);
  assert.equal(quoteProviderText(name), `"${"\\u2028".repeat(PROVIDER_TEXT_CHARS)}\u2026"`);
  // Their neighbours stay as they are: NBSP, the letters, U+2027 and U+202A.
  assert.equal(quoteProviderText("\u00a0\u00e9\u2027\u202a"), '"\u00a0\u00e9\u2027\u202a"');
  assert.doesNotMatch(quoteProviderText("x\u0085\u2028\u2029\n\r"), /[\n\r\u0085\u2028\u2029]/);
});

Deno.test("quoteProviderText escapes DEL U+007F and every C1 control U+0080-U+009F, which JSON.stringify leaves raw", () => {
  // DEL, the first and last C1, CSI (a terminal's escape sequence start) and NEL, each alone.
  for (const c of ["\u007f", "\u0080", "\u009b", "\u0085", "\u009f"]) {
    const hex = c.charCodeAt(0).toString(16).padStart(4, "0");
    assert.equal(quoteProviderText(`a${c}b`), `"a\\u${hex}b"`);
  }
  // Every code point of both classes: none is left raw, and the quoted text parses back to it.
  const all = Array.from({ length: 0x9f - 0x7f + 1 }, (_, i) => String.fromCharCode(0x7f + i))
    .join("");
  const quoted = quoteProviderTextWithin(all, all.length);
  assert.doesNotMatch(quoted, /[\u007f-\u009f]/);
  assert.equal(JSON.parse(quoted), all);
  // The characters next to them are as they were: `~` U+007E and NBSP U+00A0.
  assert.equal(quoteProviderText("~\u00a0"), '"~\u00a0"');
});

Deno.test("providerTextWithin never splits a surrogate pair at its cut: the character is left out whole", () => {
  // "a" then U+1F600 (two UTF-16 units): a cut at 2 units would keep half of it.
  assert.equal(providerTextWithin("a\u{1F600}b", 2), "a\u2026");
  assert.equal(providerTextWithin("a\u{1F600}b", 3), "a\u{1F600}\u2026");
  assert.ok(providerTextWithin("\u{1F600}".repeat(50), 81).isWellFormed());
});
