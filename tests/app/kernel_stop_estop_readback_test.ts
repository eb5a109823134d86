/**
 * Kernel.stop against an e-stop's read-back: a stop (SIGTERM) that comes while a press's read-back
 * of the safe state is still waiting for its provider's answer waits for it (bounded) before it
 * stops the providers, as it waits for the ladder's calls. Cut by the runtime's own stop, the
 * read-back would say `unreachable` -- the safe state not verified -- of a provider that was
 * answering: the runtime's stop, not the machine, would have failed it.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type EstopReadbackOptions, estopReadbackRig } from "../safety/_readback.ts";

/**
 * How long the provider takes to answer each read-back (ReadSignals): longer than the stop's
 * stages before the providers' stop (HISTORY_STOP_BEFORE_PROVIDERS_MS, 1 s, and the rest) take,
 * so the read-back's second read is asked only after the stop has reached the providers.
 */
const READ_DELAY_MS = 2000;

/** Well past READ_DELAY_MS: the read-back is never cut by its own bound here. */
const VERIFY_TIMEOUT_MS = 8000;

/**
 * The read-back's bound and rb's timeout_ms where its read is never answered and only the stop may
 * end it: far past any stop, however loaded the machine, so neither ends it first.
 */
const HUNG_READ_BOUND_MS = 120_000;

/** runtime.shutdown_timeout_ms: above READ_DELAY_MS (it caps the stop's wait, below). */
const SHUTDOWN_TIMEOUT_MS = 10000;

/**
 * rb answers each read-back READ_DELAY_MS late; its first read finds the output not yet off (the
 * ladder's call still taking effect), its second finds it off: a read-back needs both, 2 x
 * READ_DELAY_MS. Without a process deadline (no StopDeadline) the stop's wait is capped by the
 * providers' own stop budget: room for READ_DELAY_MS here (a runtime under SIGTERM has up to 7.5 s
 * with the default 2 s: stopActionsShutdownWaitMs).
 */
const SLOW_READS: EstopReadbackOptions = {
  logPrefix: "kernel-stop-readback-",
  dev0: {
    reads: [{ out: { v: true } }, { out: { v: false } }],
    delayMs: READ_DELAY_MS,
    actuate: "ok",
  },
  shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
  verifyTimeoutMs: VERIFY_TIMEOUT_MS,
};

/** rb never answers a read-back; `budgetMs` is runtime.shutdown_timeout_ms. */
const hungReads = (budgetMs: number): EstopReadbackOptions => ({
  logPrefix: "kernel-stop-readback-",
  dev0: { reads: [], then: "hang", actuate: "ok" },
  shutdownTimeoutMs: budgetMs,
  verifyTimeoutMs: 3000,
});

Deno.test("a stop while an e-stop's read-back waits for its answer waits for it: verified, not unreachable", async () => {
  await using r = await estopReadbackRig(SLOW_READS);
  const rt = r.kernel;
  const pressed = rt.estop.trigger("pressed just before the shutdown");
  // The ladder's call made, the read-back's first ReadSignals arrived at the provider (its
  // answer due READ_DELAY_MS later, then the second read's): the stop comes now.
  await r.readBackAsked();
  assert.ok(Deno.readTextFileSync(r.logFile).includes("call dev0 set_output"));
  const stopped = r.stop();
  const result = await pressed;
  await stopped;
  assert.equal(result.verification.outcome, "verified", JSON.stringify(result.verification));
  assert.equal(rt.estop.status().verification?.outcome, "verified");
  // What the incident and run records take it from: published before the providers went.
  const published = r.events.filter((e) => e.kind === "estop_verification");
  assert.deepEqual(published.map((e) => e.kind === "estop_verification" && e.outcome), [
    "verified",
  ]);
  assert.ok(
    r.lines.some((l) => l.includes("stop: waited") && l.includes("read-back")),
    r.lines.filter((l) => l.includes("stop:")).join("\n"),
  );
});

