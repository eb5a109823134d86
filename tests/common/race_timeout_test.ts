/** raceTimeout (src/common/host.ts): a promise against a clock's timer, no timer left behind. */
import assert from "node:assert/strict";
import { raceTimeout } from "../../src/common/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";

Deno.test("raceTimeout settles with the promise's value, or the fallback once its time is up, and leaves no timer behind", async () => {
  const clock = new ManualClock();
  assert.equal(await raceTimeout(clock, Promise.resolve("value"), 60_000, "fallback"), "value");
  assert.equal(clock.pendingTimers, 0);
  let settled = false;
  const late = raceTimeout(clock, new Promise<string>(() => {}), 10, "fallback");
  late.then(() => (settled = true));
  clock.advance(9);
  await flushMicrotasks();
  assert.equal(settled, false, "not before its time is up");
  clock.advance(1);
  assert.equal(await late, "fallback");
  assert.equal(clock.pendingTimers, 0);
});
