/**
 * shutDown's deadlines on a manual clock: the budget, the hurry a second stop signal starts, and
 * later signals that must not push the hurried deadline back (an operator pressing Ctrl-C again
 * and again, or a supervisor repeating SIGTERM, would otherwise keep a hung shutdown alive).
 */
import assert from "node:assert/strict";
import {
  exitCodeAfterStop,
  HURRIED_SHUTDOWN_MS,
  shutDown,
  shutdownBudgetMs,
} from "../../src/app/process.ts";
import { EXIT_INTERNAL_ERROR, EXIT_OK } from "../../src/app/exit_codes.ts";
import { HTTP_SHUTDOWN_MAX_MS, LineLogger } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";

function rig() {
  const clock = new ManualClock(0);
  const { log, lines } = capturingLogger({ level: "info", now: () => 0 });
  let repeat: (signal: Deno.Signal) => void = () => {};
  let kills = 0;
  const config = testConfig({ runtime: { shutdownTimeoutMs: 10_000 } });
  const never = new Promise<void>(() => {});
  const exit = shutDown(never, { onRepeat: (l) => (repeat = l) }, config, log, {
    clock,
    killProviders: () => (kills++, Promise.resolve()),
  });
  let code: number | null = null;
  exit.then((c) => (code = c));
  return {
    clock,
    lines,
    repeat: (s: Deno.Signal) => repeat(s),
    kills: () => kills,
    code: () => code,
  };
}

Deno.test("shutDown: a third stop signal does not push back the deadline the second one set", async () => {
  const r = rig();
  await r.clock.advanceAsync(100);
  r.repeat("SIGTERM"); // hurry: HURRIED_SHUTDOWN_MS from now
  await r.clock.advanceAsync(HURRIED_SHUTDOWN_MS - 100);
  r.repeat("SIGTERM"); // before the fix: HURRIED_SHUTDOWN_MS from here
  await r.clock.advanceAsync(100); // HURRIED_SHUTDOWN_MS after the second signal
  assert.equal(r.code(), EXIT_INTERNAL_ERROR, "exited at the second signal's deadline");
  assert.equal(r.kills(), 1, "the providers are killed once");
  assert.ok(r.lines.some((l) => l.includes("SIGTERM received again: already hurrying")));
  assert.ok(r.lines.some((l) => l.includes(`shutdown exceeded ${HURRIED_SHUTDOWN_MS} ms after`)));
});

Deno.test("shutDown: without a second signal the budget is shutdown_timeout_ms plus the grace; a finished stop exits 0", async () => {
  const r = rig();
  // With the API on, plus the time a request in flight may take to be answered (and, when it is
  // not, to be told its outcome is unknown).
  const budget = shutdownBudgetMs(testConfig({ runtime: { shutdownTimeoutMs: 10_000 } }));
  assert.equal(budget, 11_000 + HTTP_SHUTDOWN_MAX_MS);
  const noApi = testConfig({ runtime: { shutdownTimeoutMs: 10_000 } });
  assert.equal(shutdownBudgetMs({ ...noApi, http: { ...noApi.http, enabled: false } }), 11_000);
  await r.clock.advanceAsync(budget - 1);
  assert.equal(r.code(), null);
  await r.clock.advanceAsync(1);
  assert.equal(r.code(), EXIT_INTERNAL_ERROR);
  assert.equal(r.kills(), 0);

  const clock = new ManualClock(0);
  const log = new LineLogger({ level: "error", journald: false, now: () => 0, write: () => {} });
  const code = await shutDown(Promise.resolve(), { onRepeat: () => {} }, testConfig(), log, {
    clock,
    killProviders: () => Promise.resolve(),
  });
  assert.equal(code, EXIT_OK);
  assert.deepEqual(clock.pendingDueTimes(), [], "no deadline left behind");
});

Deno.test("a clean shutdown says 'shutdown complete' once, last, when no stop stage failed after it; one that did exits 4 without it", async () => {
  for (const failedLate of [[], ["audit journal"]]) {
    const { log, lines } = capturingLogger({ level: "info", now: () => 0 });
    const code = await shutDown(Promise.resolve(), { onRepeat: () => {} }, testConfig(), log, {
      clock: new ManualClock(0),
      killProviders: () => Promise.resolve(),
    });
    assert.equal(code, EXIT_OK);
    const exit = exitCodeAfterStop(code, failedLate, log);
    const complete = lines.filter((l) => /shutdown complete/.test(l));
    if (failedLate.length === 0) {
      assert.equal(exit, EXIT_OK);
      assert.equal(complete.length, 1, lines.join("\n"));
      assert.match(lines.at(-1)!, /^INFO .*shutdown complete$/);
    } else {
      assert.equal(exit, EXIT_INTERNAL_ERROR);
      assert.deepEqual(complete, [], `'shutdown complete' before an exit 4:\n${lines.join("\n")}`);
      assert.match(lines.at(-1)!, /^ERROR .*shutdown failed: 1 stop stage\(s\) failed after/);
    }
  }
});

Deno.test("exitCodeAfterStop: a shutdown that ended clean but left a provider process running (killed at exit) exits 4 without 'shutdown complete'", () => {
  const { log, lines } = capturingLogger({ level: "info", now: () => 0 });
  assert.equal(exitCodeAfterStop(EXIT_OK, [], log, 1), EXIT_INTERNAL_ERROR);
  assert.deepEqual(lines.filter((l) => /shutdown complete/.test(l)), [], lines.join("\n"));
  assert.equal(lines.length, 1, `one line: ${lines.join("\n")}`);
  assert.match(
    lines[0]!,
    /^ERROR .*shutdown failed: 1 provider process\(es\) not stopped by the stop \(killed at exit\)$/,
  );
  // With a stage failed late too: one line names both.
  const both = capturingLogger({ level: "info", now: () => 0 });
  assert.equal(exitCodeAfterStop(EXIT_OK, ["run records"], both.log, 2), EXIT_INTERNAL_ERROR);
  assert.equal(both.lines.length, 1, both.lines.join("\n"));
  assert.match(both.lines[0]!, /1 stop stage\(s\) failed .*run records; 2 provider process\(es\)/);
});
