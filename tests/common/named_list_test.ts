import assert from "node:assert/strict";
import { namedList } from "../../src/common/mod.ts";

Deno.test("namedList names up to max items and counts the rest", () => {
  assert.equal(namedList([], 2), "");
  assert.equal(namedList(["a", "b"], 2), "a, b");
  assert.equal(namedList(["a", "b", "c"], 2), "a, b and 1 more");
  assert.equal(namedList(["a", "b", "c", "d", "e"], 1), "a and 4 more");
});
