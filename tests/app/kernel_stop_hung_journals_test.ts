/**
 * A runtime stopping while the disk under its audit journal or its run records hangs (a hung
 * mount, a dying SD card: a write that never returns): their close is waited for at most its own
 * bound (AUDIT_STOP_MS, RUNS_STOP_MS), said in one WARN naming it, and the stop goes on --
 * telemetry's last flush still runs, and the stop ends within the bound, not when the process's
 * shutdown budget runs out (exit 4) with the telemetry rows neither written nor counted. Real: the
 * kernel with the simulated provider as a child process, real files whose appends under the held
 * folder wait until the test lets them go, a stand-in InfluxDB on loopback. The data_dir lock is
 * kept until the writes the disk held ended: a second runtime is refused while they may land.
 * The runtime runs on a SkippingClock: where the stop waits out a bound for a disk that does not
 * answer, the test moves the clock past it once the stop has reached that wait (calledOn), instead
 * of sleeping it; the outcome is timed on the same clock (within).
 */
import assert from "node:assert/strict";
import type { Clock } from "../../src/common/mod.ts";
import type { Config } from "../../src/config/mod.ts";
import {
  AUDIT_STOP_MS,
  HISTORY_STOP_BEFORE_PROVIDERS_MS,
  RUNS_STOP_MS,
  type StopDeadline,
  TELEMETRY_STOP_RESERVE_MS,
} from "../../src/app/kernel.ts";
import { exitCodeAfterStop, HURRIED_SHUTDOWN_MS, shutDown } from "../../src/app/process.ts";
import { EXIT_INTERNAL_ERROR, EXIT_OK } from "../../src/app/exit_codes.ts";
import { systemClock } from "../../src/host/clock.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import {
  InterceptedAppends,
  InterceptedSyncs,
  RealJournalFiles,
} from "../helpers/journal_files.ts";
import { lockDataDir } from "../../src/host/mod.ts";
import { afterPolls, processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { SkippingClock } from "../helpers/clock.ts";
import { macrotask } from "../helpers/turns.ts";
import { FakeInflux } from "../helpers/fake_influx.ts";
import { DEFAULT_HISTORY, simProvider, testConfig } from "../helpers/sim_config.ts";
import { INCIDENT_STOP_WAIT_MS } from "../../src/history/mod.ts";

/** What the stop may take past the journal's bound (the provider's stop, telemetry's flush). */
const STOP_SLACK_MS = 4000;

/** The process's budget handed to the stop (runtime.shutdown_timeout_ms 2 s and 1 s of grace). */
const STOP_BUDGET_MS = 3000;

/** Telemetry to `url`, flushed only by the stop (the interval is longer than the test). */
function telemetry(url: string): Config["telemetry"] {
  const base = testConfig().telemetry;
  return {
    ...base,
    enabled: true,
    healthIntervalMs: 0,
    influxdb: { ...base.influxdb, url, token: "t0k3n", flushIntervalMs: 600_000 },
  };
}

/**
 * "stopped" when `stopping` settles within `ms` on `clock` (the runtime's: a skip counts), else
 * "held".
 */
async function within(
  stopping: Promise<void>,
  ms: number,
  clock: Pick<Clock, "setTimer" | "clearTimer"> = systemClock,
): Promise<"stopped" | "held"> {
  let timer: ReturnType<Clock["setTimer"]> | undefined;
  const held = new Promise<"held">((r) => (timer = clock.setTimer(() => r("held"), ms)));
  try {
    return await Promise.race([stopping.then(() => "stopped" as const), held]);
  } finally {
    if (timer !== undefined) clock.clearTimer(timer);
  }
}

/** The process's deadline `ms` from now on `clock` (the stop's budget: a skip takes from it). */
function deadlineOn(clock: Clock, ms: number): StopDeadline {
  const endsAt = clock.monoMs() + ms;
  return { leftMs: () => endsAt - clock.monoMs() };
}

/**
 * A wait (bounded: waitFor's) until the stop has called `obj[method]` (the call goes on as
 * before), or with `settled` until that call has settled too: the stage the stop has reached, the
 * bound it waits for that stage with armed on the clock by then (raceTimeout arms it in the same
 * turn). Kernel#stop: `history.detach` before HISTORY_STOP_BEFORE_PROVIDERS_MS; `audit.close`,
 * `runs.shutdown` before their bounds; `telemetry.stop` once the history's last wait (what the
 * budget leaves past TELEMETRY_STOP_RESERVE_MS) is armed.
 */
function calledOn<T extends object, K extends keyof T>(
  obj: T,
  method: K,
  settled = false,
): () => Promise<void> {
  let reached = false;
  const f = obj[method] as (...args: unknown[]) => unknown;
  obj[method] = ((...args: unknown[]) => {
    if (!settled) reached = true;
    const out = f.apply(obj, args);
    if (settled) void Promise.resolve(out).finally(() => (reached = true)).catch(() => {});
    return out;
  }) as T[K];
  const what = `the stop ${settled ? "done with" : "calling"} ${String(method)}`;
  return async () => {
    await waitFor(what, () => reached, 10_000, 0);
  };
}

/**
 * The stop's two waits for the history's rows and the incident records (calledOn, set before the
 * stop): `beforeProviders` (HISTORY_STOP_BEFORE_PROVIDERS_MS armed) and `last` (what the budget
 * leaves past TELEMETRY_STOP_RESERVE_MS), once telemetry's last flush, meanwhile, has ended: a
 * write to the database in flight takes its real time, not the skip's.
 */
function historyWaits(rt: Awaited<ReturnType<typeof startRuntime>>) {
  return {
    beforeProviders: calledOn(rt.history!, "detach"),
    last: calledOn(rt.telemetry, "stop", true),
  };
}

/**
 * Runs out on `clock`, as they come, the two waits (historyWaits) of a stop whose process's
 * deadline is `deadline`: HISTORY_STOP_BEFORE_PROVIDERS_MS, then what the deadline leaves past
 * TELEMETRY_STOP_RESERVE_MS -- the reserve itself still runs in real time. The stop's stages in
 * between (the providers', the journals' close) take their real time.
 */
async function runOutHistoryWaits(
  clock: SkippingClock,
  waits: ReturnType<typeof historyWaits>,
  deadline: StopDeadline,
): Promise<void> {
  await waits.beforeProviders();
  clock.skip(HISTORY_STOP_BEFORE_PROVIDERS_MS);
  await waits.last();
  clock.skip(Math.max(0, deadline.leftMs() - TELEMETRY_STOP_RESERVE_MS));
}

/**
 * Stops `rt` with a deadline STOP_BUDGET_MS away on `clock` and runs out its history's waits
 * (runOutHistoryWaits): `stopping` (for the test's clean-up) and `outcome`, whether the stop ended
 * within STOP_BUDGET_MS on that clock.
 */
function stopRunningOutHistory(
  rt: Awaited<ReturnType<typeof startRuntime>>,
  clock: SkippingClock,
): { stopping: Promise<void>; outcome: Promise<"stopped" | "held"> } {
  const waits = historyWaits(rt);
  const deadline = deadlineOn(clock, STOP_BUDGET_MS);
  const stopping = rt.stop(deadline);
  const ended = within(stopping, STOP_BUDGET_MS, clock);
  return { stopping, outcome: runOutHistoryWaits(clock, waits, deadline).then(() => ended) };
}

/** Whether a second runtime could take the lock of `dir` now (taken, and let go again). */
async function lockFree(dir: string): Promise<boolean> {
  const lock = await lockDataDir(dir);
  if ("heldBy" in lock) return false;
  lock.release();
  return true;
}

/**
 * The data_dir lock is kept while the stop's writes the disk holds may still land, and released
 * once they ended (the disk answered).
 */
async function lockKeptUntilWritten(dir: string, release: () => void): Promise<void> {
  assert.equal(
    await lockFree(dir),
    false,
    "the data_dir lock was released while the disk still held the stop's writes",
  );
  release();
  await waitFor("the data_dir lock released once the held writes ended", () => lockFree(dir));
}

/**
 * Real journal files whose appends under `part` wait, from `hang(until)` on, until `until` settles
 * (by default until `release()`: a hung mount, a dying SD card); `held()`: how many did.
 */
function hungDisk(part: string) {
  let until: Promise<void> | null = null;
  let held = 0;
  const released = Promise.withResolvers<void>();
  const files = new InterceptedAppends(part, async (text, append) => {
    if (until !== null) {
      held++;
      await until;
    }
    await append(text);
  });
  return {
    files,
    hang: (answersAt: Promise<void> = released.promise) => {
      until = answersAt;
    },
    held: () => held,
    release: () => released.resolve(),
  };
}

/**
 * Telemetry's last flush (the stop's) wrote the samples polled before the stop to `db`, and the
 * data_dir lock of `rt` is kept until the writes `disk` held end (lockKeptUntilWritten).
 */
async function assertFlushedAndLockKept(
  rt: { config: Config },
  db: FakeInflux,
  disk: ReturnType<typeof hungDisk>,
): Promise<void> {
  assert.ok(
    db.lines.some((l) => l.startsWith("runtime_signal,")),
    "telemetry's last flush wrote the samples polled before the stop",
  );
  await lockKeptUntilWritten(rt.config.runtime.dataDir, disk.release);
}

/** The lines counting history rows the stop did not write. */
function rowsNotWritten(lines: readonly string[]): string[] {
  return lines.filter((l) => /history row\(s\) not written/.test(l));
}

const CASES = [
  {
    journal: "audit journal",
    part: "/audit/",
    bound: AUDIT_STOP_MS,
    name: "AUDIT_STOP_MS",
    closing: (rt: Awaited<ReturnType<typeof startRuntime>>) => calledOn(rt.audit, "close"),
  },
  {
    journal: "run records",
    part: "/runs",
    bound: RUNS_STOP_MS,
    name: "RUNS_STOP_MS",
    closing: (rt: Awaited<ReturnType<typeof startRuntime>>) => calledOn(rt.runs, "shutdown"),
  },
] as const;

for (const { journal, part, bound, name, closing } of CASES) {
  Deno.test(`Kernel.stop with the ${journal}' disk hung ends within ${name}, and telemetry's last flush still runs`, async () => {
    const disk = hungDisk(part);
    const db = new FakeInflux();
    const { log, lines } = capturingLogger({ level: "warn" });
    const clock = new SkippingClock();
    const rt = await startRuntime(
      testConfig({ providers: [simProvider("sim0")], telemetry: telemetry(db.url) }),
      { host: { log, files: disk.files, lockDataDir, clock } },
    );
    let stopping: Promise<void> | null = null;
    try {
      // A run open: the run records write at their close (its count of events left out).
      await rt.runs.open({});
      await afterPolls(rt, "sim0/tempctl0", 2);
      disk.hang();
      await rt.modes.request("MANUAL"); // an audit entry, a run event: held by the disk
      assert.equal(db.lines.length, 0, "telemetry flushed before the stop");
      const closed = closing(rt);
      stopping = rt.stop();
      const ended = within(stopping, bound + STOP_SLACK_MS, clock);
      await closed();
      clock.skip(bound); // the journal's close waited for: its bound runs out
      const outcome = await ended;
      assert.ok(disk.held() > 0, `the ${journal}' writes were held by the disk`);
      assert.equal(outcome, "stopped", `the stop waited past ${name} for the ${journal}' disk`);
      const warned = lines.filter((l) => l.includes(name));
      assert.equal(warned.length, 1, `one WARN naming ${name}:\n${lines.join("\n")}`);
      assert.match(warned[0]!, /^WARN/);
      await assertFlushedAndLockKept(rt, db, disk);
    } finally {
      disk.release();
      await (stopping ?? rt.stop());
      await db.close();
    }
  });
}

Deno.test("Kernel.stop with the history disk hung for good ends within the process's budget, counts the rows not written, and telemetry's last flush still runs", async () => {
  const disk = hungDisk("/history/");
  const db = new FakeInflux();
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("sim0")],
      history: { stepMs: 1000 },
      telemetry: telemetry(db.url),
    }),
    { host: { log, files: disk.files, lockDataDir, clock } },
  );
  let stopping: Promise<void> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 3);
    disk.hang();
    assert.equal(db.lines.length, 0, "telemetry flushed before the stop");
    const stop = stopRunningOutHistory(rt, clock);
    stopping = stop.stopping;
    const outcome = await stop.outcome;
    assert.ok(disk.held() > 0, "the history's last rows were held by the disk");
    assert.equal(outcome, "stopped", "the stop waited past its budget for the history's disk");
    const warned = rowsNotWritten(lines);
    assert.equal(warned.length, 1, `one WARN counting the rows not written:\n${lines.join("\n")}`);
    assert.match(warned[0]!, /^WARN .*stop: [1-9]\d* history row\(s\) not written within/);
    // The stop's whole budget (not a second signal's) ran out: the disk's, said so.
    assert.match(
      warned[0]!,
      /\): the disk does not answer \(no row written since the providers' stop began, \d+ ms ago\); the stop goes on without them /,
    );
    await assertFlushedAndLockKept(rt, db, disk);
  } finally {
    disk.release();
    await (stopping ?? rt.stop());
    await db.close();
  }
});

