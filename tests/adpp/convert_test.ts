import assert from "node:assert/strict";
import { typedValueFromWire, type WireValue, WireValueType } from "../../src/adpp/mod.ts";
import { sameValue, type TypedValue } from "../../src/common/mod.ts";
import { wireRepeats } from "./_wire_reference.ts";

// Wire values as providers send them: each member, with and without `type`, and values that
// are equal under one comparison and not another (0 and -0, NaN, 1 as double and as int64).
const WIRE: WireValue[] = [
  { double_value: 1.5 },
  { type: WireValueType.DOUBLE, double_value: 1.5 },
  { double_value: 0 },
  { double_value: -0 },
  { double_value: NaN },
  { double_value: Infinity },
  { double_value: 1 },
  { int64_value: 1 },
  { int64_value: 1n },
  { uint64_value: 1 },
  { bool_value: true },
  { bool_value: false },
  { type: WireValueType.BOOL, bool_value: true },
  { string_value: "open" },
  { string_value: "" },
  { string_value: "closed" },
  { bytes_value: new Uint8Array([1]) },
  // two members set: typedValueFromWire takes the first in its order
  { double_value: 2, bool_value: true },
  { bool_value: true, string_value: "open" },
  {},
];

Deno.test("wireRepeats(t, v) only when typedValueFromWire(v) equals t: a kept value is the value a new one would be", () => {
  const typed = WIRE.map(typedValueFromWire).filter((t): t is TypedValue => t !== null);
  let kept = 0;
  for (const t of typed) {
    for (const v of WIRE) {
      const made = typedValueFromWire(v);
      const same = made !== null && sameValue(made, t) &&
        made.type === t.type && (made.type !== "double" || t.type !== "double" ||
          made.non_finite === t.non_finite);
      if (wireRepeats(t, v)) {
        kept++;
        assert.ok(same, `kept ${JSON.stringify(t)} for ${String(Object.entries(v))}`);
        assert.deepEqual(made, t);
      }
    }
  }
  // And it does keep the common cases: an unchanged finite double, bool and string.
  assert.ok(wireRepeats(typedValueFromWire({ double_value: 1.5 }), { double_value: 1.5 }));
  assert.ok(wireRepeats(typedValueFromWire({ bool_value: false }), { bool_value: false }));
  assert.ok(wireRepeats(typedValueFromWire({ string_value: "" }), { string_value: "" }));
  assert.ok(!wireRepeats(typedValueFromWire({ double_value: 0 }), { double_value: -0 }));
  assert.ok(!wireRepeats(typedValueFromWire({ double_value: NaN }), { double_value: NaN }));
  assert.ok(!wireRepeats(null, { double_value: 1 }));
  assert.ok(kept >= 8);
});
