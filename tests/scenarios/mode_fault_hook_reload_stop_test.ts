/**
 * The hook calls into FAULT and a configuration reload that stops the provider a hook call is at
 * (docs/safety.md, step 2 and step 3): the reload waits for that call before it stops the process,
 * bounded as for the e-stop's ladder calls (its provider's timeout_ms + DRAIN_MARGIN_MS), so the
 * call is answered and the FAULT's answer reports no hook failure; the process is stopped after,
 * and the reload answers once it is. FAULT entered by the e-stop (a `safety:` section without
 * ladder calls to sim1) and by an operator's mode request; the reload removes sim1, or restarts it
 * (its entry changed). The simulated providers run as child processes; sim1 holds every call to
 * its motor controller by its `inject_call_latency`. The reload's INFO line names what it waited
 * for.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, hook, i, inertSim, manualCall } from "../safety/_fixture.ts";

/** How long sim1 holds a call to its motor controller: well within its timeout_ms (5000). */
const LATENCY_MS = 1500;

/** Two inert sims; the `* -> FAULT` hook drives sim1's motor 1 to duty 0 (one call). */
function config(): Config {
  return testConfig({
    providers: [inertSim("sim0"), inertSim("sim1", { restart: false })],
    pollingIntervalMs: 60_000,
    automation: {
      modeTransitionHooks: {
        beforeTransition: [],
        afterTransition: [
          hook(
            "*",
            "FAULT",
            [call("sim1/motorctl0", "set_motor_duty", { motor_index: 1, duty: { double: 0 } })],
            false,
            "automation.mode_transition_hooks.after_transition[0]",
          ),
        ],
      },
    },
    // The e-stop's ladder is empty: the only stop action to sim1 is the hook call.
    safety: { present: true },
  });
}

/** The configuration without sim1 (and without the hook that names it). */
function withoutSim1(c: Config): Config {
  return {
    ...c,
    providers: c.providers.filter((p) => p.id !== "sim1"),
    automation: {
      ...c.automation,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
    },
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
 * Enters FAULT by `enter` with sim1's motor controller slow, waits for the hook call at sim1,
 * then reloads `next(config)`: the hook failures FAULT's answer reports, the reload's answer,
 * and sim1's pid.
 */
async function hookCallThenReload(
  rt: Kernel,
  enter: (rt: Kernel) => Promise<{ hook_failures: readonly unknown[]; hooks_pending?: true }>,
  next: (c: Config) => Config,
) {
  await manualCall(rt, "sim1", "chaos_control", 3, {
    device_id: { type: "string", string: "motorctl0" },
    latency_ms: i(LATENCY_MS),
  });
  const session = rt.registry.host("sim1")!.session!;
  const pid = session.pid;
  const fault = enter(rt);
  await waitFor("the hook call at sim1", () => session.inFlight > 0, 10_000, 0);
  const report = rt.reload(next(rt.config));
  const answer = await fault;
  return { answer, report: await report, pid };
}

/** Asserts the reload's one line: it waited for the hook calls into FAULT to sim1. */
function assertWaitedLine(lines: readonly string[]): void {
  const waited = lines.filter((l) => l.includes("reload: waited"));
  assert.equal(waited.length, 1, waited.join("\n"));
  assert.match(
    waited[0]!,
    /^INFO .*reload: waited \d+ ms for the hook calls into FAULT to sim1, then stopped it$/,
  );
}

/** The e-stop's FAULT. */
const byEstop = (rt: Kernel) => rt.estop.trigger("hook x reload");
/** An operator's FAULT (POST /v0/mode FAULT). */
const byOperator = (rt: Kernel) => rt.modes.requestWithReport("FAULT", { kind: "http" });

Deno.test("ModeManager hook call into FAULT (e-stop) to a provider a reload removes is answered before the reload stops the process", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config(), { arm: true, host: { log } });
  try {
    const { answer, report, pid } = await hookCallThenReload(rt, byEstop, withoutSim1);
    assert.deepEqual(answer.hook_failures, []);
    assert.equal(answer.hooks_pending, undefined);
    assertWaitedLine(lines);
    assert.deepEqual(report.providers.removed, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1 (pid ${pid}) still runs after the reload`);
  } finally {
    await rt.stop();
  }
});

Deno.test("ModeManager hook call into FAULT (e-stop) to a provider a reload restarts is answered before the reload stops its old process", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config(), { arm: true, host: { log } });
  try {
    const { answer, report, pid } = await hookCallThenReload(rt, byEstop, sim1Changed);
    assert.deepEqual(answer.hook_failures, []);
    assert.equal(answer.hooks_pending, undefined);
    assertWaitedLine(lines);
    assert.deepEqual(report.providers.restarted, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1's old process (pid ${pid}) still runs`);
  } finally {
    await rt.stop();
  }
});

Deno.test("ModeManager hook call into FAULT (mode request) to a provider a reload removes is answered before the reload stops the process", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config(), { arm: true, host: { log } });
  try {
    const { answer, report, pid } = await hookCallThenReload(rt, byOperator, withoutSim1);
    assert.deepEqual(answer.hook_failures, []);
    assert.equal(answer.hooks_pending, undefined);
    assertWaitedLine(lines);
    assert.deepEqual(report.providers.removed, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1 (pid ${pid}) still runs after the reload`);
  } finally {
    await rt.stop();
  }
});

Deno.test("ModeManager hook call into FAULT (mode request) to a provider a reload restarts is answered before the reload stops its old process", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config(), { arm: true, host: { log } });
  try {
    const { answer, report, pid } = await hookCallThenReload(rt, byOperator, sim1Changed);
    assert.deepEqual(answer.hook_failures, []);
    assert.equal(answer.hooks_pending, undefined);
    assertWaitedLine(lines);
    assert.deepEqual(report.providers.restarted, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1's old process (pid ${pid}) still runs`);
  } finally {
    await rt.stop();
  }
});
