/**
 * Child of pretenure_test.ts, run with `--v8-flags=--allow-natives-syntax,--expose-gc`: for each
 * way the poll path makes a per-sample object, keeps thousands of them alive across minor GCs
 * (what makes V8 pretenure an allocation site: most of its objects survive the young
 * generation), then asks whether a fresh one is still born young. Prints one JSON line.
 */
import { boolValue, doubleValue, stringValue } from "../../src/common/mod.ts";
import { typedValueFromWire } from "../../src/adpp/mod.ts";
import { signalSample } from "../../src/state/mod.ts";

const young = new Function("o", "return %InYoungGeneration(o)") as (o: unknown) => boolean;
const gc = (globalThis as unknown as { gc: (o: { type: "minor" }) => void }).gc;

/** Whether `make`'s objects are still born young after most of them outlived minor GCs. */
function bornYoungAfterSurvivals(make: (i: number) => unknown): boolean {
  const keep: unknown[] = [];
  for (let round = 0; round < 30; round++) {
    for (let i = 0; i < 2000; i++) keep.push(make(i));
    gc({ type: "minor" });
  }
  let youngCount = 0;
  for (let i = 0; i < 100; i++) if (young(make(i))) youngCount++;
  return keep.length > 0 && youngCount === 100;
}

console.log(JSON.stringify({
  // The control: an object literal of the same shape, which V8 does pretenure.
  literal: bornYoungAfterSurvivals((i) => ({ type: "double", double: i + 0.5 })),
  doubleValue: bornYoungAfterSurvivals((i) => doubleValue(i + 0.5)),
  boolValue: bornYoungAfterSurvivals((i) => boolValue(i % 2 === 0)),
  stringValue: bornYoungAfterSurvivals((i) => stringValue(`s${i}`)),
  fromWire: bornYoungAfterSurvivals((i) => typedValueFromWire({ int64_value: i })),
  signalSample: bornYoungAfterSurvivals((i) => signalSample(null, "OK", i, i)),
}));
