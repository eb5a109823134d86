/**
 * transitionDate: a transition's date never falls behind the one before it (a wall clock step
 * back). DepartedDates: the last dates of things that went away, kept for their return.
 */
import assert from "node:assert/strict";
import { DepartedDates, transitionDate } from "../../src/common/mod.ts";

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

Deno.test("DepartedDates keeps the later date of a key until taken, at most max keys, the one kept longest ago let go of first", () => {
  const dates = new DepartedDates(2);
  dates.keep("a", 1000);
  dates.keep("a", 500);
  assert.equal(dates.take("a"), 1000, "the later of the two");
  assert.equal(dates.take("a"), undefined, "taken: gone");
  dates.keep("a", 1);
  dates.keep("b", 2);
  dates.keep("a", 3); // kept again: the newest now
  dates.keep("c", 4); // one too many: b, kept longest ago, goes
  assert.equal(dates.size, 2);
  assert.equal(dates.take("b"), undefined);
  assert.equal(dates.take("a"), 3);
  assert.equal(dates.take("c"), 4);
  assert.equal(dates.size, 0);
});