Deno.test("Kernel.stop whose budget runs out while the history disk answers slowly says it wrote rows meanwhile, not that the disk does not answer", async () => {
  // A slow disk: the write in flight when the stop begins is answered 1900 ms into the stop (its
  // rows written after the providers' stop began, 1 s in); the next one, the stop's last rows, not
  // within the stop's budget.
  const firstAnswers = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  let slow = false;
  let held = 0;
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (slow) await (held++ === 0 ? firstAnswers.promise : released.promise);
    await append(text);
  });
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0")], history: { stepMs: 1000 } }),
    { host: { log, files, lockDataDir, clock } },
  );
  let stopping: Promise<void> | null = null;
  let answering: ReturnType<Clock["setTimer"]> | undefined;
  try {
    await afterPolls(rt, "sim0/tempctl0", 3);
    slow = true;
    await waitFor("a write of the history's rows in flight", () => held > 0);
    const waits = historyWaits(rt);
    const deadline = deadlineOn(clock, STOP_BUDGET_MS);
    stopping = rt.stop(deadline);
    const ended = within(stopping, STOP_BUDGET_MS, clock);
    const answersAt = clock.monoMs() + 1900;
    answering = clock.setTimer(() => firstAnswers.resolve(), 1900);
    await waits.beforeProviders();
    clock.skip(HISTORY_STOP_BEFORE_PROVIDERS_MS);
    // In the history's last wait, on to where the disk answers the first write; it holds the
    // next (the stop's last rows) until the rest of the budget has run out.
    await waits.last();
    clock.skip(Math.max(0, answersAt - clock.monoMs()));
    await waitFor("the stop's last rows held by the disk", () => held > 1, 10_000, 0);
    clock.skip(Math.max(0, deadline.leftMs() - TELEMETRY_STOP_RESERVE_MS));
    assert.equal(await ended, "stopped");
    assert.ok(held > 1, "the stop's last rows were held by the disk");
    const warned = rowsNotWritten(lines);
    assert.equal(warned.length, 1, `one WARN counting the rows not written:\n${lines.join("\n")}`);
    // Before: "...: the disk does not answer; ...", of a disk that wrote rows in the stop.
    assert.ok(!warned[0]!.includes("does not answer"), warned[0]);
    assert.match(
      warned[0]!,
      /^WARN .*stop: [1-9]\d* history row\(s\) not written within \d+ ms after the providers' stop \(the stop's budget, less TELEMETRY_STOP_RESERVE_MS \d+\): the disk answers, slowly: it wrote [1-9]\d* row\(s\) in the \d+ ms since the providers' stop began, and the stop's budget ran out first; the stop goes on without them /,
    );
    await lockKeptUntilWritten(rt.config.runtime.dataDir, released.resolve);
  } finally {
    if (answering !== undefined) clock.clearTimer(answering);
    firstAnswers.resolve();
    released.resolve();
    await (stopping ?? rt.stop());
  }
});