Deno.test("a stop waits for an e-stop's read-back no longer than its bound: WARN, then the providers are stopped", async () => {
  const budgetMs = 1000; // runtime.shutdown_timeout_ms: the wait's cap without a process deadline
  // Never answers a read-back: only the bound ends the stop's wait.
  await using r = await estopReadbackRig(hungReads(budgetMs));
  const pressed = r.kernel.estop.trigger("pressed just before the shutdown");
  await r.readBackAsked();
  await r.stop();
  const warned = r.lines.filter((l) =>
    l.startsWith("WARN") &&
    l.includes("stop: the e-stop's read-back of the safe state had not finished within")
  );
  assert.equal(warned.length, 1, r.lines.filter((l) => l.includes("stop:")).join("\n"));
  assert.ok(warned[0]!.includes(`within ${budgetMs} ms`), warned[0]);
  // Cut by the runtime's stop, as the WARN said: not read.
  assert.equal((await pressed).verification.outcome, "unreachable");
});

Deno.test("a stop while a re-verification (a provider back while latched) waits for its answer waits for it: verified, not unreachable", async () => {
  // Each process's first read finds the output not yet off, its second finds it off: a
  // read-back (the press's, then the re-verification's after the restart) needs both, each
  // answered READ_DELAY_MS after it was asked (an answer on the wire when the providers are
  // stopped still arrives; a read asked after that does not). Restarted once after the kill
  // below: it comes back while latched (#secure, #reverify).
  await using r = await estopReadbackRig({ ...SLOW_READS, restart: {} });
  const rt = r.kernel;
  const pressed = await rt.estop.trigger("pressed before the provider's restart");
  assert.equal(pressed.verification.outcome, "verified");
  const readsBefore = () => r.providerLines().filter((l) => l.includes("dev0 out")).length;
  assert.equal(readsBefore(), 2);
  r.kill("rb", "SIGKILL");
  // Back while latched: secured (its call made again), then its expectations read back again;
  // the stop comes while that read-back waits for its answer.
  await waitFor("the re-verification's ReadSignals at the provider", () => readsBefore() >= 3);
  await r.stop();
  assert.equal(
    rt.estop.status().verification?.outcome,
    "verified",
    JSON.stringify(rt.estop.status().verification),
  );
  const published = r.events.flatMap((e) => e.kind === "estop_verification" ? [e.outcome] : []);
  assert.deepEqual(published, ["verified", "verified"]);
  assert.ok(
    r.lines.some((l) => l.includes("stop: waited") && l.includes("read-back")),
    r.lines.filter((l) => l.includes("stop:")).join("\n"),
  );
});

Deno.test("a stop whose wait for the stop actions used its whole cap says so in one WARN, naming the read-back not waited for (no 'within 0 ms')", async () => {
  const budgetMs = 1000; // runtime.shutdown_timeout_ms: the waits' cap without a process deadline
  // Never answers a read-back: the first press's stop never ends by itself.
  await using r = await estopReadbackRig(hungReads(budgetMs));
  const first = r.kernel.estop.trigger("pressed first");
  await r.readBackAsked();
  // A second press queues a stop behind the first's read-back: its ladder call waits for it,
  // so the stop's wait for the stop actions takes its whole cap, leaving the read-back none.
  const second = r.kernel.estop.trigger("pressed again");
  await r.stop();
  await Promise.allSettled([first, second]);
  const stopLines = r.lines.filter((l) => l.includes("stop:"));
  const warned = stopLines.filter((l) => l.startsWith("WARN") && l.includes("stop: the e-stop"));
  assert.equal(warned.length, 1, stopLines.join("\n"));
  assert.ok(!warned[0]!.includes("within 0 ms"), warned[0]);
  assert.ok(warned[0]!.includes(`within ${budgetMs} ms`), warned[0]);
  assert.ok(warned[0]!.includes("read-back of the safe state"), warned[0]);
});

