import { match, ok, strictEqual as equal } from "node:assert/strict";
import { ULID_PATTERN, UlidGenerator } from "../../src/runs/mod.ts";

Deno.test("UlidGenerator encodes the millisecond time in the first 10 characters", () => {
  const gen = new UlidGenerator({ now: () => 1469918176385, random: (b) => b.fill(0) });
  const id = gen.next();
  match(id, ULID_PATTERN);
  // Reference value from the ULID specification's example timestamp.
  equal(id.slice(0, 10), "01ARYZ6S41");
  equal(id.slice(10), "0000000000000000");
});

Deno.test("UlidGenerator is strictly monotonic within a millisecond and when the clock steps back", () => {
  let now = 1760000000000;
  const gen = new UlidGenerator({ now: () => now, random: (b) => b.fill(0xff, 0, 9) });
  const ids = [gen.next(), gen.next(), gen.next()];
  now -= 5000;
  ids.push(gen.next());
  now += 10000;
  ids.push(gen.next());
  for (let i = 1; i < ids.length; i++) ok(ids[i]! > ids[i - 1]!, `${ids[i]} > ${ids[i - 1]}`);
  // Same millisecond: the random part counts up by one.
  equal(ids[0]!.slice(0, 10), ids[1]!.slice(0, 10));
  equal(ids[1]!.slice(-1), "1");
  equal(ids[0]!.slice(-1), "0");
  for (const id of ids) match(id, ULID_PATTERN);
});

Deno.test("UlidGenerator uses crypto randomness by default", () => {
  const gen = new UlidGenerator({ now: () => 0 });
  const a = gen.next();
  const b = new UlidGenerator({ now: () => 0 }).next();
  match(a, ULID_PATTERN);
  ok(a !== b, "two generators give different random parts");
});
