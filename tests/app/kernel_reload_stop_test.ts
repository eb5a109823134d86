/**
 * Kernel.reload racing Kernel.stop: once the runtime is stopping, a reload applies no further
 * section to subsystems the stop is ending; the sections left are reported failed, their old
 * values kept.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
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
      ["polling", "logging"],
    );
    assert.match(report.failed.find((f) => f.section === "polling")?.why ?? "", /stopping/);
  } finally {
    await (stopped ?? rt.stop());
  }
});
