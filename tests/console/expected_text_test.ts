/** The console's words for a read-back check's expectation (console/estop.js expectedText). */
import assert from "node:assert/strict";
import { expectedText } from "../../console/estop.js";

Deno.test("expectedText writes an e-stop read-back expectation as an operator reads it", () => {
  assert.equal(expectedText({ equals: 0 }, "rpm"), "= 0 rpm");
  assert.equal(expectedText({ equals: 0.123456 }, "bar"), "= 0.123456 bar"); // as configured
  assert.equal(expectedText({ equals: false }, "rpm"), "= false"); // no unit on a bool
  assert.equal(expectedText({ equals: "closed" }, ""), '= "closed"');
  assert.equal(expectedText({ min: 10, max: 20 }, "degC"), "10 to 20 degC");
  assert.equal(expectedText({ min: 10 }, "degC"), "\u2265 10 degC");
  assert.equal(expectedText({ max: -5 }, undefined), "\u2264 -5");
  assert.equal(expectedText({}, "degC"), "\u2014");
  assert.equal(expectedText(undefined, "degC"), "\u2014");
});
