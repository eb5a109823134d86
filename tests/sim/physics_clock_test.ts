// The sim's non_interacting physics, stepped on request: the steps a timer at tick_rate_hz would
// have run, of the same size, whatever the request times; bounded after a long silence.
import assert from "node:assert/strict";
import { MAX_CATCH_UP_STEPS, PhysicsClock } from "../../examples/providers/sim/physics_clock.ts";
import { createTempCtl } from "../../examples/providers/sim/tempctl.ts";
import type { SimDevice } from "../../examples/providers/sim/sim_device.ts";

/** A device that records the dt of every tick. */
function recorder(): { device: SimDevice; dts: number[] } {
  const dts: number[] = [];
  const device = { tick: (dt: number) => void dts.push(dt) } as unknown as SimDevice;
  return { device, dts };
}

Deno.test("PhysicsClock runs the whole steps due since the last one, each 1 / tick_rate_hz long", () => {
  let now = 1000;
  const { device, dts } = recorder();
  const clock = new PhysicsClock([device], 10, () => now);
  clock.advance();
  assert.deepStrictEqual(dts, [], "no time has passed");
  now = 1099;
  clock.advance();
  assert.deepStrictEqual(dts, [], "not a whole step yet");
  now = 1350;
  clock.advance();
  assert.deepStrictEqual(dts, [0.1, 0.1, 0.1]);
  now = 1399;
  clock.advance();
  assert.strictEqual(dts.length, 3, "the 50 ms left over are not lost, not run early either");
  now = 1400;
  clock.advance();
  assert.strictEqual(dts.length, 4, "the leftover completes the fourth step");
});

Deno.test("PhysicsClock steps every device once per step, in order", () => {
  let now = 0;
  const order: string[] = [];
  const dev = (id: string) => ({ tick: () => void order.push(id) }) as unknown as SimDevice;
  const clock = new PhysicsClock([dev("a"), dev("b")], 100, () => now);
  now = 20;
  clock.advance();
  assert.deepStrictEqual(order, ["a", "b", "a", "b"]);
});

Deno.test("PhysicsClock after a long silence runs at most MAX_CATCH_UP_STEPS and skips the rest", () => {
  let now = 0;
  const { device, dts } = recorder();
  const clock = new PhysicsClock([device], 10, () => now);
  now = (MAX_CATCH_UP_STEPS + 500) * 100 + 30;
  clock.advance();
  assert.strictEqual(dts.length, MAX_CATCH_UP_STEPS);
  now += 99;
  clock.advance();
  assert.strictEqual(dts.length, MAX_CATCH_UP_STEPS, "the skipped time is not owed afterwards");
  now += 1;
  clock.advance();
  assert.strictEqual(dts.length, MAX_CATCH_UP_STEPS + 1);
});

Deno.test("PhysicsClock gives a device the state of one ticked at the rate, however requests fall", () => {
  // tempctl in closed loop: a bang-bang controller with hysteresis, so the step size matters.
  const stepped = createTempCtl("t", {});
  const ticked = createTempCtl("t", {});
  for (const d of [stepped, ticked]) {
    d.outputs.mode = "closed";
    d.outputs.setpoint = 80;
  }
  let now = 0;
  const clock = new PhysicsClock([stepped], 10, () => now);
  for (const at of [30, 130, 1130, 1175, 2999, 3000, 7777]) {
    now = at;
    clock.advance();
  }
  for (let i = 0; i < 77; i++) ticked.tick(0.1);
  const read = (d: SimDevice) => d.definition.signals.map((sig) => [sig.id, sig.read()]);
  assert.deepStrictEqual(stepped.outputs, ticked.outputs);
  assert.deepStrictEqual(read(stepped), read(ticked));
  assert.ok((read(stepped).find(([id]) => id === "tc1_temp")![1] as number) > 30, "it heated");
});
