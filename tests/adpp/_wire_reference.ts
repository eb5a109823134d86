/**
 * Reference answers on generated-decoder objects (WireValue) for what the poll path's SampleBatch
 * decides on its own columns (src/adpp/read_signals.ts `repeats` / `typeAgrees`): the tests check
 * the fast path against these. No runtime code calls them; they live here, not in src/.
 */
import { valueTypeToWire, type WireValue } from "../../src/adpp/mod.ts";
import type { TypedValue, ValueType } from "../../src/common/mod.ts";

/**
 * Whether `typedValueFromWire(v)` would make a value equal to `t` (as sameValue compares): a
 * signal that did not change keeps its typed value instead of a new one per poll. Finite
 * doubles, bools and strings; anything else answers false (a new value is made).
 */
export function wireRepeats(t: TypedValue | null | undefined, v: WireValue | undefined): boolean {
  if (!t || !v) return false;
  switch (t.type) {
    case "double":
      return v.double_value !== undefined && t.non_finite === undefined &&
        Object.is(v.double_value, t.double);
    case "bool":
      return v.bool_value === t.bool && v.double_value === undefined &&
        v.int64_value === undefined && v.uint64_value === undefined;
    case "string":
      return v.string_value === t.string && v.double_value === undefined &&
        v.int64_value === undefined && v.uint64_value === undefined && v.bool_value === undefined;
    default:
      return false;
  }
}

/**
 * Whether a Value's own `type` agrees with its populated member's type `t`. An UNSPECIFIED (0)
 * `type` states nothing and agrees with any member.
 */
export function wireTypeAgrees(v: WireValue, t: ValueType): boolean {
  return !v.type || v.type === valueTypeToWire(t);
}