Deno.test("Kernel.stop with a write under way at its ask, answered a moment after it, and the disk hung from then on says the disk does not answer", async () => {
  // The write in flight when the stop begins is answered 50 ms into the stop; the disk holds every
  // write after it for good. Before: "the disk answers, slowly: it wrote <n> row(s) ..." -- the
  // rows of that write, counted from the stop's ask, of a disk silent for the rest of the stop.
  const firstAnswers = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  let slow = false;
  let held = 0;
  const files = new InterceptedAppends("/history/", async (text, append) => {
    if (slow) await (held++ === 0 ? firstAnswers.promise : released.promise);
    await append(text);
  });
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0")], history: { stepMs: 1000 } }),
    { host: { log, files, lockDataDir, clock } },
  );
  let stopping: Promise<void> | null = null;
  let answering: ReturnType<typeof setTimeout> | undefined;
  try {
    await afterPolls(rt, "sim0/tempctl0", 3);
    slow = true;
    await waitFor("a write of the history's rows in flight", () => held > 0);
    const waits = historyWaits(rt);
    const deadline = deadlineOn(clock, STOP_BUDGET_MS);
    const writtenBefore = rt.history!.diskRowsWritten;
    stopping = rt.stop(deadline);
    const ended = within(stopping, STOP_BUDGET_MS, clock);
    answering = setTimeout(() => firstAnswers.resolve(), 50);
    // Its rows written before the stop's waits run out (the first, HISTORY_STOP_BEFORE_PROVIDERS_MS,
    // before the providers' stop).
    await waitFor(
      "the write under way at the stop's ask answered",
      () => rt.history!.diskRowsWritten > writtenBefore,
      10_000,
      0,
    );
    await runOutHistoryWaits(clock, waits, deadline);
    assert.equal(await ended, "stopped");
    assert.ok(held > 1, "the stop's last rows were held by the disk");
    const warned = rowsNotWritten(lines);
    assert.equal(warned.length, 1, `one WARN counting the rows not written:\n${lines.join("\n")}`);
    assert.ok(!warned[0]!.includes("answers, slowly"), warned[0]);
    assert.match(
      warned[0]!,
      /\): the disk does not answer \(no row written since the providers' stop began, \d+ ms ago\); the stop goes on without them /,
    );
    await lockKeptUntilWritten(rt.config.runtime.dataDir, released.resolve);
  } finally {
    clearTimeout(answering);
    firstAnswers.resolve();
    released.resolve();
    await (stopping ?? rt.stop());
  }
});

