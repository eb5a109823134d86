/**
 * history.memory_max_bytes holds for the rings' first entries too (src/history/ring.ts): a ring is
 * made with them only when they fit the budget, else with none (roomless), keeping nothing until
 * the budget has room for it. Before, every new ring added its first 16 entries to the budget
 * without asking it, so many devices and signals passed the bound from their starting sizes alone.
 */
import assert from "node:assert/strict";
import type { TypedValue } from "../../src/common/mod.ts";
import { ChangeWalk, exactDouble } from "../../src/history/mod.ts";
import { DeviceRing, RingBudget, type RingSample, SignalRing } from "../../src/history/ring.ts";

const dbl = (x: number): TypedValue => ({ type: "double", double: x });
/** A ring's first entries (FIRST_CAPACITY, 16): 8 bytes per poll time, 13 per change. */
const DEVICE_FIRST = 16 * 8;
const SIGNAL_FIRST = 16 * 13;

function values(dev: DeviceRing, sig: SignalRing): number[] {
  const out: number[] = [];
  dev.samples(sig, dev.firstSeq, Infinity, (s: RingSample) => {
    out.push(s.num);
    return true;
  });
  return out;
}

Deno.test("SignalRing and DeviceRing made past the budget start with no entry: the bytes counted stay within it", () => {
  // Room for one device and two signals' first entries, not for the ten signals made.
  const max = DEVICE_FIRST + 2 * SIGNAL_FIRST + 10;
  const budget = new RingBudget(max);
  const dev = new DeviceRing("p", "d", budget);
  const sigs: SignalRing[] = [];
  for (let k = 0; k < 10; k++) {
    const sig = new SignalRing(`s${k}`, budget);
    dev.signals.set(sig.signalId, sig);
    sigs.push(sig);
  }
  assert.ok(budget.bytes <= max, `${budget.bytes} bytes counted, memory_max_bytes ${max}`);
  assert.equal(budget.roomless, 8, "eight signal rings made without room");
  assert.deepEqual(sigs.map((s) => s.roomless), [false, false, ...Array(8).fill(true)]);
  for (let i = 0; i < 40; i++) {
    const seq = dev.addPoll(i * 100, -Infinity);
    for (const sig of sigs) sig.record(seq, dbl(i), i, "OK", dev.firstSeq);
    assert.ok(budget.bytes <= max, `poll ${i}: ${budget.bytes} bytes, memory_max_bytes ${max}`);
  }
  assert.equal(
    budget.bytes,
    dev.bytes,
    "every byte counted is a ring's (the device holds its signals)",
  );
  // The signals with room keep their newest changes exactly; the roomless ones keep none.
  const kept = values(dev, sigs[0]!);
  assert.ok(kept.length > 0 && kept.at(-1) === 39, `kept ${JSON.stringify(kept)}`);
  assert.deepEqual(values(dev, sigs[9]!), []);
  assert.equal(sigs[9]!.recorded, false);
  // A walk over a roomless signal says its changes are lost up to now (not that it has them all).
  const walk = new ChangeWalk(dev, [sigs[9]!], 0, dev.nextSeq);
  assert.equal(walk.reachFromSeq, dev.nextSeq);
  assert.equal(walk.next(() => {}), null);
  // Released rings give their room back: a roomless signal is kept from its next poll on.
  for (let k = 0; k < 8; k++) {
    dev.signals.delete(sigs[k]!.signalId);
    sigs[k]!.release();
  }
  assert.equal(budget.roomless, 2, "s8 and s9 are left without room");
  const seq = dev.addPoll(4000, -Infinity);
  sigs[9]!.record(seq, dbl(40), exactDouble(dbl(40)), "OK", dev.firstSeq);
  assert.equal(sigs[9]!.roomless, false);
  assert.equal(budget.roomless, 1);
  assert.deepEqual(values(dev, sigs[9]!), [40]);
  assert.ok(budget.bytes <= max, `${budget.bytes} bytes, memory_max_bytes ${max}`);
  dev.release(); // and its signals' rings
  assert.equal(budget.bytes, 0);
  assert.equal(budget.roomless, 0);
});

Deno.test("DeviceRing made without room numbers its polls and keeps none, until the budget has room", () => {
  const budget = new RingBudget(DEVICE_FIRST - 1);
  const dev = new DeviceRing("p", "d", budget, 5);
  assert.equal(budget.bytes, 0);
  assert.equal(dev.roomless, true);
  assert.equal(dev.addPoll(100, -Infinity), 5);
  assert.equal(dev.addPoll(200, -Infinity), 6);
  assert.equal(dev.polls, 0);
  assert.equal(dev.oldestMs(), null);
  assert.equal(dev.nextSeq, 7);
  assert.deepEqual(dev.datesBefore(7, 200, 1000), { fromSeq: 7, dates: [] });
  const walk = new ChangeWalk(dev, [], 5, 7);
  assert.equal(walk.reachFromMs, Infinity, "nothing kept of the device");
  assert.equal(budget.bytes, 0);
});
