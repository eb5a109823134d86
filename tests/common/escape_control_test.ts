/**
 * escapeControl keeps a log line one line and printable: C0 controls, DEL and the C1 controls
 * (U+0080-U+009F: NEL U+0085 ends a line in some log viewers) are escaped, tabs and other text
 * kept; hasControlCharacter finds the same set (tab included).
 */
import assert from "node:assert/strict";
import { escapeControl, hasControlCharacter } from "../../src/common/mod.ts";

Deno.test("escapeControl escapes C0, DEL and every C1 control character (U+0080-U+009F), and keeps tabs and U+00A0 on", () => {
  assert.equal(escapeControl("a\nb\r\nc\rd\u001be\u007ff"), "a\\nb\\nc\\x0dd\\x1be\\x7ff");
  assert.equal(escapeControl("x\ty"), "x\ty");
  // The C1 range, both ends and NEL.
  assert.equal(escapeControl("a\u0080b\u0085c\u009fd"), "a\\x80b\\x85c\\x9fd");
  for (let c = 0x80; c <= 0x9f; c++) {
    assert.equal(escapeControl(String.fromCharCode(c)), `\\x${c.toString(16)}`);
  }
  // The line and paragraph separators (before: kept raw, a line break to some log viewers).
  assert.equal(escapeControl("a\u2028b\u2029c"), "a\\u2028b\\u2029c");
  // One past the range: NBSP and the Latin-1 letters stay as they are.
  assert.equal(escapeControl("\u00a0\u00e9\u007e"), "\u00a0\u00e9\u007e");
});

Deno.test("hasControlCharacter finds C0, DEL and C1 control characters, not U+007E or U+00A0", () => {
  for (const c of [0x00, 0x09, 0x1f, 0x7f, 0x80, 0x85, 0x9f]) {
    assert.equal(hasControlCharacter(`id${String.fromCharCode(c)}`), true, c.toString(16));
  }
  for (const c of [0x20, 0x7e, 0xa0, 0xe9, 0x2028]) {
    assert.equal(hasControlCharacter(`id${String.fromCharCode(c)}`), false, c.toString(16));
  }
});