/** How long the history's disk stalls in the stop below before it answers again. */
const STALL_MS = 1800;

Deno.test("Kernel.stop with the history disk stalled for a while writes every row the budget leaves time for (the API off: a 3 s budget)", async () => {
  let stalled: Promise<void> | null = null;
  const disk = hungDisk("/history/");
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0")], history: { stepMs: 1000 } }),
    { host: { log, files: disk.files, lockDataDir, clock } },
  );
  let stopping: Promise<void> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 3);
    // The disk answers again STALL_MS into the stop: past HISTORY_STOP_BEFORE_PROVIDERS_MS, well
    // within the budget (nothing else of the stop needs the rest of it).
    stalled = new Promise<void>((r) => clock.setTimer(r, STALL_MS));
    disk.hang(stalled);
    const waits = historyWaits(rt);
    stopping = rt.stop(deadlineOn(clock, STOP_BUDGET_MS));
    const ended = within(stopping, STOP_BUDGET_MS, clock);
    await waits.beforeProviders();
    clock.skip(HISTORY_STOP_BEFORE_PROVIDERS_MS);
    // In the history's last wait: on to where the disk answers again (the budget's end further on).
    await waits.last();
    clock.skip(STALL_MS - HISTORY_STOP_BEFORE_PROVIDERS_MS);
    const outcome = await ended;
    assert.equal(outcome, "stopped", "the stop waited past its budget for the history's disk");
    const pending = rt.history!.diskRowsPending;
    const free = await lockFree(rt.config.runtime.dataDir);
    assert.ok(disk.held() > 0, "the history's last rows were held by the disk");
    assert.deepEqual(
      rowsNotWritten(lines),
      [],
      "the stop went on without the history's rows while its budget still had time for them",
    );
    assert.equal(
      pending,
      0,
      "history rows still unwritten when the stop ended (the process exits)",
    );
    assert.equal(free, true, "the data_dir lock still held when the stop ended");
  } finally {
    await stalled;
    await (stopping ?? rt.stop());
  }
});

Deno.test("Kernel.stop with the history disk hung for good ends within the hurried deadline a second stop signal sets", async () => {
  const disk = hungDisk("/history/");
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("sim0")],
      runtime: { shutdownTimeoutMs: 10_000 },
      history: { stepMs: 1000 },
    }),
    { host: { log, files: disk.files, lockDataDir, clock } },
  );
  let stopping: Promise<void> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 3);
    const pid = rt.registry.host("sim0")!.session!.pid;
    disk.hang();
    const waits = historyWaits(rt);
    // The process's deadline: runtime.shutdown_timeout_ms and its grace, until a second signal.
    let endsAt = clock.monoMs() + 11_000;
    const hurry = Promise.withResolvers<void>();
    stopping = rt.stop({ leftMs: () => endsAt - clock.monoMs(), hurried: hurry.promise });
    await waits.beforeProviders();
    clock.skip(HISTORY_STOP_BEFORE_PROVIDERS_MS);
    await waitFor("the provider stopped while the history's disk hangs", () => !processAlive(pid));
    // The stop now waits for the history's rows: a second stop signal leaves it HURRIED_SHUTDOWN_MS.
    await waits.last();
    endsAt = clock.monoMs() + HURRIED_SHUTDOWN_MS;
    hurry.resolve();
    const ended = within(stopping, HURRIED_SHUTDOWN_MS, clock);
    await macrotask(); // the wait cut at the hurry, bounded again by what the hurried budget leaves
    clock.skip(Math.max(0, endsAt - clock.monoMs() - TELEMETRY_STOP_RESERVE_MS));
    const outcome = await ended;
    assert.equal(outcome, "stopped", "the stop waited past the hurried deadline for the disk");
    const warned = rowsNotWritten(lines);
    assert.equal(warned.length, 1, `one WARN counting the rows not written:\n${lines.join("\n")}`);
  } finally {
    disk.release();
    await (stopping ?? rt.stop());
  }
});

/**
 * The audit journal's files, whose appends wait while `hung` until `released`, and whose close then
 * fails (a hung NFS mount answering at last with EIO).
 */
