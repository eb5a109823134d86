/**
 * A reload whose file removes a provider with its alarms and interlocks while the provider stays
 * (its removal refused for the open-file limit; docs/safety.md sec. 9): only that provider's
 * protections are refused, left as they are; the file's other alarm and interlock changes (another
 * provider's) apply, each weakening recorded as usual. Real kernel, real simulated providers.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { httpReservedFds, serveHttp } from "../../src/host/mod.ts";
import { startServing } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { summarize } from "../../src/app/reloader.ts";

const BEFORE = alarmsConfig(
  `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: estop }
  - { id: sim0_hot, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: estop }
interlocks:
  - id: motor_by_sim1
    block: [sim0/motorctl0/set_motor_duty]
    while: 'sim1/tempctl0/tc1_temp > 1000'
    message: sim0's motor waits for sim1's heater
  - id: motor_by_sim0
    block: [sim0/motorctl0/set_motor_duty]
    while: 'sim0/tempctl0/tc1_temp > 1000'
    message: sim0's motor waits for its heater
`,
  ["sim0", "sim1"],
);

/** The file: sim1 and its protections gone, sim0's alarm and interlock changed, one added. */
const AFTER = alarmsConfig(
  `
alarms:
  - { id: sim0_hot, signal: sim0/tempctl0/tc1_temp, hihi: 400, action: estop }
  - { id: sim0_warm, signal: sim0/tempctl0/tc1_temp, hi: 300 }
interlocks:
  - id: motor_by_sim0
    block: [sim0/motorctl0/set_motor_duty]
    while: 'sim0/tempctl0/tc1_temp > 900'
    message: sim0's motor waits for its heater
`,
  ["sim0"],
);

Deno.test("Kernel.reload keeping a provider whose removal was refused refuses only its alarms and interlocks; another provider's alarm changes apply", async () => {
  const config: Config = testConfig({
    providers: [simProvider("sim0"), simProvider("sim1")],
    alarms: BEFORE.alarms,
    interlocks: BEFORE.interlocks,
    http: { maxConnections: 128 },
  });
  // The limit leaves room for exactly the two providers configured at start.
  const limit = 128 + httpReservedFds(2);
  const rt = await startServing(config, {
    serve: (o) => serveHttp({ ...o, openFileLimit: limit }),
  });
  try {
    await rt.modes.request("MANUAL");
    // sim1 goes, two providers come: three need more descriptors than the limit leaves.
    const report = await rt.reload({
      ...rt.config,
      providers: [simProvider("sim0"), simProvider("sim2"), simProvider("sim3")],
      alarms: AFTER.alarms,
      interlocks: AFTER.interlocks,
    });
    assert.equal(report.refused[0]?.section, "providers");
    assert.equal(rt.registry.host("sim1")?.available, true, "sim1 still runs");
    const inForce = (id: string) => rt.config.alarms.find((a) => a.id === id);
    // The file's changes to sim0's protections apply (in the configuration and the engine).
    assert.deepEqual(rt.config.alarms.map((a) => a.id), ["sim0_hot", "sim0_warm", "sim1_hot"]);
    assert.equal(inForce("sim0_hot")?.limits.hihi, 400);
    assert.equal(rt.alarms.alarm("sim0_warm").id, "sim0_warm");
    assert.deepEqual(rt.config.interlocks.map((il) => il.id), ["motor_by_sim0", "motor_by_sim1"]);
    assert.equal(
      rt.config.interlocks.find((il) => il.id === "motor_by_sim0")?.conditionText,
      "sim0/tempctl0/tc1_temp > 900",
    );
    const alarms = report.refused.find((r) => r.section === "alarms");
    assert.ok(alarms !== undefined, JSON.stringify(report.refused));
    assert.match(alarms.why, /provider sim1 still runs/);
    assert.match(alarms.why, /alarm sim1_hot \(action estop\) removed/);
    assert.match(alarms.why, /interlock motor_by_sim1 removed/);
    assert.match(alarms.why, /the section's other changes applied$/);
    assert.doesNotMatch(alarms.why, /sim0_hot|motor_by_sim0/, "sim0's are not refused");
    assert.equal(report.applied.includes("alarms"), false, "applied in part only");
    // sim1's protections are in force as they were.
    assert.deepEqual(inForce("sim1_hot"), BEFORE.alarms[0]);
    assert.equal(rt.alarms.alarm("sim1_hot").id, "sim1_hot");
    assert.deepEqual(
      rt.config.interlocks.find((il) => il.id === "motor_by_sim1"),
      BEFORE.interlocks[0],
    );
    // sim0's weakenings applied with a record; sim1's refused with one.
    assert.deepEqual(report.weakened.map((w) => w.what).sort(), [
      "alarm sim0_hot (action estop) changed",
      "interlock motor_by_sim0 changed",
    ]);
    const page = await rt.audit.query({ limit: 1000 });
    const recorded = page.entries.filter((e) => e.action === "config" && e.function === "alarms");
    assert.deepEqual(
      recorded.map((e) => [e.outcome, (e.args as { weakens: string[] }).weakens.sort()]),
      [
        ["refused", ["alarm sim1_hot (action estop) removed", "interlock motor_by_sim1 removed"]],
        ["accepted", ["alarm sim0_hot (action estop) changed", "interlock motor_by_sim0 changed"]],
      ],
    );
    // The same file again: sim1 still runs, so its part is refused again; nothing else changes.
    const again = await rt.reload({
      ...rt.config,
      providers: [simProvider("sim0"), simProvider("sim2"), simProvider("sim3")],
      alarms: AFTER.alarms,
      interlocks: AFTER.interlocks,
    });
    const twice = again.refused.find((r) => r.section === "alarms");
    assert.match(twice?.why ?? "", /provider sim1 still runs/);
    assert.doesNotMatch(twice?.why ?? "", /other changes applied/, "nothing else to apply");
    assert.deepEqual(again.weakened, []);
    assert.deepEqual(rt.config.alarms.map((a) => a.id), ["sim0_hot", "sim0_warm", "sim1_hot"]);
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.reload whose providers section is refused applies the file's alarm on the provider it did not start, and its summary says that alarm reads a provider that is not running", async () => {
  const sim1Alarm = alarmsConfig(
    `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: estop }
`,
    ["sim1"],
  );
  const config: Config = testConfig({
    providers: [simProvider("sim0")],
    http: { maxConnections: 128 },
  });
  // The limit leaves room for the one provider configured at start.
  const limit = 128 + httpReservedFds(1);
  const rt = await startServing(config, {
    serve: (o) => serveHttp({ ...o, openFileLimit: limit }),
  });
  try {
    await rt.modes.request("MANUAL");
    const report = await rt.reload({
      ...rt.config,
      providers: [simProvider("sim0"), simProvider("sim1")],
      alarms: sim1Alarm.alarms,
    });
    assert.equal(report.refused[0]?.section, "providers");
    assert.equal(rt.registry.host("sim1"), undefined, "sim1 was not started");
    // Fail safe: an alarm on an input that is not there is a bad input (docs/safety.md sec. 9).
    assert.ok(report.applied.includes("alarms"), JSON.stringify(report));
    assert.equal(rt.alarms.alarm("sim1_hot").cause, "bad_quality");
    assert.equal(rt.estop.latched, true, "its action ran");
    // The reload's answer says why the machine stopped, not only that sim1 was not started.
    const summary = summarize(report);
    assert.match(
      summary,
      /; alarms on provider\(s\) not running \(sim1: its providers entry was refused\), their /,
    );
    assert.match(summary, /, their input bad: sim1_hot \(action estop\);/);
  } finally {
    await rt.stop();
  }
});
