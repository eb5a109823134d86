/**
 * The shared rig of the reload-stop scenarios (estop_ladder_reload_stop_test.ts,
 * mode_fault_hook_reload_stop_test.ts, estop_ladder_then_hook_reload_stop_test.ts): two inert sims
 * as child processes, sim1 not restarted by its supervisor; a stop action (the e-stop's ladder
 * call, a hook call into FAULT, or both) drives sim1's motor controller, which the rig makes slow
 * by its `inject_call_latency`; while the first call runs at sim1, a reload removes sim1 or
 * restarts it (its entry changed), and the test reads what the stop, the reload and sim1's process
 * came to.
 */
import assert from "node:assert/strict";
import type { Config, HookConfig } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, hook, i, inertSim, manualCall } from "../safety/_fixture.ts";

/**
 * How long sim1 holds a call to its motor controller: well within its timeout_ms (5000), and two
 * calls in a row (3000) within the reload's bound (timeout_ms + DRAIN_MARGIN_MS).
 */
export const LATENCY_MS = 1500;

/** The call that drives sim1's motor `motor` to duty 0. */
function motorOff(motor: number) {
  return call("sim1/motorctl0", "set_motor_duty", { motor_index: motor, duty: { double: 0 } });
}

export interface ReloadStopConfig {
  /** The motor of sim1 the e-stop's ladder drives to duty 0 (one call); none: an empty ladder. */
  readonly ladderMotor?: number;
  /** The motor of sim1 the `* -> FAULT` hook drives to duty 0 (one call); none: no hook. */
  readonly hookMotor?: number;
}

/**
 * Two inert sims, polled once a minute, with a `safety:` section; the ladder and the FAULT hook
 * drive the motors `o` names (to the same provider: a hook call follows the ladder's).
 */
export function reloadStopConfig(o: ReloadStopConfig): Config {
  const afterTransition: HookConfig[] = o.hookMotor === undefined ? [] : [
    hook(
      "*",
      "FAULT",
      [motorOff(o.hookMotor)],
      false,
      "automation.mode_transition_hooks.after_transition[0]",
    ),
  ];
  return testConfig({
    providers: [inertSim("sim0"), inertSim("sim1", { restart: false })],
    pollingIntervalMs: 60_000,
    automation: { modeTransitionHooks: { beforeTransition: [], afterTransition } },
    safety: o.ladderMotor === undefined ? { present: true } : { hooks: [motorOff(o.ladderMotor)] },
  });
}

/** The configuration without sim1 (and without the ladder calls and the hooks that name it). */
export function withoutSim1(c: Config): Config {
  return {
    ...c,
    providers: c.providers.filter((p) => p.id !== "sim1"),
    automation: {
      ...c.automation,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
    },
    safety: { ...c.safety, safeState: { ...c.safety.safeState, hooks: [] } },
  };
}

/** The configuration with sim1's entry changed (a restart). */
export function sim1Changed(c: Config): Config {
  return {
    ...c,
    providers: c.providers.map((p) => p.id === "sim1" ? { ...p, timeoutMs: 6000 } : p),
  };
}

/**
 * Runs `body` over a runtime started on `config` and armed (MANUAL), its INFO lines and above in
 * `lines`; stops the runtime afterwards, whatever `body` came to.
 */
export async function withArmedRuntime(
  config: Config,
  body: (rt: Kernel, lines: readonly string[]) => Promise<void>,
): Promise<void> {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config, { arm: true, host: { log } });
  try {
    await body(rt, lines);
  } finally {
    await rt.stop();
  }
}

/** How a reload stops sim1: what it does to the configuration, and where its answer lists sim1. */
export const SIM1_REMOVED = { next: withoutSim1, how: "removed" } as const;
export const SIM1_RESTARTED = { next: sim1Changed, how: "restarted" } as const;

/** What a stop with a reload came to. */
export interface StopThenReload<T> {
  /** The stop's own answer (the e-stop's result, or the mode request's report). */
  readonly answer: T;
  /** The reload's answer. */
  readonly report: Awaited<ReturnType<Kernel["reload"]>>;
  /** sim1's process before the reload. */
  readonly pid: number;
}

/**
 * Makes sim1's motor controller slow, runs `before`, starts the stop by `stop`, waits for its
 * first call at sim1 (`what`, for the wait's message), then reloads `next(config)`: the stop's
 * answer, the reload's, and sim1's pid.
 */
export async function stopCallThenReload<T>(
  rt: Kernel,
  o: {
    readonly stop: (rt: Kernel) => Promise<T>;
    readonly what: string;
    readonly next: (c: Config) => Config;
    readonly before?: ((rt: Kernel) => Promise<unknown>) | undefined;
  },
): Promise<StopThenReload<T>> {
  await manualCall(rt, "sim1", "chaos_control", 3, {
    device_id: { type: "string", string: "motorctl0" },
    latency_ms: i(LATENCY_MS),
  });
  await o.before?.(rt);
  const session = rt.registry.host("sim1")!.session!;
  const pid = session.pid;
  const stopped = o.stop(rt);
  await waitFor(o.what, () => session.inFlight > 0, 10_000, 0);
  const report = rt.reload(o.next(rt.config));
  const answer = await stopped;
  return { answer, report: await report, pid };
}

/** Asserts the e-stop's ladder reports its one call to sim1 made. */
export function assertLadderCallMade(actions: readonly unknown[]): void {
  assert.deepEqual(actions, [
    { device_handle: "sim1/motorctl0", function: "set_motor_duty", success: true },
  ]);
}

/** Asserts the stop's answer reports no hook failure and no hook still pending. */
export function assertHooksMade(
  answer: { readonly hook_failures: readonly unknown[]; readonly hooks_pending?: true },
): void {
  assert.deepEqual(answer.hook_failures, []);
  assert.equal(answer.hooks_pending, undefined);
}

/**
 * Asserts the reload's one line: it waited for `waitedFor` (as the line words it) to sim1, then
 * stopped it.
 */
export function assertWaitedLine(lines: readonly string[], waitedFor: string): void {
  const waited = lines.filter((l) => l.includes("reload: waited"));
  assert.equal(waited.length, 1, waited.join("\n"));
  const phrase = waitedFor.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  assert.match(
    waited[0]!,
    new RegExp(`^INFO .*reload: waited \\d+ ms for ${phrase} to sim1, then stopped it$`),
  );
}

/** Asserts the reload `removed` or `restarted` sim1 and that sim1's process `pid` has ended. */
export function assertSim1Stopped(
  { report, pid }: Pick<StopThenReload<unknown>, "report" | "pid">,
  how: "removed" | "restarted",
): void {
  assert.deepEqual(report.providers[how], ["sim1"]);
  const message = how === "removed"
    ? `sim1 (pid ${pid}) still runs after the reload`
    : `sim1's old process (pid ${pid}) still runs`;
  assert.equal(processAlive(pid), false, message);
}