class HeldThenFailingAudit extends RealJournalFiles {
  hung = false;
  held = 0;
  readonly released = Promise.withResolvers<void>();
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await super.openAppend(path);
    if (!path.includes("/audit/")) return handle;
    return {
      append: async (text: string) => {
        if (this.hung) {
          this.held++;
          await this.released.promise;
        }
        await handle.append(text);
      },
      sync: () => handle.sync(),
      truncate: (size: number) => handle.truncate(size),
      close: () => {
        handle.close();
        if (this.hung) throw new Error("Input/output error (os error 5)");
      },
    };
  }
}

Deno.test("shutdown with the audit journal's disk hung exits 4 when its close fails after the stop went on without it, before the process exits, never saying 'shutdown complete'", async () => {
  const files = new HeldThenFailingAudit();
  const { log, lines } = capturingLogger({ level: "info" });
  const clock = new SkippingClock();
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { log, files, lockDataDir, clock },
  });
  let stopping: Promise<number> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 2);
    files.hung = true;
    await rt.modes.request("MANUAL"); // an audit entry: held by the disk
    const closing = calledOn(rt.audit, "close");
    stopping = shutDown((deadline) => rt.stop(deadline), { onRepeat: () => {} }, rt.config, log, {
      clock,
      killProviders: () => Promise.resolve(),
    });
    await closing();
    clock.skip(AUDIT_STOP_MS); // the audit journal's close waited for: its bound runs out
    const code = await stopping;
    assert.ok(files.held > 0, "the audit journal's writes were held by the disk");
    assert.equal(code, EXIT_OK, `the stop went on without the audit journal:\n${lines.join("\n")}`);
    // The disk answers before the process exits: the close fails.
    files.released.resolve();
    await waitFor(
      "the audit journal's close failed",
      () => lines.some((l) => l.includes("stop: audit journal failed")),
    );
    const failedLine = lines.filter((l) => l.includes("stop: audit journal failed"));
    assert.equal(failedLine.length, 1, `one ERROR for the failed close:\n${lines.join("\n")}`);
    assert.match(failedLine[0]!, /^ERROR .*after the stop had ended without it: Input\/output/);
    assert.deepEqual(rt.stopStagesFailedLate, ["audit journal"]);
    assert.equal(
      exitCodeAfterStop(code, rt.stopStagesFailedLate, log),
      EXIT_INTERNAL_ERROR,
      "a stop stage that failed before the process exits is a failed stop (exit 4)",
    );
    assert.equal(
      lines.filter((l) => /^ERROR .*shutdown failed: 1 stop stage\(s\) failed after/.test(l))
        .length,
      1,
      `one ERROR naming the late failure at exit:\n${lines.join("\n")}`,
    );
    // A launcher (anolis's) reads "shutdown complete" as a clean stop: not said by one that
    // exits 4, before or after its ERROR.
    assert.equal(
      lines.filter((l) => /shutdown complete/.test(l)).length,
      0,
      `'shutdown complete' said by a shutdown that exits 4:\n${lines.join("\n")}`,
    );
  } finally {
    files.released.resolve();
    await (stopping ?? rt.stop());
  }
});

Deno.test("Kernel.stop with an InfluxDB that does not answer ends within the hurried deadline a second stop signal sets during telemetry's last flush", async () => {
  let requests = 0;
  const answer = Promise.withResolvers<void>();
  const db = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    requests++;
    await req.body?.cancel();
    await answer.promise; // a database that accepts the write and never answers it
    return new Response(null, { status: 204 });
  });
  const { log, lines } = capturingLogger({ level: "warn" });
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("sim0")],
      runtime: { shutdownTimeoutMs: 10_000 },
      telemetry: telemetry(`http://127.0.0.1:${db.addr.port}`),
    }),
    { host: { log, lockDataDir } },
  );
  let stopping: Promise<void> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 2);
    // The process's deadline: runtime.shutdown_timeout_ms and its grace, until a second signal.
    let endsAt = performance.now() + 11_000;
    const hurry = Promise.withResolvers<void>();
    stopping = rt.stop({ leftMs: () => endsAt - performance.now(), hurried: hurry.promise });
    await waitFor("telemetry's last flush sent its write", () => requests > 0);
    endsAt = performance.now() + HURRIED_SHUTDOWN_MS;
    hurry.resolve();
    const outcome = await within(stopping, HURRIED_SHUTDOWN_MS);
    assert.equal(outcome, "stopped", "the stop waited past the hurried deadline for InfluxDB");
    assert.equal(
      lines.filter((l) => /telemetry rows could not be written/.test(l)).length,
      1,
      `one WARN counting the telemetry rows lost:\n${lines.join("\n")}`,
    );
  } finally {
    answer.resolve();
    await (stopping ?? rt.stop());
    await db.shutdown();
  }
});

/**
 * The history tier's files, whose appends work and whose fsync waits while `hung` until
 * `released` (a dying SD card that takes writes into the page cache and never finishes a sync).
 */
class HungSyncHistory extends InterceptedSyncs {
  hung = false;
  syncsHeld = 0;
  readonly released = Promise.withResolvers<void>();
  constructor() {
    super("/history/");
  }
  protected override async interceptSync(sync: () => Promise<void>): Promise<void> {
    if (this.hung) {
      this.syncsHeld++;
      await this.released.promise;
    }
    await sync();
  }
}