Deno.test("a second stop signal during the stop's waits for the stop actions and the read-back ends both: one WARN, and the record does not claim verified", async () => {
  await using r = await estopReadbackRig(SLOW_READS);
  const rt = r.kernel;
  const pressed = rt.estop.trigger("pressed just before the shutdown");
  await r.readBackAsked();
  // A second press queues a stop behind the first's read-back: the stop waits for its ladder
  // call, then for the read-back.
  const again = rt.estop.trigger("pressed again");
  await stopHurried(rt);
  const result = await pressed;
  await again.catch(() => {});
  const stopLines = r.lines.filter((l) => l.includes("stop:"));
  const warned = stopLines.filter((l) => l.startsWith("WARN") && l.includes("stop: the e-stop"));
  assert.equal(warned.length, 1, stopLines.join("\n"));
  assert.ok(warned[0]!.includes("when a second stop signal hurried the stop"), warned[0]);
  assert.ok(warned[0]!.includes("read-back of the safe state not waited for"), warned[0]);
  assert.notEqual(result.verification.outcome, "verified", JSON.stringify(result.verification));
  assert.notEqual(rt.estop.status().verification?.outcome, "verified");
});

Deno.test("a read-back a second stop signal cut ends with the stop: nothing of it is logged after 'runtime stopped', and it does not claim verified", async () => {
  await using r = await estopReadbackRig(SLOW_READS);
  const rt = r.kernel;
  const pressed = rt.estop.trigger("pressed just before the shutdown");
  await r.readBackAsked();
  await stopHurried(rt);
  const stoppedAt = r.lines.findIndex((l) => /^INFO .*runtime stopped$/.test(l));
  assert.ok(stoppedAt >= 0, r.lines.join("\n"));
  // The stop has ended: the read-back has too (before: it ran on to verify_timeout_ms, 8 s).
  const result = await within(pressed, READ_DELAY_MS);
  assert.ok(result !== "still running", "the read-back ran on after the runtime stopped");
  assert.notEqual(result.verification.outcome, "verified", JSON.stringify(result.verification));
  assert.notEqual(rt.estop.status().verification?.outcome, "verified");
  // Its lines came before "runtime stopped", the stop's last.
  assert.deepEqual(r.lines.slice(stoppedAt + 1), [], r.lines.slice(stoppedAt - 5).join("\n"));
  assert.ok(
    r.lines.slice(0, stoppedAt).some((l) => /^ERROR .*e-stop verification: unreachable/.test(l)),
    r.lines.join("\n"),
  );
});

Deno.test("a read-back the runtime's stop cut says the stop ended it, not the provider's 'closed by the runtime'", async () => {
  // Its one read is never answered (hungReads): only the providers' stop, closing the session
  // under it, ends it -- however long the stop takes to get there.
  await using r = await estopReadbackRig({
    ...hungReads(1000),
    verifyTimeoutMs: HUNG_READ_BOUND_MS,
    providerTimeoutMs: HUNG_READ_BOUND_MS,
  });
  const rt = r.kernel;
  const pressed = rt.estop.trigger("pressed just before the shutdown");
  await r.readBackAsked();
  // A second stop signal at once: the read in flight is not waited for, the providers' stop
  // closes its session under it.
  const hurry = Promise.withResolvers<void>();
  const stopping = rt.stop({ leftMs: () => 1000, hurried: hurry.promise });
  hurry.resolve();
  await stopping;
  const result = await pressed;
  const check = result.verification.checks[0];
  assert.equal(check?.outcome, "unreachable", JSON.stringify(result.verification));
  assert.ok(
    check?.reason?.startsWith("read ended by the runtime's stop ("),
    JSON.stringify(check),
  );
  assert.equal(rt.estop.status().verification?.checks[0]?.reason, check?.reason);
});

