/**
 * The e-stop's ladder, then its hooks into FAULT, and a configuration reload that stops the
 * provider both are at, arriving while the ladder call runs, before the hooks have begun
 * (docs/safety.md, step 2): the reload waits for the ladder call and for the hook call that
 * follows it before it stops the process (one wait, bounded by one call's worst case,
 * stopActionWorstCaseMs, for each call left on it + DRAIN_MARGIN_MS), so both are answered and
 * the stop reports them made, even when each takes close to timeout_ms; the process is stopped
 * after, and the reload answers once it is. Both ways a reload stops a provider: removed, and restarted (its entry changed). The
 * simulated providers run as child processes; sim1 holds every call to its motor controller by its
 * `inject_call_latency`. The reload's INFO line names both.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, hook, i, inertSim, manualCall } from "../safety/_fixture.ts";

/**
 * How long sim1 holds a call to its motor controller: the ladder call and the hook call together
 * (3000) well within the reload's bound (timeout_ms 5000 + DRAIN_MARGIN_MS).
 */
const LATENCY_MS = 1500;

/**
 * sim1's `timeout_ms` in the test of two slow calls: each call is held SLOW_LATENCY_MS, close to
 * it, so the two together (4800) outlast timeout_ms + DRAIN_MARGIN_MS (4000, the reload's whole
 * bound once) and stay within the wait for two calls (2 x stopActionWorstCaseMs(3000) +
 * DRAIN_MARGIN_MS = 13000).
 */
const SLOW_TIMEOUT_MS = 3000;
/** How long sim1 holds each call in that test: within SLOW_TIMEOUT_MS, 2 x it past 4000. */
const SLOW_LATENCY_MS = 2400;

/**
 * Two inert sims; the ladder drives sim1's motor 1 to duty 0, the `* -> FAULT` hook its motor 2
 * (one call each, to the same provider: the hook call follows the ladder's). `timeoutMs`: sim1's
 * (the default's when absent).
 */
function config(timeoutMs?: number): Config {
  const sim1 = inertSim("sim1", { restart: false });
  return testConfig({
    providers: [inertSim("sim0"), timeoutMs === undefined ? sim1 : { ...sim1, timeoutMs }],
    pollingIntervalMs: 60_000,
    automation: {
      modeTransitionHooks: {
        beforeTransition: [],
        afterTransition: [
          hook(
            "*",
            "FAULT",
            [call("sim1/motorctl0", "set_motor_duty", { motor_index: 2, duty: { double: 0 } })],
            false,
            "automation.mode_transition_hooks.after_transition[0]",
          ),
        ],
      },
    },
    safety: {
      hooks: [call("sim1/motorctl0", "set_motor_duty", { motor_index: 1, duty: { double: 0 } })],
    },
  });
}