Deno.test("Kernel.stop with the history disk's last fsync hung says the tier's close did not end, never '0 history row(s) not written'", async () => {
  const files = new HungSyncHistory();
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0")], history: { stepMs: 1000 } }),
    { host: { log, files, lockDataDir, clock } },
  );
  let stopping: Promise<void> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 3);
    files.hung = true;
    const stop = stopRunningOutHistory(rt, clock);
    stopping = stop.stopping;
    const outcome = await stop.outcome;
    assert.equal(outcome, "stopped", "the stop waited past its budget for the history's fsync");
    assert.ok(files.syncsHeld > 0, "the history's last fsync was held by the disk");
    assert.equal(rt.history!.diskRowsPending, 0, "every history row was written");
    assert.deepEqual(
      lines.filter((l) => /\b0 history row\(s\)/.test(l)),
      [],
      `a WARN counting 0 rows not written:\n${lines.join("\n")}`,
    );
    const warned = lines.filter((l) => /after the providers' stop/.test(l));
    assert.equal(warned.length, 1, `one WARN for the close not ended:\n${lines.join("\n")}`);
    assert.match(
      warned[0]!,
      /^WARN .*stop: the history disk tier's close \(every row written, .*\) not ended within/,
    );
    await lockKeptUntilWritten(rt.config.runtime.dataDir, () => files.released.resolve());
  } finally {
    files.released.resolve();
    await (stopping ?? rt.stop());
  }
});

/**
 * The WARN before the providers' stop (HISTORY_STOP_BEFORE_PROVIDERS_MS), the stop's only one, with
 * an e-stop's incident record captured by the stop and its write held by the disk; `diskMaxBytes`:
 * history.disk_max_bytes (0: no disk tier).
 */
async function warnWithIncidentHeld(diskMaxBytes: number): Promise<string> {
  let hung = false;
  let held = 0;
  const released = Promise.withResolvers<void>();
  const files = new InterceptedAppends("/incidents/", async (text, append) => {
    if (hung) {
      held++;
      await released.promise;
    }
    await append(text);
  });
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("sim0")],
      // The e-stop's incident waits for its window after: captured and written by the stop.
      history: { stepMs: 1000, incidentAfterS: 60, diskMaxBytes },
    }),
    { host: { log, files, lockDataDir, clock } },
  );
  let stopping: Promise<void> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 2);
    await rt.estop.trigger("stop edge");
    hung = true;
    const waits = historyWaits(rt);
    const deadline = deadlineOn(clock, STOP_BUDGET_MS);
    stopping = rt.stop(deadline);
    const ended = within(stopping, STOP_BUDGET_MS, clock);
    await runOutHistoryWaits(clock, waits, deadline);
    await ended;
    assert.ok(held > 0, "the incident record's write was held by the disk");
    const warned = lines.filter((l) => /HISTORY_STOP_BEFORE_PROVIDERS_MS/.test(l));
    assert.equal(warned.length, 1, `one WARN before the providers' stop:\n${lines.join("\n")}`);
    return warned[0]!;
  } finally {
    released.resolve();
    await (stopping ?? rt.stop());
  }
}

Deno.test("Kernel.stop with the incident records' disk hung counts the records not written in its WARN before the providers' stop", async () => {
  assert.match(
    await warnWithIncidentHeld(DEFAULT_HISTORY.diskMaxBytes),
    /^WARN .*stop: 1 incident record\(s\) and the history's last rows still being written 1000 ms into/,
  );
});

Deno.test("Kernel.stop with the incident records' disk hung and no history disk tier (disk_max_bytes 0) names no history rows in its WARN before the providers' stop", async () => {
  const warn = await warnWithIncidentHeld(0);
  assert.match(warn, /^WARN .*stop: 1 incident record\(s\) still being written 1000 ms into/);
  assert.doesNotMatch(
    warn,
    /history row|history.s last rows/,
    "no disk tier: the history writes no rows",
  );
});

Deno.test("Kernel.stop keeps the data_dir lock while an incident record's write IncidentRecorder.stop left behind (INCIDENT_STOP_WAIT_MS) may still land", async () => {
  const disk = hungDisk("/incidents/");
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { log, files: disk.files, lockDataDir, clock },
  });
  let stopping: Promise<void> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 2);
    disk.hang();
    await rt.estop.trigger("held incident record"); // an incident, pending until the stop
    const waits = historyWaits(rt);
    stopping = rt.stop();
    // IncidentRecorder.stop's wait (INCIDENT_STOP_WAIT_MS) runs out in the stop's last wait.
    await waits.beforeProviders();
    clock.skip(HISTORY_STOP_BEFORE_PROVIDERS_MS);
    await waits.last();
    clock.skip(INCIDENT_STOP_WAIT_MS - HISTORY_STOP_BEFORE_PROVIDERS_MS);
    await stopping;
    assert.ok(disk.held() > 0, "the incident record's write was held by the disk");
    assert.equal(
      lines.filter((l) => /^WARN .*incident record\(s\) not written within .*left behind/.test(l))
        .length,
      1,
      `one WARN leaving the record behind:\n${lines.join("\n")}`,
    );
    await lockKeptUntilWritten(rt.config.runtime.dataDir, disk.release);
  } finally {
    disk.release();
    await (stopping ?? rt.stop());
  }
});

Deno.test("Kernel.stop whose hurried budget leaves the journals no time does not say their disk does not answer: it says the time left", async () => {
  // The audit journal's disk holds its last write (it answers once released, after the stop): the
  // close is cut by the stop's budget (nothing left past telemetry's reserve), long before its own
  // AUDIT_STOP_MS -- which of the two ran out is what the line says, not a disk it cannot judge.
  const disk = hungDisk("/audit/");
  const { log, lines } = capturingLogger({ level: "warn" });
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { log, files: disk.files, lockDataDir },
  });
  let stopping: Promise<void> | null = null;
  try {
    await rt.runs.open({});
    await afterPolls(rt, "sim0/tempctl0", 2);
    disk.hang();
    await rt.modes.request("MANUAL"); // an audit entry: held by the disk until released
    // A second stop signal came, and the providers' stop used what it left: nothing is left past
    // telemetry's reserve when the journals close.
    const hurry = Promise.withResolvers<void>();
    hurry.resolve();
    stopping = rt.stop({ leftMs: () => 100, hurried: hurry.promise });
    await stopping;
    assert.ok(disk.held() > 0, "the audit journal's write was held by the disk");
    const cut = lines.filter((l) => l.includes("audit journal not closed within"));
    assert.equal(
      cut.length,
      1,
      `the audit journal's close cut by the budget:\n${lines.join("\n")}`,
    );
    for (const line of cut) {
      assert.match(line, /^WARN /);
      // Before: "its disk does not answer", of a close the budget cut, not its bound.
      assert.ok(!line.includes("does not answer"), line);
      assert.match(line, /: the time left was \d+ ms \(.*\); the disk may be fine; /);
    }
    await lockKeptUntilWritten(rt.config.runtime.dataDir, disk.release);
  } finally {
    disk.release();
    await (stopping ?? rt.stop());
  }
});

