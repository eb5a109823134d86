/**
 * Kernel.reload against the real kernel over the simulated provider (docs/safety.md, "Configuration
 * reloads never weaken a running machine"): a reload while AUTO runs never leaves the machine in a
 * state it would refuse to enter nor changes the running recipe -- one test per invariant, each
 * refused for that section only, the rest applied -- and outside AUTO a weakened protection applies
 * with a record. A section whose owner fails keeps its old value and is offered again by the next
 * reload.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import type { ReloadReport } from "../../src/app/reload_report.ts";
import { summarize } from "../../src/app/reloader.ts";
import type { AlarmConfig, Config, InterlockConfig } from "../../src/config/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { expectation } from "../safety/_fixture.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import {
  automationConfig,
  cached,
  callAs,
  enterAuto,
  STOP_MOTOR_ON_FAULT,
  TreeDir,
  treeXml,
  tv,
} from "../scenarios/automation_helpers.ts";

/** A tree that keeps running (reads and waits): AUTO stays up for the whole test. */
const IDLE_TREE = treeXml(`<Sleep msec="60000" />`);

const PROTECTIONS = alarmsConfig(`
alarms:
  - { id: trip, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: fault }
interlocks:
  - id: hot
    block: [sim0/motorctl0/set_motor_duty]
    while: sim0/tempctl0/tc1_temp > 400
    message: Motor held while hot
`);

