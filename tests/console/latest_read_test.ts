/** console/latest_read.js: the newest read answered wins, whatever order the answers arrive in. */
import assert from "node:assert/strict";
import { LatestRead, OVERTAKEN } from "../../console/latest_read.js";

/** A read the test answers (or fails) when it chooses. */
function pending<T>() {
  return Promise.withResolvers<T>();
}

Deno.test("LatestRead drops an answer arriving after a newer read's; an older one arriving first is applied", async () => {
  const reads = new LatestRead();
  const [a, b, c] = [pending<string>(), pending<string>(), pending<string>()];
  const first = reads.read(() => a.promise);
  const second = reads.read(() => b.promise);
  const third = reads.read(() => c.promise);
  a.resolve("first");
  assert.equal(await first, "first", "nothing newer applied yet: shown");
  c.resolve("third");
  assert.equal(await third, "third");
  b.resolve("second");
  assert.equal(await second, OVERTAKEN, "asked before the third, answered after it");
});

Deno.test("LatestRead rejects with a read's error unless a newer read was applied first; an error applied drops older answers", async () => {
  const reads = new LatestRead();
  const [a, b, c] = [pending<string>(), pending<string>(), pending<string>()];
  const first = reads.read(() => a.promise);
  const second = reads.read(() => b.promise);
  const third = reads.read(() => c.promise);
  b.reject(new Error("503"));
  await assert.rejects(second, /503/);
  a.resolve("first");
  assert.equal(await first, OVERTAKEN, "older than the error shown");
  c.resolve("third");
  assert.equal(await third, "third");
  const fourth = pending<string>();
  const late = reads.read(() => fourth.promise);
  assert.equal(await reads.read(() => Promise.resolve("fifth")), "fifth");
  fourth.reject(new Error("late"));
  assert.equal(await late, OVERTAKEN, "an overtaken read's error is dropped too");
});
