/**
 * A ChangeWalk continued later says when changes it had not reached yet were dropped: by the
 * device's polls going (time bound) and by the byte bound trimming one signal's changes while the
 * device's polls stay (the replay of Sparkplug store and forward counts and logs `overtaken`).
 */
import assert from "node:assert/strict";
import type { TypedValue } from "../../src/common/mod.ts";
import { ChangeWalk, exactDouble } from "../../src/history/mod.ts";
import { DeviceRing, RingBudget, SignalRing } from "../../src/history/ring.ts";

const dbl = (x: number): TypedValue => ({ type: "double", double: x });

Deno.test("ChangeWalk is overtaken when the byte bound trims a signal's changes past its cursor, though the device's polls are kept", () => {
  // Room for the device's poll times to grow twice (16 -> 24 -> 36) but never the signal's ring.
  const budget = new RingBudget(16 * 8 + 16 * 13 + 8 * 8 + 12 * 8);
  const dev = new DeviceRing("p", "d", budget);
  const sig = new SignalRing("s", budget);
  dev.signals.set("s", sig);
  const poll = (i: number) => {
    const seq = dev.addPoll(i * 100, -Infinity);
    sig.record(seq, dbl(i), exactDouble(dbl(i)), "OK", dev.firstSeq);
  };
  for (let i = 0; i < 10; i++) poll(i);
  const walk = new ChangeWalk(dev, [sig], 0, dev.nextSeq);
  const walked: number[] = [];
  const step = () => walk.next((_id, s) => walked.push(s.num));
  step();
  step();
  assert.deepEqual(walked, [0, 1]);
  // Sixteen more polls, each a change: the signal's ring may not grow and drops its oldest ones.
  for (let i = 10; i < 26; i++) poll(i);
  assert.equal(dev.firstSeq, 0, "the device's polls are all kept");
  assert.ok(sig.firstSeq() > 2, "the signal's changes 2.. were trimmed");
  while (step() !== null) { /* walk to the end */ }
  assert.equal(
    walk.overtaken || walked.length === 10,
    true,
    `the walk lost changes without saying so: walked ${JSON.stringify(walked)}, overtaken false`,
  );
});

Deno.test("ChangeWalk is not overtaken when the changes trimmed were walked already", () => {
  const budget = new RingBudget(16 * 8 + 16 * 13 + 8 * 8 + 12 * 8);
  const dev = new DeviceRing("p", "d", budget);
  const sig = new SignalRing("s", budget);
  dev.signals.set("s", sig);
  const poll = (i: number) => {
    const seq = dev.addPoll(i * 100, -Infinity);
    sig.record(seq, dbl(i), exactDouble(dbl(i)), "OK", dev.firstSeq);
  };
  for (let i = 0; i < 10; i++) poll(i);
  const walk = new ChangeWalk(dev, [sig], 0, dev.nextSeq);
  const walked: number[] = [];
  for (let i = 0; i < 6; i++) walk.next((_id, s) => walked.push(s.num));
  // Trims changes 0..3 only (four more polls past the signal ring's room).
  for (let i = 10; i < 20; i++) poll(i);
  assert.equal(sig.firstSeq(), 4);
  while (walk.next((_id, s) => walked.push(s.num)) !== null) { /* to the end */ }
  assert.deepEqual(walked, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  assert.equal(walk.overtaken, false);
});
