/**
 * An e-stop latched by an alarm that a reload changes while it restarts the provider the alarm
 * reads (the alarm goes before that provider is stopped, and the file's version comes back with
 * the alarms section): status says `changed` and the runtime says so in one WARN line
 * (docs/alarms.md, "Actions"), never that the reload removed it.
 */
import assert from "node:assert/strict";
import { LineLogger } from "../../src/host/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";

Deno.test("Kernel.reload restarting a provider and changing the alarm on it that latched the e-stop: one WARN, saying changed", async () => {
  const lines: string[] = [];
  const log = new LineLogger({
    level: "warn",
    journald: false,
    now: () => Date.now(),
    write: (line) => void lines.push(line),
  });
  // tc1_temp starts near 25 C: `warm` raises at its first poll and latches the e-stop.
  const before = alarmsConfig(
    `
alarms:
  - { id: warm, signal: sim1/tempctl0/tc1_temp, hihi: 0, action: estop }
`,
    ["sim0", "sim1"],
  );
  const after = alarmsConfig(
    `
alarms:
  - { id: warm, signal: sim1/tempctl0/tc1_temp, hihi: 800, action: estop }
`,
    ["sim0", "sim1"],
  );
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0"), simProvider("sim1")], alarms: before.alarms }),
    { host: { log } },
  );
  try {
    await waitFor("the e-stop latched", () => rt.estop.status().latched, 10_000);
    assert.equal(rt.estop.status().cause, "alarm:warm");
    const report = await rt.reload({
      ...rt.config,
      // Any difference in its entry restarts sim1.
      providers: rt.config.providers.map((p) =>
        p.id === "sim1" ? { ...p, timeoutMs: p.timeoutMs + 1 } : p
      ),
      alarms: after.alarms,
    });
    assert.deepEqual(report.providers.restarted, ["sim1"]);
    const status = rt.estop.status();
    assert.equal(status.latched, true);
    assert.equal(status.cause, "alarm:warm");
    assert.equal(status.cause_alarm_retired, "changed");
    const said = lines.filter((l) => l.includes("e-stop latched by alarm warm"));
    assert.equal(said.length, 1, said.join("\n"));
    assert.match(said[0]!, /which a reload changed/);
  } finally {
    await rt.stop();
  }
});
