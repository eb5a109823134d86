/**
 * Kernel.reload and the run registry: a run opened after a reload records the configuration then
 * in effect, and a run open while a reload swaps the behavior tree records the swap (the real
 * kernel over the simulated provider).
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { automationConfig, TreeDir } from "../scenarios/automation_helpers.ts";
import {
  otherTickRate,
  reloadAutomation,
  withDataDirRuntime,
  withTreeRuntime,
} from "./_reload_runs_rig.ts";

Deno.test("Kernel.reload of polling.interval_ms: a run opened afterwards records the interval in effect", async () => {
  await withDataDirRuntime({}, async (rt, base) => {
    const before = (await rt.runs.open({})).run;
    assert.equal(before.polling_interval_ms, base.polling.intervalMs);
    await rt.runs.close(before.run_id, {});
    const slower: Config = { ...rt.config, polling: { intervalMs: base.polling.intervalMs * 2 } };
    const report = await rt.reload(slower);
    assert.deepEqual(report.applied, ["polling"]);
    assert.equal(rt.cache.intervalMs, base.polling.intervalMs * 2);
    const after = (await rt.runs.open({})).run;
    assert.equal(after.polling_interval_ms, rt.cache.intervalMs);
    await rt.runs.close(after.run_id, {});
  });
});

Deno.test("Kernel.reload of polling.interval_ms while a run is open: the run keeps the interval it opened with and records the change as a polling_change event", async () => {
  await withDataDirRuntime({}, async (rt, base) => {
    const { run } = await rt.runs.open({});
    const from = base.polling.intervalMs;
    const report = await rt.reload({ ...rt.config, polling: { intervalMs: from * 2 } });
    assert.deepEqual(report.applied, ["polling"]);
    assert.equal((await rt.runs.get(run.run_id)).run.polling_interval_ms, from);
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    const changes = events.filter((e) => e.category === "polling_change");
    assert.deepEqual(
      changes.map((e) => [e.type, e.payload]),
      [["", { previous_interval_ms: from, new_interval_ms: from * 2 }]],
      "the run's events say its polling interval changed, and to what",
    );
    await rt.runs.close(run.run_id, {});
  });
});

Deno.test("Kernel.reload that swaps the behavior tree while a run is open: the run keeps the version it opened with and records the swap as an automation_change event", async () => {
  await withTreeRuntime(async (rt, { b }) => {
    const { run } = await rt.runs.open({});
    const opened = run.automation_version!;
    assert.equal(opened.id, "a");
    const report = await reloadAutomation(rt, { behaviorTree: b });
    assert.deepEqual(report.refused, []);
    const swapped = rt.automation!.automationVersion()!;
    assert.notEqual(swapped.digest, opened.digest);
    // The record says what the run opened with...
    assert.deepEqual((await rt.runs.get(run.run_id)).run.automation_version, opened);
    // ...and its events say when that changed, and to what.
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    const changes = events.filter((e) => e.category === "automation_change");
    assert.deepEqual(changes.map((e) => [e.type, e.payload]), [
      ["replaced", { previous_version: opened, new_version: swapped }],
    ]);
    const { run: closed } = await rt.runs.close(run.run_id, {});
    assert.deepEqual(closed.automation_version, opened);
    const next = (await rt.runs.open({})).run;
    assert.deepEqual(next.automation_version, swapped);
    await rt.runs.close(next.run_id, {});
  });
});

Deno.test("Kernel.reload after an edit of a file the tree includes: the run's automation_change tells the two trees apart, and so do the runs opened before and after", async () => {
  const dir = await TreeDir.create();
  const hold = (ms: number) =>
    `<root BTCPP_format="4"><BehaviorTree ID="Hold"><Sleep msec="${ms}" /></BehaviorTree></root>\n`;
  try {
    await dir.write("common.xml", hold(60000));
    const a = await dir.write(
      "a.xml",
      `<root BTCPP_format="4" main_tree_to_execute="Main">\n  <include path="common.xml" />\n` +
        `  <BehaviorTree ID="Main"><SubTree ID="Hold" /></BehaviorTree>\n</root>\n`,
    );
    const rt = await startRuntime(automationConfig(a));
    try {
      const { run } = await rt.runs.open({});
      // The operator edits the included subtree; the top-level file is byte for byte the same.
      await dir.write("common.xml", hold(50000));
      const report = await rt.reload(rt.config);
      assert.deepEqual(report.refused, []);
      const events = (await rt.runs.listEvents(run.run_id, {})).events;
      const [change] = events.filter((e) => e.category === "automation_change");
      assert.ok(change, "the swap is recorded");
      assert.notDeepEqual(
        change.payload.new_version,
        change.payload.previous_version,
        "the run's event tells the trees apart",
      );
      await rt.runs.close(run.run_id, {});
      const next = (await rt.runs.open({})).run;
      assert.notDeepEqual(next.automation_version, run.automation_version);
      await rt.runs.close(next.run_id, {});
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload that changes only automation.tick_rate_hz while a run is open records no automation_change (the tree is the same)", async () => {
  await withTreeRuntime(async (rt) => {
    const { run } = await rt.runs.open({});
    const report = await reloadAutomation(rt, { tickRateHz: otherTickRate(rt) });
    assert.deepEqual(report.refused, []);
    assert.deepEqual(rt.automation!.automationVersion(), run.automation_version);
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    assert.deepEqual(
      events.filter((e) => e.category === "automation_change").map((e) => e.payload),
      [],
      "a tick rate change is no swap of the tree",
    );
    await rt.runs.close(run.run_id, {});
  });
});

Deno.test("Kernel.reload that adds a parameter while a run is open records it as a parameter_change event of the run, as it does a removed one", async () => {
  await withTreeRuntime(async (rt) => {
    const { run } = await rt.runs.open({});
    const declared = rt.config.automation.parameters;
    const fresh = { name: "soak_s", type: "int64" as const, default: 5, allowedValues: [] };
    let report = await reloadAutomation(rt, { parameters: [...declared, fresh] });
    assert.deepEqual(report.refused, []);
    assert.equal(rt.parameters!.value("soak_s"), 5);
    report = await reloadAutomation(rt, { parameters: declared });
    assert.deepEqual(report.refused, []);
    await rt.runs.close(run.run_id, {});
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    assert.deepEqual(
      events.filter((e) => e.category === "parameter_change").map((e) => [e.type, e.payload]),
      [
        ["soak_s", { parameter_name: "soak_s", old_value: "", new_value: "5" }],
        ["soak_s", { parameter_name: "soak_s", old_value: "5", new_value: "" }],
      ],
      "the run says a parameter came, with its value, and went",
    );
  });
});

Deno.test("Kernel.reload that changes alarms, interlocks, providers, safety and tokens while a run is open records one config_change event per applied section, naming what changed, never a token", async () => {
  const first = alarmsConfig(`
alarms:
  - { id: trip, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: fault }
  - { id: warm, signal: sim0/tempctl0/tc1_temp, hi: 300 }
interlocks:
  - id: hot
    block: [sim0/motorctl0/set_motor_duty]
    while: sim0/tempctl0/tc1_temp > 400
    message: Motor held while hot
`);
  const second = alarmsConfig(`
alarms:
  - { id: trip, signal: sim0/tempctl0/tc1_temp, hihi: 450, action: fault }
  - { id: cold, signal: sim0/tempctl0/tc1_temp, lo: 5 }
interlocks: []
`);
  await withDataDirRuntime(first, async (rt) => {
    const { run } = await rt.runs.open({});
    const secret = "s3cret-token-value-0123456789";
    const report = await rt.reload({
      ...rt.config,
      ...second,
      providers: [...rt.config.providers, simProvider("sim1")],
      safety: {
        ...rt.config.safety,
        safeState: { ...rt.config.safety.safeState, zeroIsSafe: true },
      },
      http: {
        ...rt.config.http,
        tokens: [{ name: "ops", token: secret, tokenEnv: "", role: "operator" }],
      },
    });
    assert.deepEqual(report.refused, []);
    assert.deepEqual(report.failed, []);
    await rt.runs.close(run.run_id, {});
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    const changes = events.filter((e) => e.category === "config_change");
    assert.deepEqual(
      changes.map((e) => [e.type, e.payload]),
      [
        ["http.tokens", {
          section: "http.tokens",
          added: ["http.tokens[ops]"],
          removed: [],
          changed: [],
          omitted: 0,
        }],
        ["providers", {
          section: "providers",
          added: ["providers[sim1]"],
          removed: [],
          changed: [],
          omitted: 0,
        }],
        ["safety", {
          section: "safety",
          added: [],
          removed: [],
          changed: ["safety.safe_state.zero_is_safe"],
          omitted: 0,
        }],
        ["alarms", {
          section: "alarms",
          added: ["alarms[cold]"],
          removed: ["alarms[warm]", "interlocks[hot]"],
          changed: ["alarms[trip]"],
          omitted: 0,
        }],
      ],
      "the run says which protections, providers and safe state changed under it",
    );
    assert.ok(
      !JSON.stringify(events).includes(secret),
      "no token value is written to the run's events",
    );
  });
});

Deno.test("Kernel.reload that only reorders an interlock's block list while a run is open records no config_change naming it; one that changes the set does", async () => {
  const interlock = (block: string) =>
    alarmsConfig(`
interlocks:
  - id: hot
    block: [${block}]
    while: sim0/tempctl0/tc1_temp > 400
    message: Held while hot
`);
  const first = interlock("sim0/motorctl0/set_motor_duty, sim0/tempctl0/*");
  const reordered = interlock("sim0/tempctl0/*, sim0/motorctl0/set_motor_duty");
  const fewer = interlock("sim0/tempctl0/*");
  await withDataDirRuntime(first, async (rt) => {
    const { run } = await rt.runs.open({});
    const same = await rt.reload({ ...rt.config, ...reordered });
    assert.deepEqual(same.refused, []);
    assert.deepEqual(same.failed, []);
    const changed = await rt.reload({ ...rt.config, ...fewer });
    assert.deepEqual(changed.applied, ["alarms"]);
    await rt.runs.close(run.run_id, {});
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    assert.deepEqual(
      events.filter((e) => e.category === "config_change").map((e) => e.payload),
      [{ section: "alarms", added: [], removed: [], changed: ["interlocks[hot]"], omitted: 0 }],
      "only the reload that changed what the interlock blocks is a config_change of the run",
    );
  });
});