Deno.test("a read-back that outlives the stop's wait after the providers' stop logs nothing after 'runtime stopped'", async () => {
  // The stop's wait before the providers' stop: capped by its 1 s budget, then WARN.
  await using r = await estopReadbackRig({
    ...SLOW_READS,
    dev0: { reads: [{ out: { v: false } }], actuate: "ok" },
    shutdownTimeoutMs: 1000,
  });
  // The one thing no real provider here does: a read the providers' stop does not end. The
  // read-back's read is answered by the provider, and handed back only once the test lets it go
  // (after the runtime stopped): the stop's wait (READ_BACKS_END_AT_STOP_MS) runs out first.
  const rt = r.kernel;
  const { asked, release } = holdReadAnswers(rt);
  try {
    const pressed = rt.estop.trigger("pressed just before the shutdown");
    await asked.promise;
    await rt.stop();
    const stoppedAt = r.lines.findIndex((l) => /^INFO .*runtime stopped$/.test(l));
    assert.ok(stoppedAt >= 0, r.lines.join("\n"));
    assert.ok(
      r.lines.slice(0, stoppedAt).some((l) =>
        l.startsWith("WARN") && l.includes("the e-stop's read-back of the safe state had not ended")
      ),
      r.lines.filter((l) => l.includes("stop:")).join("\n"),
    );
    release.resolve();
    await pressed;
    assert.deepEqual(r.lines.slice(stoppedAt + 1), [], r.lines.slice(stoppedAt - 3).join("\n"));
  } finally {
    release.resolve();
  }
});

Deno.test("a read-back that ends after 'runtime stopped' publishes nothing: its verdict is in status only", async () => {
  const late = await lateReadBack({ clockFails: false });
  // Nothing on the bus after the stop (the run records would write it to a closed journal).
  assert.deepEqual(late.publishedAfterStop, []);
  assert.deepEqual(late.linesAfterStop, []);
  // Status keeps the verdict (GET /v0/estop).
  assert.equal(late.statusOutcome, "verified");
});

Deno.test("a read-back that ends after 'runtime stopped' logs no failure of the clock it would publish with", async () => {
  const late = await lateReadBack({ clockFails: true });
  assert.deepEqual(late.linesAfterStop, []);
  assert.deepEqual(late.publishedAfterStop, []);
});

Deno.test("a re-verification that ends after 'runtime stopped' is neither audited nor published: its verdict is in status only", async () => {
  await using r = await estopReadbackRig({
    ...SLOW_READS,
    dev0: { reads: [{ out: { v: false } }], actuate: "ok" },
    shutdownTimeoutMs: 1000,
    restart: {},
  });
  const rt = r.kernel;
  assert.equal(
    (await rt.estop.trigger("pressed before the restart")).verification.outcome,
    "verified",
  );
  // From now on a read's answer is handed back only once the test lets it go (after the stop).
  const { asked, release } = holdReadAnswers(rt);
  const audited: string[] = [];
  rt.audit.onEntry((entry) => audited.push(entry.action));
  try {
    // Back while latched: secured again, then its expectations read back (held).
    r.kill("rb", "SIGKILL");
    await asked.promise;
    await rt.stop();
    const stoppedAt = r.lines.findIndex((l) => /^INFO .*runtime stopped$/.test(l));
    assert.ok(stoppedAt >= 0, r.lines.join("\n"));
    const shown = JSON.stringify(rt.estop.status().verification);
    const eventsAt = r.events.length;
    const auditedAt = audited.length;
    release.resolve();
    // Merged into status, then (same step) said, published and audited -- or not.
    await waitFor(
      "the re-verification in status",
      () => JSON.stringify(rt.estop.status().verification) !== shown,
    );
    assert.deepEqual(audited.slice(auditedAt), []);
    assert.deepEqual(r.events.slice(eventsAt).map((e) => e.kind), []);
    assert.deepEqual(r.lines.slice(stoppedAt + 1), []);
  } finally {
    release.resolve();
  }
});

Deno.test("a read-back whose read failed on its own (the provider's error) before the stop keeps its reason: not 'ended by the runtime's stop'", async () => {
  // The provider answers the read-back's read with an error of its own; the answer is handed
  // back only after the stop has ended the read-backs (as lateReadBack holds it).
  await using r = await estopReadbackRig({
    ...SLOW_READS,
    dev0: { reads: [], then: "fail", actuate: "ok" },
    shutdownTimeoutMs: 1000,
  });
  const rt = r.kernel;
  const { asked, release } = holdReadAnswers(rt);
  try {
    const pressed = rt.estop.trigger("pressed just before the shutdown");
    await asked.promise;
    await rt.stop();
    release.resolve();
    const check = (await pressed).verification.checks[0];
    assert.equal(check?.outcome, "unreachable", JSON.stringify(check));
    assert.ok(check?.reason?.startsWith("read failed: "), JSON.stringify(check));
  } finally {
    release.resolve();
  }
});

