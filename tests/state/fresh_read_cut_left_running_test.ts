/**
 * A fresh read (StateCache.readFresh: the e-stop's read-back) whose caller's bound
 * (verify_timeout_ms, the time left of it) is shorter than its provider's timeout_ms answers its
 * caller at that bound, and its request runs on to the provider's whole timeout_ms: a device that
 * gives no answer within it is told failed (onFreshReadFailed: DeviceOutages counts it out), as a
 * read given the whole timeout is -- not left to its next poll, which the stop may hold back. At
 * most MAX_FRESH_READS_LEFT_RUNNING_PER_DEVICE such reads per device; nothing is told of one its
 * provider's stop ended. The programmable provider as a real child process; every deadline (the
 * session's, the caller's bound) on a manual clock.
 */
import assert from "node:assert/strict";
import { ManualClock } from "../helpers/clock.ts";
import { macrotask } from "../helpers/turns.ts";
import { dbl, startProgrammable, T } from "../helpers/programmable_provider.ts";
import type { FreshRead } from "../../src/state/mod.ts";

/** The provider's timeout_ms: how long a hung read given all of it lasts. */
const TIMEOUT_MS = 2000;
/** A read-back's bound shorter than TIMEOUT_MS (the verification's own deadline near). */
const CUT_MS = 200;

/** Lets the session's and the cache's promise callbacks run after a timer fired. */
async function turns(): Promise<void> {
  for (let i = 0; i < 5; i++) await macrotask();
}

async function withHungDevice(
  run: (
    fx: Awaited<ReturnType<typeof startProgrammable>>,
    clock: ManualClock,
    told: string[],
  ) => Promise<void>,
): Promise<void> {
  const clock = new ManualClock(10_000);
  const fx = await startProgrammable({
    devices: { a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] } },
  }, { timeoutMs: TIMEOUT_MS, manual: clock });
  const told: string[] = [];
  fx.cache.onFreshReadFailed((p, d) => told.push(`${p}/${d}@${clock.monoMs()}`));
  try {
    await fx.program("a", { read: { hang: true } });
    await run(fx, clock, told);
  } finally {
    await fx.close();
  }
}

/** Starts a read-back of p0/a bounded by `boundMs`; `answer()` is its answer once it came. */
function readBack(
  fx: Awaited<ReturnType<typeof startProgrammable>>,
  boundMs: number,
): () => FreshRead | null {
  let answer: FreshRead | null = null;
  void fx.cache.readFresh("p0", "a", ["x"], boundMs).then((r) => (answer = r));
  return () => answer;
}

Deno.test("StateCache.readFresh: a read its caller's shorter bound cut answers at that bound, and its device is told failed once the provider's whole timeout_ms passed unanswered", async () => {
  await withHungDevice(async (fx, clock, told) => {
    const t0 = clock.monoMs();
    const answer = readBack(fx, CUT_MS);
    await turns();
    clock.advance(CUT_MS - 1);
    await turns();
    assert.equal(answer(), null, "not answered before its bound");
    clock.advance(1);
    await turns();
    const read = answer();
    assert.ok(read !== null, "answered at its bound, not later");
    assert.equal(!read.ok && read.timedOut, true, JSON.stringify(read));
    assert.equal(
      !read.ok && read.reason,
      `read failed: DEADLINE_EXCEEDED: read_signals got no answer within ${CUT_MS} ms`,
    );
    assert.deepEqual(told, [], "nothing known of the device at the caller's bound");
    clock.advance(TIMEOUT_MS - CUT_MS - 1);
    await turns();
    assert.deepEqual(told, []);
    clock.advance(1);
    await turns();
    // Before: [] -- a read cut by its caller's bound was never asked past it.
    assert.deepEqual(told, [`p0/a@${t0 + TIMEOUT_MS}`]);
    assert.equal(clock.pendingTimers, 0, "no timer left behind");
  });
});

Deno.test("StateCache.readFresh: one read per device runs on past its caller's bound; another meanwhile is cut at its own bound and says nothing, and the next after it ended runs on again", async () => {
  await withHungDevice(async (fx, clock, told) => {
    const t0 = clock.monoMs();
    const first = readBack(fx, CUT_MS);
    await turns();
    clock.advance(CUT_MS);
    await turns();
    assert.ok(first() !== null);
    clock.advance(300);
    // A second read-back (another press, a re-verification) while the first is still out.
    const second = readBack(fx, CUT_MS);
    await turns();
    clock.advance(CUT_MS);
    await turns();
    const cut = second();
    assert.ok(cut !== null && !cut.ok && cut.timedOut, JSON.stringify(cut));
    clock.advance(TIMEOUT_MS - 2 * CUT_MS - 300);
    await turns();
    assert.deepEqual(told, [`p0/a@${t0 + TIMEOUT_MS}`], "the first, at its whole timeout");
    clock.advance(TIMEOUT_MS);
    await turns();
    assert.deepEqual(told, [`p0/a@${t0 + TIMEOUT_MS}`], "the second one's request was cut");
    // The first one ended: the next read-back runs on again.
    const t1 = clock.monoMs();
    const third = readBack(fx, CUT_MS);
    await turns();
    clock.advance(TIMEOUT_MS);
    await turns();
    assert.ok(third() !== null);
    assert.deepEqual(told, [`p0/a@${t0 + TIMEOUT_MS}`, `p0/a@${t1 + TIMEOUT_MS}`]);
  });
});

Deno.test("StateCache.readFresh: a read left running past its caller's bound says nothing once its provider stopped", async () => {
  await withHungDevice(async (fx, clock, told) => {
    const answer = readBack(fx, CUT_MS);
    await turns();
    clock.advance(CUT_MS);
    await turns();
    assert.ok(answer() !== null);
    await fx.close(); // the provider's stop ends the session under the read
    clock.advance(TIMEOUT_MS);
    await turns();
    assert.deepEqual(told, []);
  });
});

Deno.test("StateCache.readFresh: a read left running past its caller's bound says nothing once its host no longer reaches the cache", async () => {
  await withHungDevice(async (fx, clock, told) => {
    const answer = readBack(fx, CUT_MS);
    await turns();
    clock.advance(CUT_MS);
    await turns();
    assert.ok(answer() !== null);
    // A failed start's stop (Kernel): the host is up, its read still out, but no longer current.
    fx.cache.detachProviders();
    clock.advance(TIMEOUT_MS);
    await turns();
    assert.deepEqual(told, []);
  });
});
