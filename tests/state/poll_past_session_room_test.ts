/**
 * A poll pass over more due devices than its provider's ADPP session takes poll reads in flight
 * (DEFAULT_MAX_IN_FLIGHT): every device is polled, the reads past the session's room sent as
 * answers free places. A read that was not sent in a pass (deferred) is no failed read: nothing
 * marked, no poll error, no liveness miss. Over the programmable provider served in-process
 * (tests/helpers/programmable_provider.ts), which answers one request at a time.
 */
import assert from "node:assert/strict";
import { DEFAULT_MAX_IN_FLIGHT } from "../../src/adpp/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { ADPP_DEADLINE_TIMER, ManualClock } from "../helpers/clock.ts";
import { dbl, startProgrammable, T } from "../helpers/programmable_provider.ts";
import type { StateCache } from "../../src/state/mod.ts";

/** More devices than a session takes poll reads in flight. */
const DEVICES = DEFAULT_MAX_IN_FLIGHT + 6;
/** Device `k`'s id: numbered so that their order by id is theirs. */
const id = (k: number) => `d${String(k).padStart(2, "0")}`;
const IDS = Array.from({ length: DEVICES }, (_, k) => id(k));
const INVENTORY = {
  devices: Object.fromEntries(IDS.map((d) => [d, { signals: [{ id: "x", type: T.DOUBLE }] }])),
};

Deno.test("A poll pass over more devices than a session's poll reads in flight polls every one, each once, with no poll error", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  const fx = await startProgrammable(INVENTORY, { inProcess: true, manual: clock });
  try {
    for (const [k, d] of IDS.entries()) await fx.program(d, { read: { values: [dbl("x", k)] } });
    await fx.cache.start(); // its priming pass polls every device
    const missing = IDS.filter((d, k) =>
      fx.cache.device("p0", d)?.available !== true ||
      JSON.stringify(fx.cache.signal("p0", d, "x")?.value) !==
        JSON.stringify({ type: "double", double: k }) ||
      fx.cache.signal("p0", d, "x")?.quality !== "OK"
    );
    assert.deepEqual(missing, [], "devices without their value at quality OK");
    assert.equal(fx.cache.pollMetrics("p0")?.errors, 0, "poll errors");
    const reads = [];
    for (const d of IDS) reads.push((await fx.stats(d)).reads);
    assert.deepEqual(reads, IDS.map(() => 1), "ReadSignals per device");
  } finally {
    await fx.close();
  }
});

/**
 * The poll loop's next cycle on a manual clock: fires its timer and waits until the loop has armed
 * the next one, one interval later on the grid (the cycle has ended).
 */
async function cycle(clock: ManualClock, intervalMs: number, cache: StateCache): Promise<void> {
  const due = clock.pendingDueTimes()[0];
  assert.ok(clock.fireNext(), "a cycle is due");
  await waitFor(
    "the cycle's end",
    () => cache.pollsInFlight().length === 0 && clock.pendingDueTimes().includes(due! + intervalMs),
    10_000,
    0,
  );
}

