/**
 * A reload that removes (or restarts) a provider together with the alarms that read it
 * (docs/alarms.md, "Reloads"): the alarms go before the provider does, so its going never raises
 * them (an e-stop alarm on its signal must not stop the machine the operator is reconfiguring).
 */
import assert from "node:assert/strict";
import { afterPolls, recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

Deno.test("Kernel.reload removing a provider and the e-stop alarm on its signal does not run the e-stop", async () => {
  const protections = alarmsConfig(
    `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: estop }
  - { id: sim0_hot, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: estop }
`,
    ["sim0", "sim1"],
  );
  const base = testConfig({
    providers: [simProvider("sim0"), simProvider("sim1")],
    alarms: protections.alarms,
  });
  const rt = await startRuntime(base, { arm: true });
  const events = recordEvents(rt);
  try {
    await waitFor("sim1 sampled", () => rt.alarms.alarm("sim1_hot").quality === "OK", 5000);
    const next = {
      ...rt.config,
      providers: rt.config.providers.filter((p) => p.id !== "sim1"),
      alarms: rt.config.alarms.filter((a) => a.id !== "sim1_hot"),
    };
    const report = await rt.reload(next);
    assert.deepEqual(report.providers.removed, ["sim1"]);
    assert.deepEqual(report.applied.includes("alarms"), true);
    assert.deepEqual(report.weakened.map((w) => w.what), ["alarm sim1_hot (action estop) removed"]);
    // Any evaluation the provider's going caused has run once the alarm engine has evaluated
    // after two more polls of sim0's tempctl0 (sim0_hot reads it).
    await afterPolls(rt, "sim0/tempctl0", 2, "two polls of sim0/tempctl0 after the reload");
    const raises = events.events.filter((e) => e.kind === "alarm" && e.transition === "raise");
    assert.deepEqual(raises.map((e) => e.kind === "alarm" && e.alarm_id), []);
    assert.equal(rt.estop.status().latched, false, "no e-stop");
    assert.equal(rt.modes.current(), "MANUAL");
  } finally {
    events.stop();
    await rt.stop();
  }
});

Deno.test("Kernel.reload restarting a provider (its entry changed) and removing the e-stop alarm and the interlock on its signal: neither raises nor engages, no e-stop", async () => {
  const protections = alarmsConfig(
    `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: estop }
interlocks:
  - id: motor_by_sim1
    block: [sim0/motorctl0/set_motor_duty]
    while: 'sim1/tempctl0/tc1_temp > 1000'
    message: sim0's motor waits for sim1's heater
`,
    ["sim0", "sim1"],
  );
  const base = testConfig({
    providers: [simProvider("sim0"), simProvider("sim1")],
    alarms: protections.alarms,
    interlocks: protections.interlocks,
  });
  const rt = await startRuntime(base, { arm: true });
  const events = recordEvents(rt);
  try {
    await waitFor("sim1 sampled", () => rt.alarms.alarm("sim1_hot").quality === "OK", 5000);
    const next = {
      ...rt.config,
      // Any difference in its entry restarts sim1: its process is stopped, then started again.
      providers: rt.config.providers.map((p) =>
        p.id === "sim1" ? { ...p, timeoutMs: p.timeoutMs + 1 } : p
      ),
      alarms: [],
      interlocks: [],
    };
    const report = await rt.reload(next);
    assert.deepEqual(report.providers.restarted, ["sim1"]);
    assert.deepEqual(report.weakened.map((w) => w.what), [
      "interlock motor_by_sim1 removed",
      "alarm sim1_hot (action estop) removed",
    ]);
    await afterPolls(rt, "sim0/tempctl0", 2, "two polls of sim0/tempctl0 after the reload");
    const seen = events.events.filter((e) =>
      (e.kind === "alarm" && e.transition === "raise") || (e.kind === "interlock" && e.blocking)
    );
    assert.deepEqual(seen.map((e) => JSON.stringify(e)), []);
    assert.equal(rt.estop.status().latched, false, "no e-stop");
    assert.equal(rt.modes.current(), "MANUAL");
  } finally {
    events.stop();
    await rt.stop();
  }
});

Deno.test("Kernel.reload restarting a provider and changing the blocking interlock on its signal (MANUAL): its release is logged as changed, not removed", async () => {
  const interlock = (limit: number) =>
    alarmsConfig(
      `
interlocks:
  - id: motor_by_sim1
    block: [sim0/motorctl0/set_motor_duty]
    while: 'sim1/tempctl0/tc1_temp > ${limit}'
    message: sim0's motor waits for sim1's heater
`,
      ["sim0", "sim1"],
    ).interlocks;
  const { log, lines } = capturingLogger();
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("sim0"), simProvider("sim1")],
      interlocks: interlock(-1000),
    }),
    { arm: true, host: { log } },
  );
  try {
    await waitFor(
      "the interlock engaged",
      () => rt.alarms.interlocks().some((i) => i.id === "motor_by_sim1" && i.blocking),
      5000,
    );
    const report = await rt.reload({
      ...rt.config,
      providers: rt.config.providers.map((p) =>
        p.id === "sim1" ? { ...p, timeoutMs: p.timeoutMs + 1 } : p
      ),
      interlocks: interlock(-999),
    });
    assert.deepEqual(report.providers.restarted, ["sim1"]);
    assert.equal(rt.modes.current(), "MANUAL");
    const said = lines.filter((l) => l.includes("interlock motor_by_sim1 released"));
    assert.equal(said.length, 1, lines.join("\n"));
    assert.match(said[0]!, /interlock motor_by_sim1 released: changed by a reload$/);
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.reload adding a provider and an e-stop alarm on its signal does not run the e-stop", async () => {
  const protections = alarmsConfig(
    `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: estop }
`,
    ["sim0", "sim1"],
  );
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), { arm: true });
  const events = recordEvents(rt);
  try {
    const next = {
      ...rt.config,
      providers: [...rt.config.providers, simProvider("sim1")],
      alarms: protections.alarms,
    };
    const report = await rt.reload(next);
    assert.deepEqual(report.providers.added, ["sim1"]);
    await waitFor("sim1 sampled", () => rt.alarms.alarm("sim1_hot").quality === "OK", 5000);
    const raises = events.events.filter((e) => e.kind === "alarm" && e.transition === "raise");
    assert.deepEqual(raises.map((e) => e.kind === "alarm" && e.alarm_id), []);
    assert.equal(rt.estop.status().latched, false, "no e-stop");
  } finally {
    events.stop();
    await rt.stop();
  }
});

