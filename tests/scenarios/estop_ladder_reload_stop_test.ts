/**
 * The e-stop's ladder and a configuration reload that stops the provider a ladder call is at
 * (docs/safety.md, "E-stop and reload"): the reload waits for that call before it stops the
 * process, bounded by the call's own bound (its provider's timeout_ms + DRAIN_MARGIN_MS), so the
 * call is answered and the stop reports it made; the process is stopped after, and the reload
 * answers once it is. Both ways a reload stops a provider: removed, and restarted (its entry
 * changed). The simulated providers run as child processes; sim1 holds every call to its motor
 * controller by its `inject_call_latency`.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, i, inertSim, manualCall } from "../safety/_fixture.ts";

/** How long sim1 holds a call to its motor controller: well within its timeout_ms (5000). */
const LATENCY_MS = 1500;

/** Two inert sims whose ladder drives sim1's motor 1 to duty 0 (one call). */
function config(): Config {
  return testConfig({
    providers: [inertSim("sim0"), inertSim("sim1", { restart: false })],
    pollingIntervalMs: 60_000,
    safety: {
      hooks: [call("sim1/motorctl0", "set_motor_duty", { motor_index: 1, duty: { double: 0 } })],
    },
  });
}

/**
 * Latches the e-stop with sim1's motor controller slow, waits for the ladder's call at sim1, then
 * reloads `next(config)`: the stop's answer, the reload's, and sim1's pid.
 */
async function ladderCallThenReload(rt: Kernel, next: (c: Config) => Config) {
  await manualCall(rt, "sim1", "chaos_control", 3, {
    device_id: { type: "string", string: "motorctl0" },
    latency_ms: i(LATENCY_MS),
  });
  const session = rt.registry.host("sim1")!.session!;
  const pid = session.pid;
  const stop = rt.estop.trigger("ladder x reload");
  await waitFor("the ladder's call at sim1", () => session.inFlight > 0, 10_000, 0);
  const report = rt.reload(next(rt.config));
  return { result: await stop, report: await report, pid };
}

Deno.test("Estop ladder call to a provider a reload removes is answered before the reload stops the process", async () => {
  const rt = await startRuntime(config(), { arm: true });
  try {
    const { result, report, pid } = await ladderCallThenReload(rt, (c) => ({
      ...c,
      providers: c.providers.filter((p) => p.id !== "sim1"),
      safety: { ...c.safety, safeState: { ...c.safety.safeState, hooks: [] } },
    }));
    assert.deepEqual(result.actions, [
      { device_handle: "sim1/motorctl0", function: "set_motor_duty", success: true },
    ]);
    assert.deepEqual(report.providers.removed, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1 (pid ${pid}) still runs after the reload`);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop ladder call to a provider a reload restarts is answered before the reload stops its old process", async () => {
  const rt = await startRuntime(config(), { arm: true });
  try {
    const { result, report, pid } = await ladderCallThenReload(rt, (c) => ({
      ...c,
      providers: c.providers.map((p) => p.id === "sim1" ? { ...p, timeoutMs: 6000 } : p),
    }));
    assert.deepEqual(result.actions, [
      { device_handle: "sim1/motorctl0", function: "set_motor_duty", success: true },
    ]);
    assert.deepEqual(report.providers.restarted, ["sim1"]);
    assert.equal(processAlive(pid), false, `sim1's old process (pid ${pid}) still runs`);
  } finally {
    await rt.stop();
  }
});
