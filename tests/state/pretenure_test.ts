/**
 * The poll path's per-sample objects (typed values, cache samples) are made so that V8 cannot
 * pretenure them (src/common/typed_value.ts): with the on-board history on, V8 had pretenured
 * the object literals they were made from, and every sample of every poll went to old space as
 * garbage (bench/README.md, "Where history's RSS goes"). Checked in a child with V8's test
 * intrinsics, against an object literal of the same shape as the control.
 */
import assert from "node:assert/strict";
import { doubleValue } from "../../src/common/mod.ts";
import { typedValueFromWire } from "../../src/adpp/mod.ts";
import { signalSample } from "../../src/state/mod.ts";

Deno.test("typed values and cache samples are born young however long their kind lives (no allocation site for V8 to pretenure)", async () => {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      // One thread (no concurrent compiling): the same decisions however busy the machine.
      "--v8-flags=--allow-natives-syntax,--expose-gc,--single-threaded",
      new URL("./_pretenure_probe.ts", import.meta.url).pathname,
    ],
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder().decode(out.stdout);
  assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
  const r = JSON.parse(text.trim().split("\n").at(-1)!);
  assert.equal(r.literal, false, "the control: V8 pretenures an object literal kept alive");
  assert.deepEqual(r, {
    literal: false,
    doubleValue: true,
    boolValue: true,
    stringValue: true,
    fromWire: true,
    signalSample: true,
  });
});

Deno.test("typed values and cache samples made without a literal are plain objects to every reader", () => {
  // deepStrictEqual compares prototypes: they equal the literals the rest of the code writes.
  assert.deepStrictEqual(doubleValue(1.5), { type: "double", double: 1.5 });
  assert.deepStrictEqual(typedValueFromWire({ bool_value: true }), { type: "bool", bool: true });
  assert.deepStrictEqual(typedValueFromWire({ int64_value: 7 }), { type: "int64", int64: 7 });
  assert.deepStrictEqual(typedValueFromWire({ uint64_value: 8 }), { type: "uint64", uint64: 8 });
  assert.deepStrictEqual(typedValueFromWire({ string_value: "x" }), {
    type: "string",
    string: "x",
  });
  const s = signalSample(doubleValue(2), "STALE", 10, 20);
  assert.deepStrictEqual(s, {
    value: { type: "double", double: 2 },
    quality: "STALE",
    timestampMs: 10,
    receivedMono: 20,
  });
  assert.equal(Object.getPrototypeOf(s), Object.prototype);
  assert.equal(
    JSON.stringify(s),
    '{"value":{"type":"double","double":2},"quality":"STALE","timestampMs":10,"receivedMono":20}',
  );
  assert.deepStrictEqual({ ...doubleValue(3) }, { type: "double", double: 3 });
});