Deno.test("Kernel.reload removing a provider and the interlock reading its signal: the interlock never engages (no call refused meanwhile)", async () => {
  const protections = alarmsConfig(
    `
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
      interlocks: protections.interlocks,
    }),
    { arm: true },
  );
  const events = recordEvents(rt);
  try {
    await waitFor(
      "the interlock judged sim1's sample",
      () => rt.alarms.interlocks().some((i) => i.id === "motor_by_sim1" && !i.blocking),
      5000,
    );
    const next = {
      ...rt.config,
      providers: rt.config.providers.filter((p) => p.id !== "sim1"),
      interlocks: [],
    };
    const report = await rt.reload(next);
    assert.deepEqual(report.providers.removed, ["sim1"]);
    assert.equal(report.applied.includes("alarms"), true);
    assert.deepEqual(report.weakened.map((w) => w.what), ["interlock motor_by_sim1 removed"]);
    const engaged = events.events.filter((e) => e.kind === "interlock" && e.blocking);
    assert.deepEqual(
      engaged.map((e) => e.kind === "interlock" && `${e.interlock_id}: ${e.reason}`),
      [],
    );
  } finally {
    events.stop();
    await rt.stop();
  }
});

Deno.test("Kernel.reload removing a provider and its e-stop alarm, AUTO entered while an earlier section awaits: the provider is held back and so is its alarm", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const protections = alarmsConfig(
      `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: estop }
`,
      ["sim0", "sim1"],
    );
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1")], alarms: protections.alarms },
    });
    const rt = await startRuntime(base, { arm: true });
    try {
      await waitFor("sim1 sampled", () => rt.alarms.alarm("sim1_hot").quality === "OK", 5000);
      // The operator enters AUTO while the reload's token section (before `providers`) awaits.
      const api = rt.api as unknown as { setTokens: (...a: unknown[]) => Promise<unknown> };
      const setTokens = api.setTokens.bind(rt.api);
      api.setTokens = async (...a: unknown[]) => {
        const r = await setTokens(...a);
        await rt.modes.request("AUTO");
        return r;
      };
      const next = {
        ...rt.config,
        http: { ...rt.config.http, authToken: "another" },
        providers: rt.config.providers.filter((p) => p.id !== "sim1"),
        alarms: [],
      };
      const report = await rt.reload(next);
      assert.equal(rt.modes.current(), "AUTO");
      assert.deepEqual(report.providers.held, ["sim1"], "AUTO holds the removal back");
      assert.ok(rt.registry.host("sim1")?.available, "sim1 still runs");
      assert.deepEqual(
        rt.config.alarms.map((a) => a.id),
        ["sim1_hot"],
        "the e-stop alarm of a provider that still runs in AUTO is still in force",
      );
      assert.equal(rt.alarms.alarms().some((a) => a.id === "sim1_hot"), true);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload restarting a provider and changing its e-stop alarm, AUTO entered before the alarms section, which is refused: the changed alarm is in force, not neither version", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const protections = alarmsConfig(
      `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: estop }
  - { id: sim0_hot, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: estop }
`,
      ["sim0", "sim1"],
    );
    const changed = alarmsConfig(
      `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 400, action: estop }
