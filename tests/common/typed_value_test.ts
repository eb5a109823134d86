import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import {
  doubleValue,
  exactInteger,
  makeTypedValue,
  sameValue,
  toJsonText,
} from "../../src/common/mod.ts";

Deno.test("toJsonText writes bigints as their exact decimal digits, anywhere in the value", () => {
  const body = {
    values: [
      { value: { type: "uint64", uint64: 18446744073709551615n } },
      { value: { type: "int64", int64: -9223372036854775808n } },
      { value: { type: "int64", int64: 5 } },
    ],
  };
  equal(
    toJsonText(body),
    '{"values":[{"value":{"type":"uint64","uint64":18446744073709551615}},' +
      '{"value":{"type":"int64","int64":-9223372036854775808}},' +
      '{"value":{"type":"int64","int64":5}}]}',
  );
});

Deno.test("toJsonText equals JSON.stringify when there is no bigint", () => {
  const body = { a: [1, 2.5, "x", null, true], b: { c: -0, d: NaN } };
  equal(toJsonText(body), JSON.stringify(body));
});

Deno.test("doubleValue names NaN and ±Infinity, and JSON shows the name next to a null double", () => {
  deepStrictEqual(doubleValue(1.5), { type: "double", double: 1.5 });
  equal(toJsonText(doubleValue(NaN)), '{"type":"double","double":null,"non_finite":"NaN"}');
  equal(
    toJsonText(doubleValue(Infinity)),
    '{"type":"double","double":null,"non_finite":"Infinity"}',
  );
  equal(
    toJsonText(doubleValue(-Infinity)),
    '{"type":"double","double":null,"non_finite":"-Infinity"}',
  );
  deepStrictEqual(makeTypedValue("double", NaN), doubleValue(NaN));
});

Deno.test("exactInteger keeps a bigint only outside the safe-integer range", () => {
  equal(exactInteger(9007199254740991n), 9007199254740991);
  equal(exactInteger(-9007199254740991n), -9007199254740991);
  equal(exactInteger(9007199254740992n), 9007199254740992n);
  equal(exactInteger(-9007199254740992n), -9007199254740992n);
  deepStrictEqual(makeTypedValue("uint64", 7n), { type: "uint64", uint64: 7 });
});

Deno.test("sameValue compares exact integers by value and doubles bitwise", () => {
  const big = (n: bigint) => ({ type: "uint64" as const, uint64: n });
  equal(sameValue(big(18446744073709551615n), big(18446744073709551615n)), true);
  equal(sameValue(big(18446744073709551615n), big(18446744073709551614n)), false);
  equal(sameValue(doubleValue(NaN), doubleValue(NaN)), true);
  equal(sameValue(doubleValue(0), doubleValue(-0)), false);
});
