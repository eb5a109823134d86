/**
 * Liveness: a provider is killed (and supervision takes over) after LIVENESS_FAILURE_LIMIT
 * liveness checks in a row got no answer, never after one, never after misses with an answer
 * in between. Driven through ProviderHost.noteLiveness on a real provider process, then through
 * the state cache's polls and heartbeats of the programmable provider.
 */
import assert from "node:assert/strict";
import {
  DEFAULT_MAX_IN_FLIGHT,
  SESSION_RESERVED_REQUESTS,
  StatusCode,
} from "../../src/adpp/mod.ts";
import { LIVENESS_FAILURE_LIMIT } from "../../src/providers/mod.ts";
import { ADPP_DEADLINE_TIMER, ManualClock } from "../helpers/clock.ts";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import {
  dbl,
  type ProgrammableFixture,
  startProgrammable,
  T,
} from "../helpers/programmable_provider.ts";

const D0 = { devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }] } } };
/** A device with nothing to poll: the poll pass sends a GetHealth heartbeat instead. */
const QUIET = { devices: { q0: { signals: [{ id: "q", type: T.DOUBLE, hint: 0 }] } } };

/** The provider still answers, on the same process. */
async function stillServing(fx: ProgrammableFixture, pid: number, device = "d0"): Promise<void> {
  await fx.stats(device);
  assert.equal(fx.host.available, true);
  assert.equal(fx.host.session?.pid, pid);
  assert.ok(processAlive(pid));
}

/** The read deadline (timeout_ms) of the poll tests on a manual clock. */
const POLL_TIMEOUT_MS = 300;

/**
 * Polls p0/d0 on `clock` (startProgrammable's manual clock) and, once the provider has the read,
 * moves the clock to its deadline: a hung read times out then, and only then. An answered poll
 * needs no time at all, so a starved provider process still answers within its deadline.
 */
async function pollPastDeadline(fx: ProgrammableFixture, clock: ManualClock): Promise<void> {
  const reads = (await fx.stats("d0")).reads;
  const poll = fx.cache.pollDevice("p0", "d0");
  await waitFor("the read at the provider", async () => (await fx.stats("d0")).reads > reads);
  clock.advance(POLL_TIMEOUT_MS);
  await poll;
}

/**
 * Runs `n` cycles of the poll loop on `clock` (startProgrammable's manual clock, its ADPP deadline
 * timers in the background), each fired once the previous one has armed the next (its heartbeat
 * answered): no deadline passes while one is in flight, however slowly the provider process runs.
 */
async function cycles(
  fx: ProgrammableFixture,
  clock: ManualClock,
  intervalMs: number,
  n: number,
): Promise<void> {
  for (let i = 0; i < n; i++) {
    const due = clock.pendingDueTimes()[0];
    assert.ok(clock.fireNext(), "a cycle is due");
    await waitFor(
      "the cycle's end",
      () =>
        fx.cache.pollsInFlight().length === 0 &&
        clock.pendingDueTimes().includes(due! + intervalMs),
    );
  }
}

/**
 * One cycle of the poll loop on `clock` (as `cycles`) whose GetHealth check the provider never
 * answers: once the provider has the GetHealth (its poll pass answered before it), the clock moves
 * to that check's deadline, and only then; the cycle ends with the miss.
 */
async function cycleWithHungHealth(
  fx: ProgrammableFixture,
  clock: ManualClock,
  timeoutMs: number,
): Promise<void> {
  const health = (await fx.stats("d0")).health;
  assert.ok(clock.fireNext(), "a cycle is due");
  await waitFor(
    "the GetHealth at the provider",
    async () => (await fx.stats("d0")).health > health,
  );
  clock.advance(timeoutMs);
  await waitFor(
    "the cycle's end",
    () => fx.cache.pollsInFlight().length === 0 && clock.pendingTimers > 0,
  );
}

Deno.test("LIVENESS_FAILURE_LIMIT is two checks", () => {
  assert.equal(LIVENESS_FAILURE_LIMIT, 2);
});

