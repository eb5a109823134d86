/**
 * The stop after a failed start-up (app/process.ts stopAfterFailedStart) is bounded by the
 * shutdown budget: a start failed by a hung runtime.data_dir leaves a stop whose last writes go
 * to that same disk (the audit journal's closing record on a dead mount), and the process must
 * still exit with its start-up failure. On a manual clock.
 */
import assert from "node:assert/strict";
import { shutdownBudgetMs, stopAfterFailedStart } from "../../src/app/process.ts";
import type { StopDeadline } from "../../src/app/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("stopAfterFailedStart gives up on a stop that never ends once the shutdown budget runs out, saying so", async () => {
  const clock = new ManualClock(0);
  const { log, lines } = capturingLogger({ level: "info", now: () => 0 });
  const config = testConfig({ runtime: { shutdownTimeoutMs: 2000 } });
  const budgetMs = shutdownBudgetMs(config);
  let deadline: StopDeadline | null = null;
  let ended = false;
  const stopping = stopAfterFailedStart(
    (d) => {
      deadline = d;
      return new Promise<void>(() => {}); // held by a disk that never answers
    },
    config,
    log,
    clock,
  ).then(() => (ended = true));
  const d = deadline as StopDeadline | null;
  assert.ok(d !== null, "the stop is handed a deadline");
  assert.equal(d.leftMs(), budgetMs);
  await clock.advanceAsync(budgetMs - 1);
  assert.equal(ended, false, "the stop has its whole budget");
  await clock.advanceAsync(1);
  await stopping;
  assert.deepEqual(
    lines.filter((l) => l.startsWith("ERROR")),
    [
      "ERROR 1970-01-01T00:00:00.000Z stop after failed start-up exceeded " +
      `${budgetMs} ms; exiting anyway`,
    ],
  );
});

Deno.test("stopAfterFailedStart says a stop that fails, and returns", async () => {
  const clock = new ManualClock(0);
  const { log, lines } = capturingLogger({ level: "info", now: () => 0 });
  await stopAfterFailedStart(
    () => Promise.reject(new Error("runtime stopped, but 1 stop stage(s) failed: history")),
    testConfig(),
    log,
    clock,
  );
  assert.deepEqual(lines, [
    "ERROR 1970-01-01T00:00:00.000Z stop after failed start-up: runtime stopped, but 1 stop " +
    "stage(s) failed: history",
  ]);
  assert.equal(clock.pendingTimers, 0, "the budget's timer is cleared");
});
