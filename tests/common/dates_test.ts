/** transitionDate: a transition's date never falls behind the one before it (a wall clock step back). */
import assert from "node:assert/strict";
import { transitionDate } from "../../src/common/mod.ts";

Deno.test("transitionDate takes the wall clock, but never a date before the transition before it", () => {
  assert.equal(transitionDate(1000, null), 1000, "a first transition: the clock");
  assert.equal(transitionDate(1000, undefined), 1000, "a first transition: the clock");
  assert.equal(transitionDate(1500, 1000), 1500, "the clock ahead of the one before: the clock");
  assert.equal(transitionDate(1000, 1000), 1000, "the same instant");
  assert.equal(
    transitionDate(-9000, 1000),
    1000,
    "stepped back 10 s: the date before, not earlier",
  );
  assert.equal(transitionDate(0, 0), 0, "a date of 0 is a date, not 'none'");
  assert.equal(transitionDate(-5, 0), 0, "a date of 0 before it holds too");
});