/** The configuration without sim1 (and without the ladder call and the hook that name it). */
function withoutSim1(c: Config): Config {
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
function sim1Changed(c: Config): Config {
  return {
    ...c,
    providers: c.providers.map((p) => p.id === "sim1" ? { ...p, timeoutMs: 6000 } : p),
  };
}

/**
 * Latches the e-stop with sim1's motor controller slow (each call held `latencyMs`), waits for the
 * ladder's call at sim1 (the hooks have not begun), then reloads `next(config)`: the stop's
 * answer, the reload's, sim1's pid. `before` runs before the trigger, once sim1 is slow.
 */
async function ladderCallThenReload(
  rt: Kernel,
  next: (c: Config) => Config,
  before: (rt: Kernel) => Promise<unknown> = () => Promise.resolve(),
  latencyMs = LATENCY_MS,
) {
  await manualCall(rt, "sim1", "chaos_control", 3, {
    device_id: { type: "string", string: "motorctl0" },
    latency_ms: i(latencyMs),
  });
  await before(rt);
  const session = rt.registry.host("sim1")!.session!;
  const pid = session.pid;
  const stop = rt.estop.trigger("ladder, hooks x reload");
  await waitFor("the ladder's call at sim1", () => session.inFlight > 0, 10_000, 0);
  const report = rt.reload(next(rt.config));
  return { result: await stop, report: await report, pid };
}

/** Asserts the reload's one line: it waited for the ladder's calls and the hook calls to sim1. */
function assertWaitedLine(lines: readonly string[]): void {
  const waited = lines.filter((l) => l.includes("reload: waited"));
  assert.equal(waited.length, 1, waited.join("\n"));
  assert.match(
    waited[0]!,
    new RegExp(
      "^INFO .*reload: waited \\d+ ms for the e-stop's safe-state calls and the hook calls " +
        "into FAULT to sim1, then stopped it$",
    ),
  );
}

Deno.test("Estop ladder call then hook call into FAULT to a provider a reload removes during the ladder are both answered before the reload stops the process", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config(), { arm: true, host: { log } });
  try {
    const { result, report, pid } = await ladderCallThenReload(rt, withoutSim1);
    assert.deepEqual(result.actions, [
      { device_handle: "sim1/motorctl0", function: "set_motor_duty", success: true },
    ]);
    assert.deepEqual(result.hook_failures, []);
    assert.equal(result.hooks_pending, undefined);
    assertWaitedLine(lines);
    assert.deepEqual(report.providers.removed, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1 (pid ${pid}) still runs after the reload`);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop ladder call then hook call into FAULT to a provider a reload restarts during the ladder are both answered before the reload stops its old process", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config(), { arm: true, host: { log } });
  try {
    const { result, report, pid } = await ladderCallThenReload(rt, sim1Changed);
    assert.deepEqual(result.actions, [
      { device_handle: "sim1/motorctl0", function: "set_motor_duty", success: true },
    ]);
    assert.deepEqual(result.hook_failures, []);
    assert.equal(result.hooks_pending, undefined);
    assertWaitedLine(lines);
    assert.deepEqual(report.providers.restarted, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1's old process (pid ${pid}) still runs`);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop triggered while FAULT stands: the hook call into FAULT made again after its ladder to a provider a reload removes during the ladder is answered before the reload stops the process", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config(), { arm: true, host: { log } });
  try {
    // An operator's FAULT first, its hook call made: the e-stop makes it again after its ladder.
    const { result, report, pid } = await ladderCallThenReload(rt, withoutSim1, async (rt) => {
      const fault = await rt.modes.requestWithReport("FAULT", { kind: "http" });
      assert.deepEqual(fault.hook_failures, []);
    });
    assert.deepEqual(result.actions, [
      { device_handle: "sim1/motorctl0", function: "set_motor_duty", success: true },
    ]);
    assert.deepEqual(result.hook_failures, []);
    assert.equal(result.hooks_pending, undefined);
    assertWaitedLine(lines);
    assert.deepEqual(report.providers.removed, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1 (pid ${pid}) still runs after the reload`);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop slow ladder call then slow hook call into FAULT, each close to the provider's timeout_ms, to a provider a reload removes during the ladder are both answered before the reload stops the process", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config(SLOW_TIMEOUT_MS), { arm: true, host: { log } });
  try {
    const { result, report, pid } = await ladderCallThenReload(
      rt,
      withoutSim1,
      undefined,
      SLOW_LATENCY_MS,
    );
    assert.deepEqual(result.actions, [
      { device_handle: "sim1/motorctl0", function: "set_motor_duty", success: true },
    ]);
    assert.deepEqual(result.hook_failures, []);
    assert.equal(result.hooks_pending, undefined);
    assertWaitedLine(lines);
    assert.deepEqual(lines.filter((l) => l.includes("stopped it all the same")), []);
    assert.deepEqual(report.providers.removed, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1 (pid ${pid}) still runs after the reload`);
  } finally {
    await rt.stop();
  }
});