Deno.test("A poll pass whose provider answers none of its reads in time defers the reads past the session's room: not sent, not failed, due at the next cycle", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  // Polled every 10th cycle (0.1 Hz at 1 s) while it answers well: a deferred one that waited
  // 10 cycles more would be seen. The 200 ms timeout ends a pass well within its cycle.
  const slow = {
    devices: Object.fromEntries(
      IDS.map((d) => [d, { signals: [{ id: "x", type: T.DOUBLE, hint: 0.1 }] }]),
    ),
  };
  const fx = await startProgrammable(slow, {
    inProcess: true,
    manual: clock,
    intervalMs: 1000,
    timeoutMs: 200,
    reportedHealthIntervalMs: 1e9, // one GetHealth, at the first cycle
  });
  const reads = async (ids: string[]) => {
    const n = [];
    for (const d of ids) n.push((await fx.stats(d)).reads);
    return n;
  };
  try {
    for (const d of IDS) await fx.program(d, { read: { values: [dbl("x", 1)] } });
    await fx.cache.start(); // every device, once
    assert.equal(fx.cache.pollMetrics("p0")?.errors, 0);
    for (let k = 1; k < 10; k++) await cycle(clock, 1000, fx.cache); // none due
    // The first device answers late (after its timeout), and the provider answers in turn:
    // nothing after it is answered in time either.
    await fx.program(id(0), { read: { values: [dbl("x", 1)], delayMs: 300 } });
    assert.ok(clock.fireNext(), "the 10th cycle: every device due");
    await waitFor("a full session", () => fx.host.session?.inFlight === DEFAULT_MAX_IN_FLIGHT);
    await clock.advanceAsync(200);
    const before = IDS.slice(0, DEFAULT_MAX_IN_FLIGHT);
    const after = IDS.slice(DEFAULT_MAX_IN_FLIGHT);
    await waitFor(
      "the sent reads failed",
      () => before.every((d) => fx.cache.device("p0", d)?.available === false),
    );
    // Not sent to wait out a timeout of their own: the pass ended with the others' timeout.
    assert.equal(fx.host.session?.inFlight, 0, "requests in flight");
    assert.deepEqual(await reads(after), after.map(() => 1), "deferred devices' ReadSignals");
    assert.deepEqual(
      after.filter((d) =>
        fx.cache.device("p0", d)?.available !== true ||
        fx.cache.signal("p0", d, "x")?.quality !== "OK"
      ),
      [],
      "deferred devices marked as failing",
    );
    assert.equal(fx.cache.pollMetrics("p0")?.errors, DEFAULT_MAX_IN_FLIGHT, "poll errors");
    assert.equal(fx.host.available, true, "one pass without answers is one liveness miss");
    // The provider reads again: the next cycle polls the deferred devices (and the failed ones).
    await fx.program(id(0), { read: { values: [dbl("x", 1)] } });
    await waitFor("the late answers read", async () => (await reads([id(63)]))[0] === 2);
    await cycle(clock, 1000, fx.cache);
    assert.deepEqual(await reads(after), after.map(() => 2), "deferred devices' ReadSignals");
    assert.ok(IDS.every((d) => fx.cache.device("p0", d)?.available), "every device answered");
    assert.equal(fx.cache.pollMetrics("p0")?.errors, DEFAULT_MAX_IN_FLIGHT, "poll errors");
  } finally {
    await fx.close();
  }
});

/**
 * `count` GetHealth requests in flight that the provider never answers (it then answers nothing
 * else either): they hold that many places of the session. Their outcome is not awaited.
 */
async function holdPlaces(fx: Awaited<ReturnType<typeof startProgrammable>>, count: number) {
  await fx.program(id(0), { health: { hang: true } });
  for (let k = 0; k < count; k++) fx.host.request("get_health", {}).catch(() => {});
  await waitFor("the places held", () => fx.host.session?.inFlight === count);
}

Deno.test("A poll pass finding the session's room for poll reads held by other requests defers every read: nothing sent, nothing failed", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  const fx = await startProgrammable(INVENTORY, { inProcess: true, manual: clock });
  try {
    for (const d of IDS) await fx.program(d, { read: { values: [dbl("x", 1)] } });
    await fx.cache.start();
    await holdPlaces(fx, DEFAULT_MAX_IN_FLIGHT);
    // Settles at once (nothing sent, nothing to wait for): it does not hang the provider's polls.
    await fx.cache.pollDevice("p0", id(0));
    assert.equal(fx.host.session?.inFlight, DEFAULT_MAX_IN_FLIGHT, "nothing more in flight");
    assert.ok(IDS.every((d) => fx.cache.device("p0", d)?.available), "every device available");
    assert.equal(fx.cache.pollMetrics("p0")?.errors, 0, "poll errors");
  } finally {
    await fx.close();
  }
});

Deno.test("A poll pass whose last read in flight times out with reads still unsent counts one liveness miss, once", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  const fx = await startProgrammable(INVENTORY, {
    inProcess: true,
    manual: clock,
    timeoutMs: 200,
  });
  try {
    for (const d of IDS) await fx.program(d, { read: { values: [dbl("x", 1)] } });
    await fx.cache.start();
    // Room for one poll read: the pass sends the first device's, which times out unanswered.
    await holdPlaces(fx, DEFAULT_MAX_IN_FLIGHT - 1);
    assert.ok(clock.fireNext(), "a pass is due");
    await waitFor("its read sent", () => fx.host.session?.inFlight === DEFAULT_MAX_IN_FLIGHT);
    await clock.advanceAsync(200);
    // The pass ended (its first device marked) and the cycle's GetHealth is sent.
    await waitFor(
      "the pass's end",
      () =>
        fx.cache.device("p0", id(0))?.available === false &&
        (fx.host.session?.inFlight === 1 || fx.lines.some((l) => l.includes("unresponsive"))),
    );
    assert.deepEqual(fx.lines.filter((l) => l.includes("unresponsive")), [], "killed");
    assert.equal(fx.host.available, true, "one pass without answers is one liveness miss");
    assert.ok(IDS.slice(1).every((d) => fx.cache.device("p0", d)?.available), "deferred ones");
    assert.equal(fx.cache.pollMetrics("p0")?.errors, 1, "poll errors");
    await clock.advanceAsync(200); // the GetHealth expires
  } finally {
    await fx.close();
  }
});
