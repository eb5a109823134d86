import assert from "node:assert/strict";
import { PROVIDER_TEXT_CHARS, providerText, quoteProviderText } from "../../src/common/mod.ts";

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