Deno.test("ProviderHost kills its provider after two missed liveness checks in a row, not after one", async () => {
  const fx = await startProgrammable(D0);
  try {
    const pid = fx.host.session!.pid;
    fx.host.noteLiveness(false);
    await stillServing(fx, pid);
    fx.host.noteLiveness(false);
    await waitFor("provider declared unresponsive", () => !fx.host.available);
    await waitFor("process killed", () => !processAlive(pid));
    assert.equal(fx.host.lifecycle, "CIRCUIT_OPEN", "restart_policy disabled: it stays down");
  } finally {
    await fx.close();
  }
});

Deno.test("ProviderHost: an answer between two missed liveness checks starts the count again", async () => {
  const fx = await startProgrammable(D0);
  try {
    const pid = fx.host.session!.pid;
    for (let i = 0; i < 3; i++) {
      fx.host.noteLiveness(false);
      fx.host.noteLiveness(true);
    }
    fx.host.noteLiveness(false);
    await stillServing(fx, pid);
  } finally {
    await fx.close();
  }
});

Deno.test("ProviderHost: a restarted provider starts with no missed liveness checks", async () => {
  const fx = await startProgrammable(D0, { restart: { backoffMs: [0, 0, 0] } });
  try {
    const first = fx.host.session!.pid;
    fx.host.noteLiveness(false);
    Deno.kill(first, "SIGKILL");
    await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== first);
    const second = fx.host.session!.pid;
    fx.host.noteLiveness(false);
    await stillServing(fx, second);
    // Killed for unresponsiveness, restarted: the count starts again too.
    fx.host.noteLiveness(false);
    await waitFor("restarted again", () => fx.host.available && fx.host.session!.pid !== second);
    const third = fx.host.session!.pid;
    fx.host.noteLiveness(false);
    await stillServing(fx, third);
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: two polls in a row without an answer get the provider killed, one does not", async () => {
  const clock = new ManualClock();
  const fx = await startProgrammable(D0, { timeoutMs: POLL_TIMEOUT_MS, manual: clock });
  try {
    const pid = fx.host.session!.pid;
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    await fx.program("d0", { read: { hang: true } });
    await pollPastDeadline(fx, clock);
    // One poll timed out: the device is unavailable, the provider is not killed.
    assert.equal(fx.cache.device("p0", "d0")!.available, false);
    assert.equal(fx.cache.signal("p0", "d0", "x")?.quality, "UNAVAILABLE");
    await stillServing(fx, pid);
    await pollPastDeadline(fx, clock);
    await waitFor("provider declared unresponsive", () => !fx.host.available);
    await waitFor("process killed", () => !processAlive(pid));
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: a poll answered with an error status proves liveness, whatever the status", async () => {
  const clock = new ManualClock();
  const fx = await startProgrammable(D0, { timeoutMs: POLL_TIMEOUT_MS, manual: clock });
  try {
    const pid = fx.host.session!.pid;
    for (const code of [StatusCode.INTERNAL, StatusCode.DEADLINE_EXCEEDED]) {
      await fx.program("d0", { read: { hang: true } });
      await pollPastDeadline(fx, clock);
      await fx.program("d0", { read: { error: { code } } });
      await fx.cache.pollDevice("p0", "d0");
      await fx.program("d0", { read: { hang: true } });
      await pollPastDeadline(fx, clock);
      await stillServing(fx, pid);
      await fx.program("d0", { read: { values: [dbl("x", 1)] } });
      await fx.cache.pollDevice("p0", "d0");
    }
    // Only error answers, several in a row: still alive.
    await fx.program("d0", { read: { error: { code: StatusCode.DEADLINE_EXCEEDED } } });
    for (let i = 0; i < 3; i++) await fx.cache.pollDevice("p0", "d0");
    await stillServing(fx, pid);
    assert.equal(fx.cache.device("p0", "d0")!.available, false);
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: a poll pass asks every due device at once; one that does not answer keeps no other from its answer", async () => {
  // Before the pass sent its reads together (issue 39), it stopped at a device that did not
  // answer and the next waited for the next pass. This provider answers requests concurrently.
  const inventory = {
    devices: {
      a: { signals: [{ id: "x", type: T.DOUBLE }] },
      b: { signals: [{ id: "x", type: T.DOUBLE }] },
    },
  };
  // timeout_ms long enough for b's answer on a loaded machine; a never answers.
  const fx = await startProgrammable(inventory, { timeoutMs: 2000 });
  try {
    await fx.program("a", { read: { hang: true } });
    await fx.program("b", { read: { values: [dbl("x", 1)] } });
    await fx.cache.start(); // the priming pass: a times out, b is answered
    assert.equal((await fx.stats("a")).reads, 1);
    assert.equal((await fx.stats("b")).reads, 1);
    assert.equal(fx.cache.device("p0", "a")!.available, false);
    assert.equal(fx.cache.device("p0", "b")!.available, true);
    assert.deepEqual(fx.cache.signal("p0", "b", "x")?.value, { type: "double", double: 1 });
    assert.equal(fx.host.available, true, "the provider answered: alive");
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: with nothing to poll, GetHealth heartbeats check liveness; two unanswered kill the provider", async () => {
  // A second apart: the checks between the two heartbeats (each a call with the same deadline)
  // must fit between them on a loaded machine (at 300/100 ms the second one came first there).
  const fx = await startProgrammable(QUIET, { timeoutMs: 1000, intervalMs: 1000 });
  try {
    const pid = fx.host.session!.pid;
    await fx.program("q0", { health: { hang: true } });
    await fx.cache.start(); // priming pass: one heartbeat, unanswered
    assert.equal((await fx.stats("q0")).health, 1);
    await stillServing(fx, pid, "q0");
    // The loop's next heartbeat goes unanswered too.
    await waitFor("provider declared unresponsive", () => !fx.host.available);
    await waitFor("process killed", () => !processAlive(pid));
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: a provider whose devices poll once a minute is found hung by its GetHealth checks, not after two polls", async () => {
  // One device hinting a poll a minute; the provider's own health asked every 200 ms. On a manual
  // clock: no deadline passes while a check that is answered is in flight.
  const SLOW = { devices: { s0: { signals: [{ id: "x", type: T.DOUBLE, hint: 1 / 60 }] } } };
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  const fx = await startProgrammable(SLOW, {
    timeoutMs: 300,
    intervalMs: 100,
    reportedHealthIntervalMs: 200,
    manual: clock,
  });
  try {
    const pid = fx.host.session!.pid;
    await fx.program("s0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.start(); // the priming pass: answered
    const nextPoll = clock.mono + 60_000;
    await cycles(fx, clock, 100, 3); // GetHealth in the first and the third
    assert.ok((await fx.stats("s0")).health >= 2, "a GetHealth answered");
    await stillServing(fx, pid, "s0");
    assert.equal((await fx.stats("s0")).reads, 1, "polled once: the next poll is a minute away");
    // Hung: neither reads nor GetHealth are answered any more (every deadline passes, answered
    // or not: nothing is).
    await fx.program("s0", { read: { hang: true }, health: { hang: true } });
    await waitFor("provider declared unresponsive", () => {
      if (!fx.host.available) return true;
      clock.advance(100);
      return false;
    }, 5000);
    assert.ok(clock.mono < nextPoll, `found hung at ${clock.mono}, before the next poll`);
    await waitFor("process killed", () => !processAlive(pid));
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: GetHealth checks that go unanswered do not kill a provider whose polls answer in between", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  const fx = await startProgrammable(D0, {
    timeoutMs: 300,
    intervalMs: 100,
    reportedHealthIntervalMs: 200,
    manual: clock,
  });
  try {
    const pid = fx.host.session!.pid;
    await fx.program("d0", { read: { values: [dbl("x", 1)] }, health: { hang: true } });
    await fx.cache.start();
    // Several GetHealth misses, each followed by answered polls: never two misses in a row.
    for (let i = 0; i < 6; i++) await cycleWithHungHealth(fx, clock, 300);
    assert.ok((await fx.stats("d0")).health >= 6, "six GetHealth asked");
    await stillServing(fx, pid);
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: a heartbeat answered with an error status proves liveness", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  const fx = await startProgrammable(QUIET, { timeoutMs: 300, intervalMs: 100, manual: clock });
  try {
    const pid = fx.host.session!.pid;
    await fx.program("q0", { health: { error: { code: StatusCode.DEADLINE_EXCEEDED } } });
    await fx.cache.start();
    await cycles(fx, clock, 100, 3);
    assert.ok((await fx.stats("q0")).health >= 4, "several heartbeats");
    await stillServing(fx, pid, "q0");
    // Alternating: unanswered, answered with an error, unanswered -- never two misses in a row.
    fx.host.noteLiveness(false);
    // A cycle ends once its heartbeat is answered.
    const seen = (await fx.stats("q0")).health;
    await cycles(fx, clock, 100, 1);
    assert.ok((await fx.stats("q0")).health > seen, "a heartbeat answered");
    fx.host.noteLiveness(false);
    await stillServing(fx, pid, "q0");
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: heartbeats answered keep a provider with nothing to poll up", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  const fx = await startProgrammable(QUIET, { timeoutMs: 300, intervalMs: 100, manual: clock });
  try {
    const pid = fx.host.session!.pid;
    await fx.cache.start();
    fx.host.noteLiveness(false); // one miss before: every answered heartbeat starts over
    await cycles(fx, clock, 100, 5);
    assert.ok((await fx.stats("q0")).health >= 6, "several heartbeats");
    fx.host.noteLiveness(false);
    await stillServing(fx, pid, "q0");
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: a poll refused for too many requests in flight is neither an answer nor a miss", async () => {
  // A manual clock: the start-up (ListDevices, DescribeDevice) has no deadline that passes.
  const fx = await startProgrammable(D0, { timeoutMs: 300, manual: new ManualClock() });
  try {
    const pid = fx.host.session!.pid;
    await fx.program("d0", { read: { hang: true } });
    // Requests the provider never answers: the session takes no more poll reads.
    const hung = Array.from(
      { length: DEFAULT_MAX_IN_FLIGHT },
      () =>
        fx.host.request("read_signals", { device_id: "d0", signal_ids: ["x"] }, 60_000).catch(
          () => {},
        ),
    );
    // Refused twice in a row: not two misses.
    await fx.cache.pollDevice("p0", "d0");
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(fx.host.available, true);
    assert.ok(processAlive(pid));
    // Nor an answer: a miss, a refusal and a miss are two misses in a row.
    fx.host.noteLiveness(false);
    await fx.cache.pollDevice("p0", "d0");
    fx.host.noteLiveness(false);
    await waitFor("provider declared unresponsive", () => !fx.host.available);
    await Promise.all(hung);
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache: a heartbeat refused for too many requests in flight is neither an answer nor a miss", async () => {
  // A manual clock: the start-up (ListDevices, DescribeDevice) has no deadline that passes.
  const fx = await startProgrammable(QUIET, {
    timeoutMs: 300,
    intervalMs: 60_000,
    manual: new ManualClock(),
  });
  try {
    const pid = fx.host.session!.pid;
    await fx.program("q0", { health: { hang: true } });
    // Requests the provider never answers: the session takes no more, its reserve included.
    const hung = Array.from(
      { length: DEFAULT_MAX_IN_FLIGHT + SESSION_RESERVED_REQUESTS },
      () => fx.host.request("get_health", {}, 60_000).catch(() => {}),
    );
    // A miss, then the priming pass's heartbeat refused, then a miss: two misses in a row (an
    // answer in between would start the count again).
    fx.host.noteLiveness(false);
    await fx.cache.start();
    assert.equal(fx.host.available, true);
    fx.host.noteLiveness(false);
    await waitFor("provider declared unresponsive", () => !fx.host.available);
    await waitFor("process killed", () => !processAlive(pid));
    await Promise.all(hung);
  } finally {
    await fx.close();
  }
});
