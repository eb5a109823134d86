/**
 * A device slower than the poll interval has its next read sent as soon as its late answer is in,
 * in a pass of its own beside the loop's cycle (slow_sibling_poll_test.ts). Its provider is lost
 * while such a resent read is out: the pass is cut with the provider's others (#cutPasses, as
 * held_failed_read_test.ts cuts a held answer), so nothing of it is applied after the down marks
 * -- also when its answer still comes (the provider's stdout outlives the process the runtime
 * started) -- no rejection goes unhandled, and polling resumes once the provider is back. The
 * programmable provider as a real child process.
 */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  dbl,
  type ProgrammableFixture,
  startProgrammable,
  T,
} from "../helpers/programmable_provider.ts";

const INTERVAL_MS = 100;
/** How long each read of the slow device takes once programmed: past several intervals. */
const SLOW_MS = INTERVAL_MS * 4;
/** The provider's timeout_ms (and every program and stats call's bound): far past SLOW_MS. */
const TIMEOUT_MS = 3000;
/**
 * The restart backoff: the provider stays down this long after its loss, past SLOW_MS (a late
 * answer of the lost process comes while the provider is down): 4000 ms, not 1500 (a loaded
 * machine's 800 ms wait once outlasted 1500 ms).
 */
const BACKOFF_MS = 4000;

/**
 * The provider runs in the background of a shell given its stdin: killing the shell (the process
 * the runtime started) loses the provider while the provider itself lives on and still writes
 * its answers to the runtime's pipe.
 */
const SH_ORPHANED = "exec 3<&0; setsid PROVIDER <&3 3<&- & wait";

/** Device a (x = 1) and b (y = 1), answered at once; a is made slow by the test. */
function startSlowRig(o: { sh?: string; pidFile?: string } = {}): Promise<ProgrammableFixture> {
  return startProgrammable({
    ...(o.pidFile ? { pidFile: o.pidFile } : {}),
    // The lost process lives on after its stdin closed, long enough to answer its late read.
    ...(o.sh ? { exitDelayMs: SLOW_MS * 2 } : {}),
    devices: {
      a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
      b: { signals: [{ id: "y", type: T.DOUBLE }], values: [dbl("y", 1)] },
    },
  }, {
    poll: true,
    intervalMs: INTERVAL_MS,
    timeoutMs: TIMEOUT_MS,
    restart: { backoffMs: [BACKOFF_MS, BACKOFF_MS, BACKOFF_MS] },
    ...(o.sh ? { sh: o.sh } : {}),
  });
}

/**
 * Makes a's reads take SLOW_MS (answering x = 2) and waits until the read after its first slow
 * one is out: the first was sent in a cycle and answered after the next cycle (late), so this
 * one is its resend (#resendLate), out for about SLOW_MS.
 */
async function resendOut(fx: ProgrammableFixture): Promise<void> {
  await waitFor("a answered", () => fx.cache.signal("p0", "a", "x")?.quality === "OK");
  await fx.program("a", { read: { values: [dbl("x", 2)], delayMs: SLOW_MS } });
  const first = (await fx.stats("a")).reads;
  await waitFor("a's late read resent", async () => (await fx.stats("a")).reads >= first + 2);
}

/**
 * What was told of device a from its down marks (its device_availability false after `from`) to
 * its provider's AVAILABLE again, and from its down marks on.
 */
function ofAAfterLoss(events: readonly RuntimeEvent[], from: number) {
  const isA = (e: RuntimeEvent) => "device_id" in e && e.device_id === "a";
  const down = events.findIndex((e, i) =>
    i >= from && e.kind === "device_availability" && e.device_id === "a" && !e.available
  );
  assert.ok(down >= 0, "a is marked down with its provider");
  const up = events.findIndex((e, i) =>
    i > down && e.kind === "provider_health_change" && e.state === "AVAILABLE"
  );
  assert.ok(up > down, "its provider is AVAILABLE again");
  return { whileDown: events.slice(down + 1, up).filter(isA), after: events.slice(down + 1) };
}

/** Anything but a down mark: a's availability told again, a sample or quality not UNAVAILABLE. */
function notADownMark(e: RuntimeEvent): boolean {
  if (e.kind === "device_availability") return true;
  if (e.kind === "state_update") return e.quality !== "UNAVAILABLE";
  if (e.kind === "quality_change") return e.new_quality !== "UNAVAILABLE";
  return false;
}