async function withKernel(
  fn: (rt: Kernel, base: Config) => Promise<void>,
): Promise<void> {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", IDLE_TREE);
    const base = automationConfig(tree, {
      config: {
        safety: { expect: [expectation("sim0/motorctl0/motor1_duty", { equals: 0 })] },
        alarms: PROTECTIONS.alarms,
        interlocks: PROTECTIONS.interlocks,
      },
    });
    const rt = await startRuntime(base);
    try {
      await fn(rt, rt.config); // as started (its own data_dir)
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
}

function withAutomation(base: Config, a: Partial<Config["automation"]>): Config {
  return { ...base, automation: { ...base.automation, ...a } };
}

function refusedSections(r: ReloadReport): string[] {
  return r.refused.map((x) => x.section);
}

Deno.test("Kernel.reload in AUTO refuses removing the AUTO -> FAULT hook; FAULT still runs it", async () => {
  await withKernel(async (rt, base) => {
    await enterAuto(rt);
    const next = withAutomation(base, {
      modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
    });
    const r = await rt.reload(next);
    assert.deepEqual(refusedSections(r), ["automation.mode_transition_hooks"]);
    assert.match(r.refused[0]!.why, /no hook covers AUTO -> FAULT any more/);
    assert.match(summarize(r), /refused automation\.mode_transition_hooks/);
    // In effect: the old hooks. FAULT runs them: motor 1 to 0.
    assert.deepEqual(rt.config.automation.modeTransitionHooks.beforeTransition, [
      STOP_MOTOR_ON_FAULT,
    ]);
    // The motor running first, so that 0 afterwards is the hook's doing.
    await callAs(rt, "automated", "sim0/motorctl0", "set_motor_duty", {
      motor_index: tv.i(1),
      duty: tv.d(0.5),
    });
    await waitFor("motor 1 at 0.5", () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.5);
    await rt.modes.forceFault("test");
    // The hook's call answered; its post-call poll is not awaited (e5b9bd44): bounded wait.
    await waitFor("motor 1 at 0", () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0);
    // On record, as the reload's refusal.
    const entry = (await rt.audit.query({ limit: 100 })).entries.find((e) => e.action === "config");
    assert.deepEqual(
      [entry?.origin.kind, entry?.function, entry?.outcome],
      ["reload", "automation.mode_transition_hooks", "refused"],
    );
  });
});

Deno.test("Kernel.reload in AUTO refuses turning manual_gating_policy from BLOCK to OVERRIDE; outside AUTO it applies, recorded, and the next AUTO lets manual calls through", async () => {
  await withKernel(async (rt, base) => {
    const manualCall = () =>
      callAs(rt, "manual", "sim0/motorctl0", "set_motor_duty", {
        motor_index: tv.i(2),
        duty: tv.d(0.3),
      });
    await enterAuto(rt);
    await assert.rejects(manualCall(), /manual_gating_policy BLOCK/);
    const override = withAutomation(base, { manualGatingPolicy: "OVERRIDE" });
    const inAuto = await rt.reload(override);
    assert.deepEqual(refusedSections(inAuto), ["automation.mode_transition_hooks"]);
    assert.match(inAuto.refused[0]!.why, /manual_gating_policy BLOCK -> OVERRIDE/);
    assert.equal(rt.config.automation.manualGatingPolicy, "BLOCK", "the old policy stays");
    await assert.rejects(manualCall(), /manual_gating_policy BLOCK/, "still blocked in AUTO");

    await rt.modes.request("MANUAL");
    const manual = await rt.reload(override);
    assert.deepEqual(refusedSections(manual), []);
    assert.deepEqual(manual.weakened.map((w) => w.what), [
      "manual_gating_policy BLOCK -> OVERRIDE: manual calls reach what AUTO drives",
    ]);
    const entries = (await rt.audit.query({ limit: 100 })).entries.filter((e) =>
      e.action === "config" && e.function === "automation.mode_transition_hooks"
    );
    assert.deepEqual(entries.map((e) => e.outcome), ["refused", "accepted"]);
    await rt.modes.request("AUTO");
    await manualCall(); // OVERRIDE: passes in AUTO
    await waitFor("motor 2 at 0.3", () => cached(rt, "sim0/motorctl0", "motor2_duty") === 0.3);
    // Back to BLOCK strengthens: applied in AUTO at once.
    const back = await rt.reload(base);
    assert.deepEqual([refusedSections(back), back.weakened], [[], []]);
    await assert.rejects(manualCall(), /manual_gating_policy BLOCK/);
  });
});

Deno.test("Kernel.reload in AUTO keeps a parameter's still-valid value when its bounds narrow, and refuses a change that would move it", async () => {
  await withKernel(async (rt, base) => {
    await enterAuto(rt);
    rt.parameters!.set("motor_duty", 0.5);
    const params = (max: number) =>
      base.automation.parameters.map((p) => p.name === "motor_duty" ? { ...p, max } : p);
    // 0..0.8 still holds 0.5: applied, the value stays.
    const narrowed = await rt.reload(withAutomation(base, { parameters: params(0.8) }));
    assert.deepEqual(refusedSections(narrowed), []);
    assert.ok(narrowed.applied.includes("automation.parameters"));
    assert.equal(rt.parameters!.value("motor_duty"), 0.5);
    // 0..0.3 would reset it to its default: the running recipe would change. Refused.
    const moved = await rt.reload(withAutomation(base, { parameters: params(0.3) }));
    assert.deepEqual(refusedSections(moved), ["automation.parameters"]);
    assert.match(moved.refused[0]!.why, /"motor_duty" \(its value 0\.5 would go to the default/);
    assert.equal(rt.parameters!.value("motor_duty"), 0.5);
    assert.equal(rt.parameters!.get("motor_duty")!.max, 0.8, "the narrowed bounds stay");
  });
});
Deno.test("Kernel.reload keeps a parameter's value across a type change that holds it exactly (double 5 -> int64 5), in AUTO too; one it does not hold (5.5) is a reset, refused in AUTO", async () => {
  await withKernel(async (rt, base) => {
    const retyped = (type: "double" | "int64", dflt: number) =>
      withAutomation(base, {
        parameters: base.automation.parameters.map((p) =>
          p.name === "target_temp" ? { ...p, type, default: dflt } : p
        ),
      });
    await enterAuto(rt);
    rt.parameters!.set("target_temp", 5);
    // int64 holds 5 exactly: the value stays (the new default 7 is not taken), now an int64.
    const toInt = await rt.reload(retyped("int64", 7));
    assert.deepEqual(refusedSections(toInt), []);
    assert.ok(toInt.applied.includes("automation.parameters"));
    assert.deepEqual(rt.parameters!.get("target_temp"), {
      name: "target_temp",
      type: "int64",
      value: 5,
      min: 0,
      max: 120,
    });
    // Back to double: an int64 (within +/-2^53) is an exact double.
    const toDouble = await rt.reload(retyped("double", 8));
    assert.deepEqual(refusedSections(toDouble), []);
    assert.equal(rt.parameters!.value("target_temp"), 5);
    assert.equal(rt.parameters!.get("target_temp")!.type, "double");
    // 5.5 is no int64: it would go to the default, a change of the running recipe in AUTO.
    rt.parameters!.set("target_temp", 5.5);
    const refused = await rt.reload(retyped("int64", 7));
    assert.deepEqual(refusedSections(refused), ["automation.parameters"]);
    assert.match(
      refused.refused[0]!.why,
      /"target_temp" \(its value 5\.5 would go to the default 7\)/,
    );
    assert.equal(rt.parameters!.value("target_temp"), 5.5);
    assert.equal(rt.parameters!.get("target_temp")!.type, "double");
    // Outside AUTO the same reload applies: the value goes to the new default.
    await rt.modes.request("MANUAL");
    const reset = await rt.reload(retyped("int64", 7));
    assert.deepEqual(refusedSections(reset), []);
    assert.equal(rt.parameters!.value("target_temp"), 7);
    assert.equal(rt.parameters!.get("target_temp")!.type, "int64");
  });
});

Deno.test("Kernel.reload in AUTO refuses weakening the e-stop, and applies it with a record outside AUTO", async () => {
  await withKernel(async (rt, base) => {
    await enterAuto(rt);
    const weaker: Config = {
      ...base,
      safety: { ...base.safety, safeState: { ...base.safety.safeState, expect: [] } },
    };
    const inAuto = await rt.reload(weaker);
    assert.deepEqual(refusedSections(inAuto), ["safety"]);
    assert.match(inAuto.refused[0]!.why, /no longer verifies sim0\/motorctl0\/motor1_duty/);
    assert.equal(rt.config.safety.safeState.expect.length, 1, "the old safety stays in effect");
    assert.equal(rt.estop.status().unverified_devices.includes("sim0/motorctl0"), false);

    await rt.modes.request("MANUAL");
    const manual = await rt.reload(weaker);
    assert.deepEqual(refusedSections(manual), []);
    assert.deepEqual(manual.weakened.map((w) => w.what), [
      "the e-stop no longer verifies sim0/motorctl0/motor1_duty",
    ]);
    assert.match(summarize(manual), /weakened \(safety\): the e-stop no longer verifies/);
    assert.equal(rt.config.safety.safeState.expect.length, 0);
    const entries = (await rt.audit.query({ limit: 100 })).entries.filter((e) =>
      e.action === "config" && e.function === "safety"
    );
    assert.deepEqual(entries.map((e) => e.outcome), ["refused", "accepted"]);
  });
});

Deno.test("Kernel.reload in AUTO refuses removing an interlock or an acting alarm; an added alarm without action applies", async () => {
  await withKernel(async (rt, base) => {
    await enterAuto(rt);
    const watcher = alarmsConfig(`
alarms:
  - { id: trip, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: fault }
  - { id: warm, signal: sim0/tempctl0/tc1_temp, hi: 300 }
`);
    const noInterlock = await rt.reload({ ...base, alarms: watcher.alarms, interlocks: [] });
    assert.deepEqual(refusedSections(noInterlock), ["alarms"]);
    assert.match(noInterlock.refused[0]!.why, /interlock hot removed/);
    assert.deepEqual(rt.alarms.interlocks().map((i) => i.id), ["hot"]);
    assert.deepEqual(rt.alarms.alarms().map((a) => a.id), ["trip"], "nothing of it applied");
    const added = await rt.reload({
      ...base,
      alarms: [...base.alarms, watcher.alarms[1] as AlarmConfig],
      interlocks: base.interlocks as InterlockConfig[],
    });
    assert.deepEqual(refusedSections(added), []);
    assert.deepEqual(rt.alarms.alarms().map((a) => a.id), ["trip", "warm"]);
  });
});

Deno.test("Kernel.reload in AUTO refuses a longer polling interval or a staleness that finds samples stale later; shorter ones apply; outside AUTO they apply, recorded", async () => {
  await withKernel(async (rt, base) => {
    await enterAuto(rt);
    const interval = base.polling.intervalMs; // 100 ms
    const slower: Config = { ...base, polling: { intervalMs: interval * 30 } };
    const inAuto = await rt.reload(slower);
    assert.deepEqual(refusedSections(inAuto), ["polling"]);
    assert.match(
      inAuto.refused[0]!.why,
      /polling\.interval_ms 100 -> 3000 ms: alarms and interlocks see changes later, a device that drops out is found after 9000 ms instead of 500/,
    );
    assert.equal(rt.cache.intervalMs, interval, "the old interval stays");
    assert.equal(rt.config.polling.intervalMs, interval);
    // Configured bounds raise a declared signal's own (voltage_ch1 declares 500 ms): later.
    const lax: Config = {
      ...base,
      health: { staleness: { warnAfterMs: 0, staleAfterMs: 60_000 } },
    };
    const laxInAuto = await rt.reload(lax);
    assert.deepEqual(refusedSections(laxInAuto), ["health"]);
    assert.match(laxInAuto.refused[0]!.why, /health\.staleness: samples found stale later: /);
    assert.match(
      laxInAuto.refused[0]!.why,
      /later: "sim0\/analogsensor0" signal "voltage_ch1": stale after 500 -> 60000 ms; "sim0\/motorctl0"/,
    );
    assert.match(laxInAuto.refused[0]!.why, /; and 2 more device\(s\)$/);
    assert.equal(rt.cache.staleAfterMs("sim0", "tempctl0", "tc1_temp"), 1500);
    assert.deepEqual(rt.cache.staleness, base.health.staleness);
    // Tighter: applies in AUTO at once, nothing weakened.
    const faster: Config = {
      ...base,
      polling: { intervalMs: 90 },
      health: { staleness: { warnAfterMs: 0, staleAfterMs: 300 } },
    };
    const tighter = await rt.reload(faster);
    assert.deepEqual([refusedSections(tighter), tighter.weakened], [[], []]);
    assert.deepEqual(tighter.applied.toSorted(), ["health", "polling"]);
    assert.equal(rt.cache.intervalMs, 90);
    assert.equal(rt.cache.livenessBounds("sim0", "chaos_control")?.staleAfterMs, 300);
    const entries = () =>
      rt.audit.query({ limit: 100 }).then((q) =>
        q.entries.filter((e) => e.action === "config").map((e) => [e.function, e.outcome])
      );
    assert.deepEqual(await entries(), [["polling", "refused"], ["health", "refused"]]);

    await rt.modes.request("MANUAL");
    const manual = await rt.reload({ ...slower, health: lax.health });
    assert.deepEqual(refusedSections(manual), []);
    assert.deepEqual(manual.weakened.map((w) => w.section).toSorted(), ["health", "polling"]);
    assert.match(summarize(manual), /weakened \(polling\): polling\.interval_ms 90 -> 3000 ms/);
    assert.equal(rt.cache.intervalMs, 3000);
    assert.equal(rt.cache.staleAfterMs("sim0", "tempctl0", "tc1_temp"), 60_000);
    assert.deepEqual((await entries()).slice(2).toSorted(), [
      ["health", "accepted"],
      ["polling", "accepted"],
    ]);
  });
});

Deno.test("Kernel.reload: a section whose owner fails keeps its old value and is offered again by the next reload", async () => {
  await withKernel(async (rt, base) => {
    // Telemetry enabled without a token (none in the file, INFLUXDB_TOKEN not read by this
    // kernel): the writer refuses the new target and goes on as it was.
    const broken: Config = {
      ...base,
      telemetry: {
        ...base.telemetry,
        enabled: true,
        influxdb: { ...base.telemetry.influxdb, url: "http://127.0.0.1:9", token: "" },
      },
    };
    const first = await rt.reload(broken);
    assert.equal(first.failed.length, 1);
    assert.equal(first.failed[0]!.section, "telemetry");
    assert.match(first.failed[0]!.why, /telemetry\.influxdb\.token is empty/);
    assert.equal(rt.config.telemetry.enabled, false, "the old value stays in effect");
    assert.equal(rt.telemetry.status().enabled, false);
    const again = await rt.reload(broken);
    assert.deepEqual(again.failed.map((f) => f.section), ["telemetry"], "retried");
    const fixed: Config = {
      ...broken,
      telemetry: {
        ...broken.telemetry,
        influxdb: { ...broken.telemetry.influxdb, token: "reload-test-token" },
      },
    };
    const third = await rt.reload(fixed);
    assert.deepEqual(third.applied, ["telemetry"]);
    assert.equal(rt.config.telemetry.enabled, true);
    assert.equal(rt.telemetry.status().enabled, true);
    assert.deepEqual((await rt.reload(fixed)).applied, [], "nothing left to apply");
  });
});

Deno.test("Kernel.reload of the tick rate without a behavior tree: the setting applies, with no tree retimed nor refused in AUTO", async () => {
  const rt = await startRuntime(automationConfig(null));
  try {
    const r1 = await rt.reload(withAutomation(rt.config, { tickRateHz: 25 }));
    assert.deepEqual(r1.applied, ["automation.behavior_tree"]);
    assert.deepEqual(r1.notes, [], "no tree: no tick rate note");
    assert.equal(rt.config.automation.tickRateHz, 25, "the configuration in effect takes the rate");
    assert.equal(await rt.automation!.reloadTree(null, 25), "unchanged");
    await enterAuto(rt);
    const r2 = await rt.reload(withAutomation(rt.config, { tickRateHz: 30 }));
    assert.deepEqual(refusedSections(r2), [], "no tree runs in AUTO: nothing to protect");
    assert.deepEqual(r2.applied, ["automation.behavior_tree"]);
    assert.equal(rt.config.automation.tickRateHz, 30);
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.reload removing the behavior tree says so in its notes, not 'behavior tree reloaded'", async () => {
  await withKernel(async (rt) => {
    await rt.modes.request("MANUAL");
    const r = await rt.reload(withAutomation(rt.config, { behaviorTree: null }));
    assert.deepEqual(r.applied, ["automation.behavior_tree"]);
    assert.deepEqual(r.notes.filter((n) => /behavior tree/.test(n)), ["behavior tree removed"]);
    assert.equal(rt.automation!.status().not_running?.cause, "no_definition");
  });
});

Deno.test("Kernel.reload in AUTO of a tree file that does not load is refused with the file's diagnostics, not only 'mode is AUTO'", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", IDLE_TREE);
    const rt = await startRuntime(automationConfig(tree));
    try {
      await enterAuto(rt);
      // The operator edits the running tree's file into one that does not load, and reloads.
      await dir.write("idle.xml", treeXml(`<Sleeep msec="60000" />`));
      const r = await rt.reload(rt.config);
      assert.deepEqual(refusedSections(r), ["automation.behavior_tree"], "still refused in AUTO");
      assert.match(
        r.refused[0]!.why,
        /^mode is AUTO: .*Failed to load behavior tree .*idle\.xml: 1 error\(s\)\n .*idle\.xml:\d+:\d+: error: .*unknown node type "Sleeep"/s,
      );
      assert.equal(rt.modes.current(), "AUTO", "the running tree keeps running");
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload outside AUTO whose weakening's line throws (a custom logger) still resolves and records the weakening on the audit trail", async () => {
  await using r = await rig({
    providers: [simProvider("sim0")],
    ...PROTECTIONS,
    // The sink fails on the weakening's line.
    onLine: (line) => {
      if (line.includes("config reload: alarms:")) throw new Error("log sink failed");
    },
  });
  const rt = r.kernel;
  // Before: the line's throw left #recordReload before its audit record, and the reload rejected
  // although its alarms section had applied.
  const report = await rt.reload({ ...rt.config, alarms: [], interlocks: [] });
  assert.deepEqual(report.applied, ["alarms"], JSON.stringify(report));
  assert.deepEqual(rt.config.alarms, []);
  const recorded = (await rt.audit.query({ limit: 100 })).entries.filter((e) =>
    e.action === "config" && e.function === "alarms"
  );
  assert.deepEqual(recorded.map((e) => e.outcome), ["accepted"]);
});
