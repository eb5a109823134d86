/**
 * shutDown hands the stop it starts the deadline it enforces (Kernel.stop gives telemetry's last
 * flush what is left of it, and its wait for the stop actions still running what it leaves past
 * the providers' own stop): the shutdown budget from the stop's start, then HURRIED_SHUTDOWN_MS
 * from a second stop signal, which its `hurried` tells at once. On a manual clock.
 */
import assert from "node:assert/strict";
import { HURRIED_SHUTDOWN_MS, shutDown, shutdownBudgetMs } from "../../src/app/process.ts";
import {
  PROVIDERS_STOP_MIN_MS,
  providersStopBudgetMs,
  STOP_ACTIONS_SHUTDOWN_RESERVE_MS,
  stopActionsShutdownWaitMs,
  type StopDeadline,
} from "../../src/app/kernel.ts";
import { EXIT_OK } from "../../src/app/exit_codes.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import type { Config } from "../../src/config/mod.ts";

/** shutDown on a manual clock, its stop held until `finish`: the deadline it hands the stop. */
function heldShutdown(config: Config, clock: ManualClock) {
  const { log } = capturingLogger({ level: "info", now: () => 0 });
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
  return { deadline: d, repeat: (s: Deno.Signal) => repeat(s), finish: () => finish(), exit };
}

Deno.test("shutDown hands the stop what is left of the shutdown budget, and of the hurried deadline after a second signal", async () => {
  const clock = new ManualClock(0);
  const config = testConfig({ runtime: { shutdownTimeoutMs: 10_000 } });
  const { deadline: d, repeat, finish, exit } = heldShutdown(config, clock);
  assert.equal(d.leftMs(), shutdownBudgetMs(config));
  await clock.advanceAsync(300);
  assert.equal(d.leftMs(), shutdownBudgetMs(config) - 300);
  let hurried = false;
  assert.ok(d.hurried !== undefined, "the deadline tells of a hurry");
  void d.hurried.then(() => (hurried = true));
  await clock.advanceAsync(0);
  assert.equal(hurried, false, "not before a second signal");
  repeat("SIGTERM");
  assert.equal(d.leftMs(), HURRIED_SHUTDOWN_MS);
  await clock.advanceAsync(0);
  assert.equal(hurried, true, "a wait bounded when it began ends at the second signal");
  await clock.advanceAsync(400);
  assert.equal(d.leftMs(), HURRIED_SHUTDOWN_MS - 400);
  finish();
  assert.equal(await exit, EXIT_OK);
});

Deno.test("stopActionsShutdownWaitMs leaves the providers' own stop and STOP_ACTIONS_SHUTDOWN_RESERVE_MS of the deadline shutDown hands the stop", async () => {
  const clock = new ManualClock(0);
  const withApi = testConfig({ runtime: { shutdownTimeoutMs: 2000 } });
  const noApi = { ...withApi, http: { ...withApi.http, enabled: false } };
  for (const config of [withApi, noApi]) {
    const budget = config.runtime.shutdownTimeoutMs;
    const { deadline: d, repeat, finish, exit } = heldShutdown(config, clock);
    const whole = shutdownBudgetMs(config) - budget - STOP_ACTIONS_SHUTDOWN_RESERVE_MS;
    assert.ok(whole > 0, `${whole} ms left for the wait`);
    assert.equal(stopActionsShutdownWaitMs(budget, d), whole);
    await clock.advanceAsync(200);
    assert.equal(stopActionsShutdownWaitMs(budget, d), Math.max(0, whole - 200));
    repeat("SIGTERM"); // hurried: nothing is left past the providers' stop
    assert.equal(stopActionsShutdownWaitMs(budget, d), 0);
    finish();
    assert.equal(await exit, EXIT_OK);
  }
  assert.equal(stopActionsShutdownWaitMs(2000, undefined), 2000, "no process deadline: a test");
});

Deno.test("providersStopBudgetMs never leaves a provider less than PROVIDERS_STOP_MIN_MS for its stdin's close unless a second stop signal hurried the stop", async () => {
  const clock = new ManualClock(0);
  const config = testConfig({ runtime: { shutdownTimeoutMs: 2000 } });
  const budget = config.runtime.shutdownTimeoutMs;
  const { deadline: d, finish, exit } = heldShutdown(config, clock);
  const whole = shutdownBudgetMs(config);
  assert.equal(providersStopBudgetMs(budget, d), budget, "the whole budget while the stop has it");
  // The stages before the providers' stop took all but the reserve: what the deadline leaves past
  // STOP_ACTIONS_SHUTDOWN_RESERVE_MS is 0, and the floor comes out of that reserve.
  await clock.advanceAsync(whole - STOP_ACTIONS_SHUTDOWN_RESERVE_MS);
  assert.equal(providersStopBudgetMs(budget, d), PROVIDERS_STOP_MIN_MS);
  assert.equal(providersStopBudgetMs(budget, d, true), 0, "hurried: no floor");
  // Never past the process's deadline itself.
  await clock.advanceAsync(STOP_ACTIONS_SHUTDOWN_RESERVE_MS - PROVIDERS_STOP_MIN_MS / 2);
  assert.equal(providersStopBudgetMs(budget, d), PROVIDERS_STOP_MIN_MS / 2);
  finish();
  assert.equal(await exit, EXIT_OK);
  assert.equal(providersStopBudgetMs(budget, undefined), budget, "no process deadline: a test");
});
