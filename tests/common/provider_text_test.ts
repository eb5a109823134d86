import assert from "node:assert/strict";
import {
  PROVIDER_TEXT_CHARS,
  providerText,
  providerTextWithin,
  quoteProviderText,
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

Deno.test("providerTextWithin never splits a surrogate pair at its cut: the character is left out whole", () => {
  // "a" then U+1F600 (two UTF-16 units): a cut at 2 units would keep half of it.
  assert.equal(providerTextWithin("a\u{1F600}b", 2), "a\u2026");
  assert.equal(providerTextWithin("a\u{1F600}b", 3), "a\u{1F600}\u2026");
  assert.ok(providerTextWithin("\u{1F600}".repeat(50), 81).isWellFormed());
});
