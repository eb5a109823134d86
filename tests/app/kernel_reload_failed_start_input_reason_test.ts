/**
 * A reload whose restart of a provider fails leaves the alarms and interlocks on its signals with
 * a bad input (raised, engaged: fail safe). Why they say it is bad is why the device is down --
 * its provider failed to start at that reload, as the device conditions say (docs/safety.md sec.
 * 5: one meaning for the AUTO gate, the latch, alarms and interlocks) -- not that the provider's
 * inventory lacks the device, which reads as a typo in the file (docs/alarms.md sec. 1).
 */
import assert from "node:assert/strict";
import { MAX_NAMED_IN_WARNING } from "../../src/common/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig, withUnstartable } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { failedStartText } from "../../src/providers/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";

/**
 * Starts sim0 and sim1 (armed) under the `alarms:`/`interlocks:` YAML `yaml` on sim1's signals,
 * runs `fn` on the runtime and stops it whatever `fn` does.
 */
async function withAlarmsOnSim1(yaml: string, fn: (rt: Kernel) => Promise<void>): Promise<void> {
  const p = alarmsConfig(yaml, ["sim0", "sim1"]);
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("sim0"), simProvider("sim1")],
      alarms: p.alarms,
      interlocks: p.interlocks,
    }),
    { arm: true },
  );
  try {
    await fn(rt);
  } finally {
    await rt.stop();
  }
}

Deno.test("Kernel.reload failing to restart a provider: its alarm's bad_input and its interlock's reason say it failed to start, not that the device is not in its inventory", async () => {
  const yaml = `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500 }
interlocks:
  - id: motor_by_sim1
    block: [sim0/motorctl0/set_motor_duty]
    while: 'sim1/tempctl0/tc1_temp > 1000'
    message: sim0's motor waits for sim1's heater
`;
  await withAlarmsOnSim1(yaml, async (rt) => {
    await waitFor("sim1 sampled", () => rt.alarms.alarm("sim1_hot").quality === "OK", 5000);
    const report = await rt.reload(withUnstartable(rt.config, "sim1"));
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
  });
});

Deno.test("Kernel.reload failing to restart a provider names up to MAX_NAMED_IN_WARNING of the alarms and interlocks on it in its notes, the rest counted", async () => {
  const n = MAX_NAMED_IN_WARNING + 5;
  // Ids of 64 characters (the longest ALARM_ID_PATTERN allows), numbered at the end.
  const id = (kind: string, i: number) => `${kind}_${"x".repeat(60)}${String(i).padStart(2, "0")}`;
  const yaml = "alarms:\n" +
    Array.from(
      { length: n },
      (_, i) => `  - { id: ${id("a", i)}, signal: sim1/tempctl0/tc1_temp, hihi: 500 }\n`,
    ).join("") +
    "interlocks:\n" +
    Array.from(
      { length: n },
      (_, i) =>
        `  - id: ${id("i", i)}\n    block: [sim0/motorctl0/set_motor_duty]\n` +
        `    while: 'sim1/tempctl0/tc1_temp > 1000'\n    message: waits for sim1\n`,
    ).join("");
  await withAlarmsOnSim1(yaml, async (rt) => {
    const report = await rt.reload(withUnstartable(rt.config, "sim1"));
    assert.deepEqual(report.providers.failed.map((f) => f.id), ["sim1"]);
    const alarms = report.notes.find((note) =>
      note.startsWith("alarms on provider(s) not running")
    );
    const named = Array.from(
      { length: MAX_NAMED_IN_WARNING },
      (_, i) => `${id("a", i)} (action none)`,
    ).join(", ");
    assert.ok(alarms?.endsWith(`their input bad: ${named} and 5 more`), alarms?.slice(-300));
    const interlocks = report.notes.find((note) => note.startsWith("interlocks on provider(s)"));
    const engaged = Array.from({ length: MAX_NAMED_IN_WARNING }, (_, i) => id("i", i)).join(", ");
    assert.ok(interlocks?.endsWith(`engaged: ${engaged} and 5 more`), interlocks?.slice(-300));
  });
});