/** The double values of a's state_updates among `events`. */
function valuesOfX(events: readonly RuntimeEvent[]): (number | null)[] {
  return events.flatMap((e) =>
    e.kind === "state_update" && e.device_id === "a" && e.signal_id === "x"
      ? [e.value.type === "double" ? e.value.double : null]
      : []
  );
}

/** Polling resumed with the new process: a answered well again (its own value, x = 1). */
async function pollingResumed(fx: ProgrammableFixture, lostPid: number): Promise<void> {
  await waitFor("p0 restarted", () => fx.host.available && fx.host.session?.pid !== lostPid);
  // The new process counts its own reads: a polled at the loop's pace again.
  await waitFor("a polled by the new process", async () => (await fx.stats("a")).reads >= 3);
  await waitFor("a available again", () => fx.cache.device("p0", "a")?.available === true);
  assert.equal(fx.cache.signal("p0", "a", "x")?.quality, "OK");
  assert.deepEqual(fx.cache.signal("p0", "a", "x")?.value, { type: "double", double: 1 });
}

/** Records the unhandled rejections until the returned function is called (and gives them). */
function watchRejections(): () => unknown[] {
  const seen: unknown[] = [];
  const on = (e: PromiseRejectionEvent) => {
    seen.push(e.reason);
    e.preventDefault();
  };
  globalThis.addEventListener("unhandledrejection", on);
  return () => {
    globalThis.removeEventListener("unhandledrejection", on);
    return seen;
  };
}

Deno.test("StateCache cuts a slow device's resent read at its provider's loss (process killed): nothing of it after the down marks, no unhandled rejection, polled again after the restart", async () => {
  const rejections = watchRejections();
  const fx = await startSlowRig();
  try {
    await resendOut(fx);
    const from = fx.events.length;
    const pid = fx.kill();
    await waitFor("p0 down", () => !fx.host.available);
    await pollingResumed(fx, pid);
    const { whileDown, after } = ofAAfterLoss(fx.events, from);
    assert.deepEqual(
      whileDown.filter(notADownMark),
      [],
      "nothing told of a while its provider is down but its down marks",
    );
    assert.ok(!valuesOfX(after).includes(2), "the lost process's late answer is never applied");
    assert.deepEqual(fx.lines.filter((l) => l.includes("late device")), []);
  } finally {
    await fx.close();
    assert.deepEqual(rejections(), [], "no unhandled rejection");
  }
});

Deno.test("StateCache cuts a slow device's resent read at its provider's loss when its answer still comes after the down marks (the provider outlives the process the runtime started): not applied, the device stays UNAVAILABLE until the restart", async () => {
  const rejections = watchRejections();
  const pidFile = await Deno.makeTempFile({ prefix: "late-resend-", suffix: ".pid" });
  const fx = await startSlowRig({ sh: SH_ORPHANED, pidFile });
  try {
    await resendOut(fx);
    const from = fx.events.length;
    const pid = fx.kill(); // the shell: its provider lives on and answers a's read
    await waitFor("p0 down", () => !fx.host.available);
    const downAt = fx.clock.monoMs();
    // The resent read's answer comes within SLOW_MS; the provider is down for BACKOFF_MS.
    await new Promise((r) => setTimeout(r, SLOW_MS * 2));
    const stillDown = !fx.host.available && fx.clock.monoMs() - downAt < BACKOFF_MS;
    assert.equal(fx.cache.device("p0", "a")?.available, false, "a stays down with its provider");
    assert.equal(fx.cache.signal("p0", "a", "x")?.quality, "UNAVAILABLE");
    await pollingResumed(fx, pid);
    const { whileDown, after } = ofAAfterLoss(fx.events, from);
    assert.ok(stillDown, "the late answer had its chance while p0 was down");
    assert.deepEqual(
      whileDown.filter(notADownMark),
      [],
      "nothing told of a while its provider is down but its down marks",
    );
    assert.ok(!valuesOfX(after).includes(2), "the lost process's late answer is never applied");
    assert.deepEqual(fx.lines.filter((l) => l.includes("late device")), []);
  } finally {
    await fx.close();
    // The lost provider (and any other left) ends now.
    const pids = (await Deno.readTextFile(pidFile).catch(() => "")).split("\n").map(Number);
    for (const p of pids) {
      if (!(p > 0)) continue;
      try {
        Deno.kill(p, "SIGKILL");
      } catch { /* gone already */ }
    }
    await Deno.remove(pidFile).catch(() => {});
    assert.deepEqual(rejections(), [], "no unhandled rejection");
  }
});
