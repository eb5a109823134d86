/**
 * A reload whose restart of a provider fails leaves the alarms and interlocks on its signals with
 * a bad input (raised, engaged: fail safe). Why they say it is bad is why the device is down --
 * its provider failed to start at that reload, as the device conditions say (docs/safety.md sec.
 * 5: one meaning for the AUTO gate, the latch, alarms and interlocks) -- not that the provider's
 * inventory lacks the device, which reads as a typo in the file (docs/alarms.md sec. 1).
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { failedStartText } from "../../src/providers/mod.ts";

Deno.test("Kernel.reload failing to restart a provider: its alarm's bad_input and its interlock's reason say it failed to start, not that the device is not in its inventory", async () => {
  const p = alarmsConfig(
    `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500 }
interlocks:
  - id: motor_by_sim1
    block: [sim0/motorctl0/set_motor_duty]
    while: 'sim1/tempctl0/tc1_temp > 1000'
    message: sim0's motor waits for sim1's heater
`,
    ["sim0", "sim1"],
  );
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("sim0"), simProvider("sim1")],
      alarms: p.alarms,
      interlocks: p.interlocks,
    }),
    { arm: true },
  );
  try {
    await waitFor("sim1 sampled", () => rt.alarms.alarm("sim1_hot").quality === "OK", 5000);
    const report = await rt.reload({
      ...rt.config,
      providers: rt.config.providers.map((q) =>
        q.id === "sim1" ? { ...q, command: "/nonexistent/provider" } : q
      ),
    });
    assert.match(
      report.providers.failed.map(failedStartText).join(),
      /^sim1: cannot start provider/,
    );
    const alarm = rt.alarms.alarm("sim1_hot");
    assert.equal(alarm.state, "active");
    assert.equal(alarm.cause, "bad_quality");
    assert.match(alarm.bad_input ?? "", /failed to start at a configuration reload/);
    assert.doesNotMatch(alarm.bad_input ?? "", /not in the inventory/);
    const [interlock] = rt.alarms.interlocks();
    assert.equal(interlock!.blocking, true);
    assert.match(interlock!.reason ?? "", /failed to start at a configuration reload/);
    assert.doesNotMatch(interlock!.reason ?? "", /not in the inventory/);
    assert.match(
      interlock!.inputs[0]!.bad_input ?? "",
      /failed to start at a configuration reload/,
    );
  } finally {
    await rt.stop();
  }
});
