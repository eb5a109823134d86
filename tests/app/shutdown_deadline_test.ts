/**
 * shutDown hands the stop it starts the deadline it enforces (Kernel.stop gives telemetry's last
 * flush what is left of it): the shutdown budget from the stop's start, then HURRIED_SHUTDOWN_MS
 * from a second stop signal. On a manual clock.
 */
import assert from "node:assert/strict";
import { HURRIED_SHUTDOWN_MS, shutDown, shutdownBudgetMs } from "../../src/app/process.ts";
import type { StopDeadline } from "../../src/app/kernel.ts";
import { EXIT_OK } from "../../src/app/exit_codes.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("shutDown hands the stop what is left of the shutdown budget, and of the hurried deadline after a second signal", async () => {
  const clock = new ManualClock(0);
  const { log } = capturingLogger({ level: "info", now: () => 0 });
  const config = testConfig({ runtime: { shutdownTimeoutMs: 10_000 } });
  let repeat: (signal: Deno.Signal) => void = () => {};
  let deadline: StopDeadline | null = null;
  let finish: () => void = () => {};
  const exit = shutDown(
    (d) => {
      deadline = d;
      return new Promise<void>((r) => (finish = r));
    },
    { onRepeat: (l) => (repeat = l) },
    config,
    log,
    { clock, killProviders: () => Promise.resolve() },
  );
  const d = deadline as StopDeadline | null;
  assert.ok(d !== null, "the stop is started with a deadline");
  assert.equal(d.leftMs(), shutdownBudgetMs(config));
  await clock.advanceAsync(300);
  assert.equal(d.leftMs(), shutdownBudgetMs(config) - 300);
  repeat("SIGTERM");
  assert.equal(d.leftMs(), HURRIED_SHUTDOWN_MS);
  await clock.advanceAsync(400);
  assert.equal(d.leftMs(), HURRIED_SHUTDOWN_MS - 400);
  finish();
  assert.equal(await exit, EXIT_OK);
});
