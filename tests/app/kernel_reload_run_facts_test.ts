/**
 * One run event per fact of a reload: a polling interval change is a `polling_change` (with its
 * values), a tree swap an `automation_change` (with both versions), and neither is repeated by
 * the section's `config_change`, which keeps only what they do not say (a tick rate). Both are
 * safety events, kept past runs.max_run_bytes as config_change is (the real kernel over the
 * simulated provider; the registry alone for the bound).
 */
import assert from "node:assert/strict";
import { RunRegistry } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import {
  otherTickRate,
  reloadAutomation,
  withDataDirRuntime,
  withTreeRuntime,
} from "./_reload_runs_rig.ts";

Deno.test("Kernel.reload of polling.interval_ms while a run is open: one polling_change, no config_change repeating it", async () => {
  await withDataDirRuntime({}, async (rt, base) => {
    const { run } = await rt.runs.open({});
    const from = base.polling.intervalMs;
    const report = await rt.reload({ ...rt.config, polling: { intervalMs: from * 2 } });
    assert.deepEqual(report.applied, ["polling"]);
    await rt.runs.close(run.run_id, {});
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    assert.deepEqual(
      events.filter((e) => e.category === "polling_change" || e.category === "config_change")
        .map((e) => [e.category, e.type]),
      [["polling_change", ""]],
    );
  });
});

Deno.test("Kernel.reload that swaps the tree and its tick rate while a run is open: one automation_change, and a config_change naming only the tick rate", async () => {
  await withTreeRuntime(async (rt, { a, b }) => {
    const { run } = await rt.runs.open({});
    await reloadAutomation(rt, { behaviorTree: b });
    await reloadAutomation(rt, { behaviorTree: a, tickRateHz: otherTickRate(rt) });
    await rt.runs.close(run.run_id, {});
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    assert.deepEqual(
      events.filter((e) => e.category === "automation_change" || e.category === "config_change")
        .map((e) => [e.category, e.payload.changed ?? null]),
      [
        ["automation_change", null],
        ["automation_change", null],
        ["config_change", ["automation.tick_rate_hz"]],
      ],
    );
  });
});

Deno.test("RunRegistry keeps polling_change and automation_change past runs.max_run_bytes, as the config_change they replace was", async () => {
  const registry = new RunRegistry({
    dataDir: "/data",
    runtimeName: "lab1",
    pollingIntervalMs: 500,
    files: new MemoryFiles(),
    clock: new ManualClock(0, 1_700_000_000_000),
    logger: testLogger(),
    maxRunBytes: 4096,
    random: (b) => b.fill(3),
  });
  await registry.start();
  try {
    const { run } = await registry.open({});
    for (let i = 0; i < 100; i++) {
      registry.recordCall({ first_time_epoch_ms: i, device_handle: "a/b", function: "f" });
    }
    registry.setPollingIntervalMs(1000);
    const v = { engine_kind: "behavior_tree", id: "a", digest: "1", digest_scope: "x" } as const;
    registry.recordAutomationChange(v, { ...v, id: "b", digest: "2" });
    await registry.close(run.run_id, {});
    const events = (await registry.listEvents(run.run_id, { limit: 1000 })).events;
    assert.deepEqual(
      events.filter((e) => e.category !== "call").map((e) => e.category),
      ["run_opened", "polling_change", "automation_change", "run_closed"],
    );
  } finally {
    await registry.shutdown();
  }
});
