/**
 * A delayed alarm whose provider's restart circuit opened while its delay runs, and a reload of
 * the same file that retries the provider before the delay ends (README, "Reloading the
 * configuration": a reload retries a provider whose circuit is open). The provider is back and
 * answers: the alarm's condition no longer holds, so its delay starts over (docs/alarms.md,
 * "Delay": an evaluation without it starts the delay over) and it never raises nor runs its action
 * (fault). A witness alarm of the same delay on another provider, killed after the retry, raises:
 * by then the first alarm's delay, counted from its provider's crash, had ended. The simulated
 * providers run as child processes.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "./alarms_helpers.ts";

/** Long enough that the retried provider answers before the delay ends on a loaded machine. */
const DELAY_MS = 10_000;

function guard(id: string, provider: string, action: string): string {
  return `
  - id: ${id}
    signal: ${provider}/tempctl0/tc1_temp
    hihi: 500
    delay_ms: ${DELAY_MS}
    action: ${action}`;
}

function config(): Config {
  return testConfig({
    providers: [simProvider("sim0", { restart: false }), simProvider("sim1", { restart: false })],
    ...alarmsConfig(
      `alarms:${guard("sim0_witness", "sim0", "none")}${guard("sim1_guard", "sim1", "fault")}\n`,
      ["sim0", "sim1"],
    ),
  });
}

Deno.test("A delayed alarm whose provider's circuit opened starts its delay over when a reload retries the provider and it answers", async () => {
  const rt = await startRuntime(config());
  const rec = recordEvents(rt);
  try {
    await rt.modes.request("MANUAL");
    const sim1 = rt.registry.host("sim1")!;
    Deno.kill(sim1.session!.pid, "SIGKILL");
    await waitFor("sim1's circuit open", () => sim1.lifecycle === "CIRCUIT_OPEN", 30_000);
    await waitFor("sim1_guard sees the bad input", () => rt.alarms.alarm("sim1_guard").bad_input);
    assert.equal(rt.alarms.alarm("sim1_guard").state, "normal", "its delay runs");

    const report = await rt.reload(rt.config);
    assert.deepEqual(report.providers.retried, ["sim1"]);
    await waitFor(
      "sim1_guard's input good again",
      () => sim1.available && rt.alarms.alarm("sim1_guard").bad_input === null,
      30_000,
    );
    assert.equal(
      rt.alarms.alarm("sim1_guard").state,
      "normal",
      `raised before its provider was back: DELAY_MS (${DELAY_MS}) too short for this machine`,
    );

    // The witness: sim0 down after the retry, its alarm raising DELAY_MS later.
    const sim0 = rt.registry.host("sim0")!;
    Deno.kill(sim0.session!.pid, "SIGKILL");
    await waitFor(
      "the witness raised",
      () => rt.alarms.alarm("sim0_witness").state === "active",
      DELAY_MS + 15_000,
    );
    const raised = rec.events.filter((e) => e.kind === "alarm" && e.transition === "raise");
    assert.deepEqual(raised.map((e) => e.kind === "alarm" ? e.alarm_id : ""), ["sim0_witness"]);
    assert.equal(rt.alarms.alarm("sim1_guard").state, "normal");
    assert.equal(rt.modes.current(), "MANUAL", "sim1_guard's fault never ran");
  } finally {
    rec.stop();
    await rt.stop();
  }
});
