import { strictEqual as equal } from "node:assert/strict";
import { truncateUtf8, utf8Length } from "../../src/common/mod.ts";

const encoder = new TextEncoder();

Deno.test("utf8Length counts the bytes TextEncoder writes, lone surrogates as U+FFFD", () => {
  const cases = [
    "",
    "plain ASCII with\ttab and\nnewline",
    "\u0000\u007f", // control characters outside the fast path
    "°C µS/cm", // two-byte
    "温度 €", // three-byte
    "🌡️ 🔥", // surrogate pairs (four bytes each) and a variation selector
    "\ud83c", // a lone high surrogate at the end
    "\ud83cx", // a lone high surrogate before an ASCII character
    "\ud83c\ud83c\udf21", // a lone high surrogate before a pair
    "\udf21a", // a lone low surrogate
    "\ud83c°", // a lone high surrogate before a two-byte character
  ];
  for (const s of cases) {
    equal(utf8Length(s), encoder.encode(s).length, JSON.stringify(s));
  }
});

Deno.test("truncateUtf8 never splits a code point", () => {
  equal(truncateUtf8("ab°C", 3), "ab");
  equal(truncateUtf8("ab°C", 4), "ab°");
  equal(truncateUtf8("🔥🔥", 5), "🔥");
  equal(truncateUtf8("short", 100), "short");
});
