/**
 * A delayed alarm whose input's provider went down, and a reload that removes the provider and the
 * alarm while the delay runs (docs/alarms.md, "States, acknowledge, shelve": an alarm the reload
 * removes while it removes the provider it reads goes before that provider is stopped; the
 * provider's going does not raise it, nor run its action). Its pending raise goes with it: when
 * the delay would have ended nothing raises and the e-stop stays released. A witness alarm of the
 * same delay on another provider, killed after the reload, raises and latches the e-stop: by then
 * the removed alarm's delay had ended. The simulated providers run as child processes.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "./alarms_helpers.ts";

/** Long enough that the reload comes before the removed alarm's delay ends on a loaded machine. */
const DELAY_MS = 3000;

function guard(id: string, provider: string): string {
  return `
  - id: ${id}
    signal: ${provider}/tempctl0/tc1_temp
    hihi: 500
    delay_ms: ${DELAY_MS}
    action: estop`;
}

function config(both: boolean): Config {
  const ids = both ? ["sim0", "sim1"] : ["sim0"];
  return testConfig({
    providers: ids.map((id) => simProvider(id, { restart: false })),
    ...alarmsConfig(
      `alarms:${guard("sim0_guard", "sim0")}${both ? guard("sim1_guard", "sim1") : ""}\n`,
      ids,
    ),
  });
}

Deno.test("A delayed alarm a reload removes with its provider while its delay runs never raises nor runs its action", async () => {
  const rt = await startRuntime(config(true));
  const rec = recordEvents(rt);
  try {
    await rt.modes.request("MANUAL");
    const sim1 = rt.registry.host("sim1")!;
    Deno.kill(sim1.session!.pid, "SIGKILL");
    await waitFor("sim1 down", () => !sim1.available);
    await waitFor("sim1_guard sees the bad input", () => rt.alarms.alarm("sim1_guard").bad_input);
    assert.equal(rt.alarms.alarm("sim1_guard").state, "normal", "its delay runs");

    const next = config(false);
    const report = await rt.reload({
      ...rt.config,
      providers: next.providers,
      alarms: next.alarms,
      interlocks: next.interlocks,
    });
    assert.deepEqual(report.providers.removed, ["sim1"]);

    // The witness: sim0 down after the reload, its alarm raising DELAY_MS later.
    const sim0 = rt.registry.host("sim0")!;
    Deno.kill(sim0.session!.pid, "SIGKILL");
    await waitFor("the witness latched the e-stop", () => rt.estop.latched, 15000);
    assert.equal(rt.estop.status().cause, "alarm:sim0_guard");
    const raised = rec.events.filter((e) => e.kind === "alarm" && e.transition === "raise");
    assert.deepEqual(raised.map((e) => e.kind === "alarm" ? e.alarm_id : ""), ["sim0_guard"]);
    const latches = rec.events.filter((e) => e.kind === "estop_change" && e.latched);
    assert.equal(latches.length, 1, "one latch: the witness's");
  } finally {
    rec.stop();
    await rt.stop();
  }
});