Deno.test("Kernel.stop whose hurried budget cuts the wait for the history's last rows does not say the disk does not answer: it says the time left", async () => {
  // The history's disk holds its last rows (it answers once released, after the stop): their wait
  // after the providers' stop is cut by the hurried budget (nothing left past telemetry's
  // reserve), not by a disk that had the stop's budget to answer in.
  const disk = hungDisk("/history/");
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0")], history: { stepMs: 1000 } }),
    { host: { log, files: disk.files, lockDataDir, clock } },
  );
  let stopping: Promise<void> | null = null;
  try {
    await afterPolls(rt, "sim0/tempctl0", 3);
    disk.hang();
    const waits = historyWaits(rt);
    // A second stop signal came, and left the stop nothing past telemetry's reserve.
    const hurry = Promise.withResolvers<void>();
    hurry.resolve();
    stopping = rt.stop({ leftMs: () => 100, hurried: hurry.promise });
    await waits.beforeProviders();
    clock.skip(HISTORY_STOP_BEFORE_PROVIDERS_MS);
    await stopping;
    assert.ok(disk.held() > 0, "the history's last rows were held by the disk");
    const warned = rowsNotWritten(lines);
    assert.equal(warned.length, 1, `one WARN counting the rows not written:\n${lines.join("\n")}`);
    // Before: "...: the disk does not answer; ...", of a disk the hurried budget gave no time.
    assert.ok(!warned[0]!.includes("does not answer"), warned[0]);
    assert.match(
      warned[0]!,
      /^WARN .*stop: [1-9]\d* history row\(s\) not written within \d+ ms after the providers' stop \(the stop's hurried budget, less TELEMETRY_STOP_RESERVE_MS \d+\): the time left was \d+ ms \(what the hurried budget left after the stages before it; \d+ ms since the stop asked for them\); the disk may be fine; the stop goes on without them /,
    );
    await lockKeptUntilWritten(rt.config.runtime.dataDir, disk.release);
  } finally {
    disk.release();
    await (stopping ?? rt.stop());
  }
});

/** The journals whose close the stop waits for at most its bound (CASES), by name. */
const [AUDIT, RUNS] = CASES;

/**
 * Real journal files whose appends and fsyncs under `part` wait, while `gate` is set, for what it
 * returns (a disk that answers slowly, or once and then no more).
 */
class GatedJournal extends RealJournalFiles {
  gate: ((op: "append" | "sync") => Promise<void>) | null = null;
  constructor(readonly part: string) {
    super();
  }
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await super.openAppend(path);
    if (!path.includes(this.part)) return handle;
    return {
      append: async (text: string) => {
        await this.gate?.("append");
        await handle.append(text);
      },
      sync: async () => {
        await this.gate?.("sync");
        await handle.sync();
      },
      truncate: (size: number) => handle.truncate(size),
      close: () => handle.close(),
    };
  }
}

/** What closeWarn's journal writes before the stop, and how the write under way then ends. */
interface UnderWay {
  /** Makes the journal write: by default a MANUAL request (an audit entry, a run's event). */
  readonly write?: (rt: Awaited<ReturnType<typeof startRuntime>>) => Promise<unknown>;
  /** The write under way when the stop asked fails, 50 ms after (EIO), writing nothing. */
  readonly fails?: boolean;
}

/**
 * The WARN of a stop whose `closing` journal's close runs out its bound (AUDIT_STOP_MS, RUNS_STOP_MS): the
 * disk holds the journal's write (a run open, for the run records) from a MANUAL request on, and
 * answers it 50 ms after the stop asked the journal to close (the write under way when the wait
 * began); `inWait` is what an append or an fsync begun after that ask waits for (`held()`: until
 * the disk answers again, once the stop has ended). The bound runs out on the clock (a skip) once
 * the disk holds an append or an fsync begun in the wait: what it answered before is in the wait.
 */