`,
      ["sim0", "sim1"],
    );
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1")], alarms: protections.alarms },
    });
    const rt = await startRuntime(base, { arm: true });
    try {
      await waitFor("sim1 sampled", () => rt.alarms.alarm("sim1_hot").quality === "OK", 5000);
      // The operator enters AUTO once the restarted sim1 is up, while the providers section polls
      // its devices (after the restart's own AUTO refusal has ended, before the alarms section).
      const old = rt.registry.host("sim1");
      const cache = rt.cache as unknown as {
        pollDevice: (p: string, d: string) => Promise<void>;
      };
      const poll = cache.pollDevice.bind(rt.cache);
      let auto: Promise<unknown> | null = null;
      cache.pollDevice = (p: string, d: string) => {
        if (p === "sim1" && auto === null && rt.registry.host("sim1") !== old) {
          auto = rt.modes.request("AUTO");
          return auto.then(() => poll(p, d));
        }
        return poll(p, d);
      };
      const next = {
        ...rt.config,
        providers: rt.config.providers.map((p) =>
          p.id === "sim1" ? { ...p, timeoutMs: p.timeoutMs + 1 } : p
        ),
        // sim1_hot changed (a lower limit); sim0_hot removed: a weakening AUTO refuses.
        alarms: changed.alarms,
      };
      const report = await rt.reload(next);
      assert.deepEqual(report.providers.restarted, ["sim1"]);
      assert.notEqual(auto, null, "AUTO was requested during the providers section");
      assert.equal(rt.modes.current(), "AUTO");
      assert.deepEqual(report.refused.map((r) => r.section), ["alarms"]);
      assert.deepEqual(
        rt.alarms.alarms().map((a) => [a.id, a.limits]).sort(),
        [["sim0_hot", { hihi: 500 }], ["sim1_hot", { hihi: 400 }]],
        "sim1_hot, taken out before sim1 was restarted, is in force as the file has it",
      );
      assert.deepEqual(
        rt.config.alarms.map((a) => [a.id, a.limits]).sort(),
        [["sim0_hot", { hihi: 500 }], ["sim1_hot", { hihi: 400 }]],
      );
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
