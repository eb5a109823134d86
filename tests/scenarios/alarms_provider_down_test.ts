/**
 * A delayed alarm on a provider that stops being polled: the simulated provider is killed with
 * restart disabled, or hangs; nothing polls it any more, yet the alarm (delay_ms 1000, action
 * estop) raises delay_ms after its input became unusable and latches the e-stop. Alarms are decided
 * on time by the engine's own timer, not by the next poll.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { i, manualCall } from "../safety/_fixture.ts";
import { alarmsConfig } from "./alarms_helpers.ts";

const DELAY_MS = 1000;

function config(o: { timeoutMs?: number } = {}): Config {
  return testConfig({
    providers: [simProvider("sim0", { restart: false, timeoutMs: o.timeoutMs ?? 5000 })],
    ...alarmsConfig(`
alarms:
  - id: heater_guard
    signal: sim0/tempctl0/tc1_temp
    hihi: 500
    delay_ms: ${DELAY_MS}
    action: estop
    message: Heater temperature not known
`),
  });
}

/** Waits for the e-stop latch, then returns how long after `since` (ms, monotonic) it latched. */
async function latchedAfter(rt: Kernel, since: number): Promise<number> {
  await waitFor("e-stop latched by the alarm", () => rt.estop.latched, 8000);
  return performance.now() - since;
}

Deno.test("A delayed alarm on a killed provider (restart disabled) raises delay_ms after its input went bad, with no poll after", async () => {
  const { log, lines } = capturingLogger({ level: "warn" });
  const rt = await startRuntime(config(), { host: { log } });
  try {
    const host = rt.registry.host("sim0")!;
    assert.equal(rt.alarms.alarm("heater_guard").state, "normal");
    await rt.modes.request("MANUAL");
    // From before the kill: the provider goes down after it. (Not from when waitFor below sees
    // it down: a loaded machine can run the test that late after, and the wait looked short.)
    const killedAt = performance.now();
    await manualCall(rt, "sim0", "chaos_control", 6, { exit_code: i(9) }).catch(() => {});
    await waitFor("sim0 down", () => !host.available);
    const view = rt.alarms.alarm("heater_guard");
    assert.match(view.bad_input ?? "", /UNAVAILABLE|down/);
    const after = await latchedAfter(rt, killedAt);
    assert.ok(after >= DELAY_MS - 50, `latched ${after} ms after the provider was killed`);
    assert.equal(rt.estop.status().cause, "alarm:heater_guard");
    assert.equal(rt.alarms.alarm("heater_guard").state, "active");
    // The raise and the e-stop say why the input is bad, not the last value as if it held.
    const why =
      /\(bad input\): sim0\/tempctl0\/tc1_temp(: device sim0\/tempctl0 is down| is UNAVAILABLE)/;
    const raised = lines.find((l) => l.includes("alarm heater_guard raised MAJOR"));
    assert.match(raised ?? "", why, lines.join("\n"));
    await waitFor("the e-stop's reason logged", () => lines.some((l) => l.includes("E-STOP")));
    const latched = lines.find((l) => l.includes("E-STOP") && l.includes("heater_guard"));
    assert.match(latched ?? "", why, lines.join("\n"));
  } finally {
    await rt.stop();
  }
});

Deno.test("A delayed alarm on a hung provider raises once its reads have gone unanswered for delay_ms", async () => {
  // timeout_ms 300: a read of the hung provider is given up after 300 ms (then UNAVAILABLE).
  const rt = await startRuntime(config({ timeoutMs: 300 }));
  try {
    await rt.modes.request("MANUAL");
    const hungAt = performance.now();
    // hang(0): the provider answers, then never reads or answers again.
    await manualCall(rt, "sim0", "chaos_control", 7, { duration_ms: i(0) });
    const after = await latchedAfter(rt, hungAt);
    assert.ok(after >= DELAY_MS, `latched ${after} ms after the provider hung`);
    assert.equal(rt.estop.status().cause, "alarm:heater_guard");
  } finally {
    await rt.stop();
  }
});