async function closeWarn(
  closing: (typeof CASES)[number],
  inWait: (op: "append" | "sync", held: () => Promise<void>) => Promise<void>,
  underWay: UnderWay = {},
): Promise<string> {
  const { journal: stage, part, bound: ms, name: bound } = closing;
  const files = new GatedJournal(part);
  const answers = Promise.withResolvers<void>();
  const released = Promise.withResolvers<void>();
  let asked = false;
  let heldBefore = 0;
  let heldInWait = 0;
  const held = () => {
    heldInWait++;
    return released.promise;
  };
  const { log, lines } = capturingLogger({ level: "warn" });
  const clock = new SkippingClock();
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { log, files, lockDataDir, clock },
  });
  let stopping: Promise<void> | null = null;
  let answering: ReturnType<typeof setTimeout> | undefined;
  try {
    if (closing === RUNS) await rt.runs.open({}); // its events: the run records' writes
    await afterPolls(rt, "sim0/tempctl0", 2);
    files.gate = async (op) => {
      if (asked) return await inWait(op, held);
      if (op === "append") heldBefore++;
      await answers.promise;
      if (underWay.fails) throw new Error("Input/output error (os error 5)");
    };
    await (underWay.write ?? ((rt) => rt.modes.request("MANUAL")))(rt);
    await waitFor(`the ${stage}' write held`, () => heldBefore > 0);
    const ask = () => {
      asked = true;
      answering = setTimeout(() => answers.resolve(), 50);
    };
    if (closing === AUDIT) {
      const close = rt.audit.close.bind(rt.audit);
      rt.audit.close = () => (ask(), close());
    } else {
      const shutdown = rt.runs.shutdown.bind(rt.runs);
      rt.runs.shutdown = () => (ask(), shutdown());
    }
    stopping = rt.stop();
    const ended = within(stopping, ms + STOP_SLACK_MS, clock);
    await waitFor(`the ${stage}' disk holding a write begun in the wait`, () => heldInWait > 0);
    clock.skip(ms);
    assert.equal(await ended, "stopped");
    assert.ok(asked, `the stop asked the ${stage} to close`);
    const warned = lines.filter((l) => l.includes(`${stage} not closed within`));
    assert.equal(warned.length, 1, `one WARN naming ${bound}:\n${lines.join("\n")}`);
    await lockKeptUntilWritten(rt.config.runtime.dataDir, released.resolve);
    return warned[0]!;
  } finally {
    clearTimeout(answering);
    answers.resolve();
    released.resolve();
    await (stopping ?? rt.stop());
  }
}

Deno.test("Kernel.stop whose AUDIT_STOP_MS runs out while the audit journal's disk answers slowly says it wrote lines in the wait, not that the disk does not answer", async () => {
  // The first write begun in the wait is answered 150 ms after it began; the next one and the
  // close's fsync after it, not within AUDIT_STOP_MS.
  let answered = false;
  let appends = 0;
  const warn = await closeWarn(AUDIT, async (op, held) => {
    if (op === "sync") {
      if (answered) await held();
      return;
    }
    if (appends++ > 0) return await held();
    await new Promise((r) => setTimeout(r, 150));
    answered = true;
  });
  // Before: "...: its disk does not answer; ...", of a disk that wrote lines in the wait.
  assert.ok(!warn.includes("does not answer"), warn);
  assert.match(
    warn,
    /^WARN .*stop: audit journal not closed within \d+ ms \(AUDIT_STOP_MS 1000\): its disk answers, slowly: it wrote [1-9]\d* line\(s\) in the wait, and AUDIT_STOP_MS ran out first; the stop goes on without it /,
  );
});

Deno.test("Kernel.stop with the audit journal's write under way when its close was asked, answered a moment after, and the disk hung from then on says the disk does not answer", async () => {
  // Every append begun in the wait is held until after the stop: only the write under way when
  // the wait began was answered (50 ms in). Its lines are no sign of a disk that answers.
  const warn = await closeWarn(AUDIT, async (op, held) => {
    if (op === "append") await held();
  });
  assert.ok(!warn.includes("answers, slowly"), warn);
  assert.match(
    warn,
    /^WARN .*stop: audit journal not closed within \d+ ms \(AUDIT_STOP_MS 1000\): its disk does not answer \(no line written in the wait, the [1-9]\d* line\(s\) being written when it began not counted\); the stop goes on without it /,
  );
});

Deno.test("Kernel.stop whose RUNS_STOP_MS runs out while the run records' disk answers slowly says it wrote lines in the wait, not that the disk does not answer", async () => {
  // The first append begun in the wait is answered 150 ms after it began, and the first fsync
  // after it; every other append or fsync, not within RUNS_STOP_MS.
  const answering: ("append" | "sync")[] = ["append", "sync"];
  const warn = await closeWarn(RUNS, async (op, held) => {
    if (answering[0] !== op) return await held();
    answering.shift();
    if (op === "append") await new Promise((r) => setTimeout(r, 150));
  });
  assert.ok(!warn.includes("does not answer"), warn);
  assert.match(
    warn,
    /^WARN .*stop: run records not closed within \d+ ms \(RUNS_STOP_MS 1000\): its disk answers, slowly: it wrote [1-9]\d* line\(s\) in the wait, and RUNS_STOP_MS ran out first; the stop goes on without it /,
  );
});

/** Mode changes of the run records' write under way in the tests below: one write of them all. */
const EVENTS_UNDER_WAY = 8;

Deno.test("Kernel.stop with the run records' write under way when its close was asked failing, and a line written after it, says the disk answers, slowly", async () => {
  // The write under way when the wait began (EVENTS_UNDER_WAY run events, one write) fails 50 ms
  // in, writing none of them; every append begun in the wait is answered, no fsync within
  // RUNS_STOP_MS. Before: "its disk does not answer (no line written in the wait, ...)" -- the
  // lines the failed write never wrote taken off the line written after it.
  const warn = await closeWarn(RUNS, async (op, held) => {
    if (op === "sync") await held();
  }, {
    write: (rt) => {
      for (let i = 0; i < EVENTS_UNDER_WAY; i++) {
        rt.bus.publish({
          kind: "mode_change",
          previous_mode: i % 2 === 0 ? "IDLE" : "MANUAL",
          new_mode: i % 2 === 0 ? "MANUAL" : "IDLE",
          timestamp_ms: i,
        });
      }
      return Promise.resolve();
    },
    fails: true,
  });
  assert.ok(!warn.includes("does not answer"), warn);
  assert.match(
    warn,
    new RegExp(
      String
        .raw`^WARN .*stop: run records not closed within \d+ ms \(RUNS_STOP_MS 1000\): its disk answers, slowly: it wrote 1 line\(s\) in the wait, and RUNS_STOP_MS ran out first; the stop goes on without it `,
    ),
  );
});
