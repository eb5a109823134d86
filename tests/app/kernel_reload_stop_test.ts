/**
 * Kernel.reload racing Kernel.stop: once the runtime is stopping, a reload applies no further
 * section to subsystems the stop is ending; the sections left are reported failed, their old
 * values kept.
 */
import assert from "node:assert/strict";
import { processAlive, recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import type { Config } from "../../src/config/mod.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import type { LogLevel } from "../../src/common/mod.ts";

Deno.test("Kernel.reload: stop() while a section awaits (a provider starting): no later section is applied", async () => {
  const levels: LogLevel[] = [];
  const rt = await startRuntime(testConfig(), {
    host: { setLogLevel: (l: LogLevel) => levels.push(l) },
  });
  let stopped: Promise<void> | null = null;
  try {
    const base = rt.config;
    const next = {
      ...base,
      // Its start takes a process spawn and handshake: the reload awaits it.
      providers: [...base.providers, simProvider("sim1")],
      polling: { ...base.polling, intervalMs: base.polling.intervalMs * 2 },
      logging: {
        ...base.logging,
        level: base.logging.level === "debug" ? "info" : "debug",
      } as typeof base.logging,
    };
    const reloading = rt.reload(next);
    stopped = rt.stop(); // while the providers section awaits sim1
    const report = await reloading;
    await stopped;
    assert.deepEqual(
      levels,
      [],
      `a section was applied after stop() began: ${
        JSON.stringify({ applied: report.applied, failed: report.failed })
      }`,
    );
    assert.equal(rt.config.polling.intervalMs, base.polling.intervalMs);
    assert.deepEqual(
      report.failed.filter((f) => f.section === "polling" || f.section === "logging").map((f) =>
        f.section
      ),
      ["logging", "polling"], // table order (CONFIG_SECTIONS)
    );
    assert.match(report.failed.find((f) => f.section === "polling")?.why ?? "", /stopping/);
  } finally {
    await (stopped ?? rt.stop());
  }
});

Deno.test("Kernel.reload: a provider start cut short by stop() fails the providers section, not applied", async () => {
  const rt = await startRuntime(testConfig());
  let stopped: Promise<void> | null = null;
  try {
    const base = rt.config;
    const reloading = rt.reload({ ...base, providers: [...base.providers, simProvider("sim1")] });
    stopped = rt.stop(); // while the providers section reconciles
    const report = await reloading;
    await stopped;
    assert.ok(report.providers.failed.length > 0, JSON.stringify(report.providers));
    assert.ok(
      !report.applied.includes("providers"),
      `providers reported applied: ${JSON.stringify(report)}`,
    );
    assert.match(report.failed.find((f) => f.section === "providers")?.why ?? "", /stopping/);
    assert.equal(report.interrupted, true);
  } finally {
    await (stopped ?? rt.stop());
  }
});

Deno.test("ConfigReloader: a reload cut short by stop() is counted a failure, published failed", async () => {
  let next: Config | null = null;
  const rt = await startRuntime(testConfig(), {
    host: { loadConfig: () => Promise.resolve({ ok: true, config: next!, warnings: [] }) },
  });
  const { events, stop: unsubscribe } = recordEvents(rt);
  let stopped: Promise<void> | null = null;
  try {
    const base = rt.config;
    next = { ...base, providers: [...base.providers, simProvider("sim1")] };
    const reloading = rt.reloader!.request();
    // sim1 registered: its start (spawn, handshake) is under way.
    await waitFor("sim1 starting", () => rt.registry.host("sim1"), 10000, 0);
    stopped = rt.stop();
    await reloading;
    await stopped;
    const counts = rt.reloader!.counts();
    assert.deepEqual(
      { success: counts.success, failure: counts.failure },
      { success: 0, failure: 1 },
      "an interrupted reload is not a success",
    );
    const ev = events.find((e) => e.kind === "config_reload");
    assert.equal(ev?.kind === "config_reload" ? ev.result : undefined, "failed");
  } finally {
    unsubscribe();
    await (stopped ?? rt.stop());
  }
});

Deno.test("Kernel.reload removing a provider as stop() begins: no e-stop plan (nor its WARN lines) is logged after the stop began", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0"), simProvider("sim1")] }),
    {
      host: { log },
    },
  );
  let stopped: Promise<void> | null = null;
  try {
    const base = rt.config;
    const pids = rt.registry.hosts.map((h) => h.session!.pid);
    const reloading = rt.reload({
      ...base,
      providers: base.providers.filter((p) => p.id !== "sim1"),
    });
    const atStop = lines.length;
    stopped = rt.stop(); // the reload removes sim1 after this: the runtime is stopping
    const report = await reloading;
    await stopped;
    assert.deepEqual(report.providers.removed, ["sim1"], "the reload did remove sim1");
    const after = lines.slice(atStop);
    // Before: "INFO e-stop plan (provider sim1 removed): ..." and "WARN safe-state ladder resolves
    // to none: ..." after the stop began -- a plan for a runtime that is ending.
    assert.deepEqual(after.filter((l) => /e-stop plan|^(WARN|ERROR)/.test(l)), []);
    assert.deepEqual(pids.filter(processAlive), [], "no provider process left");
  } finally {
    await (stopped ?? rt.stop());
  }
});

Deno.test("ConfigReloader: a reload cut short by stop() says each provider it did not start once, and no section the file did not change", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  let next: Config | null = null;
  // Automation disabled (testConfig's default): the tree section is offered to every reload only
  // to read its file again, and nothing reads it.
  const rt = await startRuntime(testConfig(), {
    host: { log, loadConfig: () => Promise.resolve({ ok: true, config: next!, warnings: [] }) },
  });
  let stopped: Promise<void> | null = null;
  try {
    const base = rt.config;
    assert.equal(base.automation.enabled, false);
    next = { ...base, providers: [...base.providers, simProvider("sim1")] };
    const reloading = rt.reloader!.request();
    await waitFor("sim1 starting", () => rt.registry.host("sim1"), 10000, 0);
    stopped = rt.stop();
    await reloading;
    await stopped;
    const said = lines.filter((l) => l.includes("config reload"));
    assert.equal(said.length, 1, said.join("\n"));
    const line = said[0]!;
    assert.match(line, /^ERROR .*config reload interrupted \(the runtime is stopping\): /);
    // Before: "failed providers: the runtime is stopping; not started: sim1: <why>; failed
    // automation.behavior_tree: the runtime is stopping; failed to start: sim1: <why>".
    assert.equal(line.split("sim1").length - 1, 1, `sim1 said more than once: ${line}`);
    // Its start cut by the stop: not started, the stop's doing (before: "failed to start: sim1:
    // Hello failed: ... closed by the runtime" when the stop cut its Hello).
    assert.match(line, /; not started: sim1(;|$)/);
    assert.doesNotMatch(line, /failed to start/);
    assert.doesNotMatch(
      line,
      /behavior_tree/,
      "a section the file did not change, reported failed",
    );
  } finally {
    await (stopped ?? rt.stop());
  }
});
