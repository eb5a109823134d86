/**
 * The shipped demo (examples/demo.yaml, what `deno task start` runs): arm, AUTO, let the tree
 * heat, e-stop — every ladder action succeeds and the safe state is verified by read-back.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../src/config/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { REPO } from "../helpers/sim_config.ts";
import { cached } from "./automation_helpers.ts";

const DEMO = `${REPO}examples/demo.yaml`;

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

Deno.test("the demo's e-stop runs every action successfully and verifies the safe state", async () => {
  const { config, diagnostics } = loadConfig(await Deno.readTextFile(DEMO), {
    path: DEMO,
    mode: "start",
    env: {},
    fileExists: isFile,
    commandExists: () => true,
    cwd: REPO,
  });
  assert.deepEqual(diagnostics, []);
  // The demo polls every 500 ms; a faster cadence only shortens the test.
  const rt = await startRuntime({ ...config!, polling: { intervalMs: 100 } });
  try {
    const status = rt.estop.status();
    assert.equal(status.software_safe_state, "hooks");
    assert.equal(status.plan.calls.length, 11);
    await rt.modes.request("MANUAL");
    await rt.modes.request("AUTO");
    await waitFor(
      "the tree heats in closed-loop mode",
      () =>
        cached(rt, "sim0/tempctl0", "control_mode") === "closed" &&
        cached(rt, "sim0/tempctl0", "relay1_state") === true,
      10000,
    );

    const result = await rt.estop.trigger("demo");
    assert.deepEqual(result.actions.filter((a) => !a.success), [], "every action succeeded");
    assert.equal(result.actions.length, 11);
    assert.deepEqual(result.hook_failures, []);
    assert.equal(result.fault_engaged, true);
    assert.equal(result.verification.outcome, "verified");
    assert.equal(result.verification.checks.length, 10);
    // A stop action ends with its call's answer; the device's post-call poll follows
    // (e5b9bd44), so the cache shows the effect once that poll is in.
    await waitFor(
      "the ladder calls' effect in the cache",
      () => cached(rt, "sim0/tempctl0", "relay1_state") === false,
    );
    assert.equal(cached(rt, "sim0/tempctl0", "relay1_state"), false);
    assert.equal(rt.modes.current(), "FAULT");
  } finally {
    await rt.stop();
  }
});

Deno.test("the demo resumes closed-loop heating after an e-stop, its release and a re-arm", async () => {
  const { config, diagnostics } = loadConfig(await Deno.readTextFile(DEMO), {
    path: DEMO,
    mode: "start",
    env: {},
    fileExists: isFile,
    commandExists: () => true,
    cwd: REPO,
  });
  assert.deepEqual(diagnostics, []);
  const rt = await startRuntime({ ...config!, polling: { intervalMs: 100 } });
  try {
    await rt.modes.request("MANUAL");
    await rt.modes.request("AUTO");
    await waitFor(
      "the tree heats in closed-loop mode at its setpoint",
      () =>
        cached(rt, "sim0/tempctl0", "control_mode") === "closed" &&
        cached(rt, "sim0/tempctl0", "setpoint") === 40,
      10000,
    );
    // The tree has seen both calls answered (it has nothing running any more).
    await waitFor(
      "the tree idle between ticks",
      () => rt.automation!.status().engine_diagnostics.current_running_node === null,
      5000,
    );
    const result = await rt.estop.trigger("demo");
    assert.equal(result.verification.outcome, "verified");
    // A stop action ends with its call's answer; the device's post-call poll follows
    // (e5b9bd44), so the cache shows the effect once that poll is in.
    await waitFor(
      "the ladder calls' effect in the cache",
      () => cached(rt, "sim0/tempctl0", "control_mode") === "open",
    );
    assert.equal(cached(rt, "sim0/tempctl0", "control_mode"), "open");
    // docs/automation.md: release, MANUAL, AUTO -- "the tree starts over, sees that the setpoint
    // and the motor differ from what it wants, and restores them".
    rt.estop.clear();
    await rt.modes.request("MANUAL");
    await rt.modes.request("AUTO");
    const ticks = rt.automation!.status().engine_diagnostics.total_ticks;
    await waitFor(
      "ten ticks in AUTO again",
      () => rt.automation!.status().engine_diagnostics.total_ticks >= ticks + 10,
      5000,
    );
    await waitFor(
      "the tree heats in closed-loop mode again",
      () => cached(rt, "sim0/tempctl0", "control_mode") === "closed",
      3000,
    ).catch(() => {});
    assert.equal(
      cached(rt, "sim0/tempctl0", "control_mode"),
      "closed",
      "the re-armed tree puts the heater back in closed-loop mode",
    );
  } finally {
    await rt.stop();
  }
});