/** What a read-back ending after the runtime's stop (lateReadBack) left after `runtime stopped`. */
interface LateReadBack {
  readonly linesAfterStop: string[];
  readonly publishedAfterStop: string[];
  readonly statusOutcome: string | undefined;
}

/**
 * A press's read-back whose one read is answered by the provider but handed back only after the
 * runtime's stop has ended (as "a read-back that outlives the stop's wait ..." above). With
 * `clockFails`, the wall clock fails from then on where the e-stop reads it itself (to publish:
 * readClockTwice, an ERROR line each); the log's timestamps still read it.
 */
async function lateReadBack(o: { clockFails: boolean }): Promise<LateReadBack> {
  await using r = await estopReadbackRig({
    ...SLOW_READS,
    dev0: { reads: [{ out: { v: false } }], actuate: "ok" },
    shutdownTimeoutMs: 1000,
  });
  const rt = r.kernel;
  const { asked, release } = holdReadAnswers(rt);
  const clock = rt.host.clock;
  const nowMs = clock.nowMs;
  let clockFails = false;
  clock.nowMs = () => {
    const caller = new Error().stack?.split("\n")[2] ?? "";
    if (clockFails && caller.includes("/src/safety/estop.ts")) throw new Error("clock gone");
    return nowMs.call(clock);
  };
  try {
    const pressed = rt.estop.trigger("pressed just before the shutdown");
    await asked.promise;
    await rt.stop();
    const stoppedAt = r.lines.findIndex((l) => /^INFO .*runtime stopped$/.test(l));
    assert.ok(stoppedAt >= 0, r.lines.join("\n"));
    const eventsAt = r.events.length;
    clockFails = o.clockFails;
    release.resolve();
    await pressed;
    clockFails = false;
    return {
      linesAfterStop: r.lines.slice(stoppedAt + 1),
      publishedAfterStop: r.events.slice(eventsAt).map((e) => e.kind),
      statusOutcome: rt.estop.status().verification?.outcome,
    };
  } finally {
    clockFails = false;
    clock.nowMs = nowMs;
    release.resolve();
  }
}

/**
 * Stops `rt` as a process under SIGTERM does, its deadline room for the whole read-back (2 x
 * SHUTDOWN_TIMEOUT_MS away), until a second stop signal READ_DELAY_MS / 4 later -- well before
 * the read-back's (next) answer: the stop is waiting for it -- leaves it 1 s.
 */
async function stopHurried(rt: Kernel): Promise<void> {
  let endsAt = performance.now() + 2 * SHUTDOWN_TIMEOUT_MS;
  const hurry = Promise.withResolvers<void>();
  const stopping = rt.stop({ leftMs: () => endsAt - performance.now(), hurried: hurry.promise });
  await new Promise((res) => setTimeout(res, READ_DELAY_MS / 4));
  endsAt = performance.now() + 1000;
  hurry.resolve();
  await stopping;
}

/**
 * From now on each fresh read of `rt`'s cache is answered by its provider but handed back only
 * once `release` resolves (`asked` once the first has its answer): the one thing no real provider
 * here does, a read the providers' stop does not end.
 */
function holdReadAnswers(
  rt: Kernel,
): { asked: PromiseWithResolvers<void>; release: PromiseWithResolvers<void> } {
  const cache = rt.cache;
  const readFresh = cache.readFresh.bind(cache);
  const release = Promise.withResolvers<void>();
  const asked = Promise.withResolvers<void>();
  cache.readFresh = async (...args) => {
    const read = await readFresh(...args);
    asked.resolve();
    await release.promise;
    return read;
  };
  return { asked, release };
}

/** What `p` resolved with within `ms`, else "still running". */
async function within<T>(p: Promise<T>, ms: number): Promise<T | "still running"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"still running">((
    r,
  ) => (timer = setTimeout(() => r("still running"), ms)));
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
