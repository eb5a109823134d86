import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import {
  doubleValue,
  exactInteger,
  type Quality,
  sameValue,
  scalarOf,
  toJsonText,
  type TypedValue,
  worstQuality,
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
});

Deno.test("exactInteger keeps a bigint only outside the safe-integer range", () => {
  equal(exactInteger(9007199254740991n), 9007199254740991);
  equal(exactInteger(-9007199254740991n), -9007199254740991);
  equal(exactInteger(9007199254740992n), 9007199254740992n);
  equal(exactInteger(-9007199254740992n), -9007199254740992n);
});

Deno.test("sameValue compares exact integers by value and doubles bitwise", () => {
  const big = (n: bigint) => ({ type: "uint64" as const, uint64: n });
  equal(sameValue(big(18446744073709551615n), big(18446744073709551615n)), true);
  equal(sameValue(big(18446744073709551615n), big(18446744073709551614n)), false);
  equal(sameValue(doubleValue(NaN), doubleValue(NaN)), true);
  equal(sameValue(doubleValue(0), doubleValue(-0)), false);
});

Deno.test("worstQuality rolls up OK < STALE < FAULT < UNAVAILABLE, in any order", () => {
  const cases: Array<[Quality[], Quality]> = [
    [[], "OK"],
    [["OK", "OK"], "OK"],
    [["OK", "STALE", "OK"], "STALE"],
    [["STALE", "FAULT", "OK"], "FAULT"],
    [["FAULT", "STALE"], "FAULT"],
    [["OK", "UNAVAILABLE", "FAULT"], "UNAVAILABLE"],
    [["UNAVAILABLE", "FAULT", "STALE"], "UNAVAILABLE"],
  ];
  for (const [qualities, worst] of cases) {
    equal(worstQuality(qualities), worst, qualities.join(","));
    equal(worstQuality(new Set(qualities)), worst, "any iterable");
  }
});

/** One value of every type, and a different value of the same type. */
const PAIRS: Array<[TypedValue, TypedValue, unknown]> = [
  [{ type: "double", double: 1.5 }, { type: "double", double: 2.5 }, 1.5],
  [{ type: "int64", int64: -3 }, { type: "int64", int64: 3 }, -3],
  [{ type: "uint64", uint64: 2n ** 64n - 1n }, { type: "uint64", uint64: 7 }, 2n ** 64n - 1n],
  [{ type: "bool", bool: true }, { type: "bool", bool: false }, true],
  [{ type: "string", string: "on" }, { type: "string", string: "off" }, "on"],
  [{ type: "bytes", base64: "AQID" }, { type: "bytes", base64: "AQIE" }, "AQID"],
];

Deno.test("scalarOf returns the member named like the type", () => {
  for (const [v, , scalar] of PAIRS) equal(scalarOf(v), scalar, v.type);
});

Deno.test("sameValue tells every type's values apart, and never equates two types", () => {
  for (const [a, b] of PAIRS) {
    equal(sameValue(a, structuredClone(a)), true, a.type);
    equal(sameValue(a, b), false, a.type);
  }
  equal(sameValue({ type: "int64", int64: 5 }, { type: "uint64", uint64: 5 }), false);
  equal(sameValue({ type: "string", string: "AQID" }, { type: "bytes", base64: "AQID" }), false);
});
