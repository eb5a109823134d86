/**
 * The reload's summary line counts every provider it acted on: a changed entry whose restart did
 * not come up (it failed, or stop() cut it short) is in `~` (its old process was stopped), an
 * added one that did not come up in `+`, each also named in `failed to start: …` (one stop() cut
 * short: `not started: …`, the stop's doing) -- never in none of the counts (`+0 -0 ~0 =N` for a
 * reload that stopped a provider).
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import type { Config } from "../../src/config/mod.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

/** The one summary line the reload logged (the test fails naming them if not exactly one). */
function summaryLine(lines: readonly string[]): string {
  const said = lines.filter((l) => l.includes("config reload"));
  assert.equal(said.length, 1, said.join("\n"));
  return said[0]!;
}

Deno.test("ConfigReloader: a changed provider whose restart fails is counted restarted (~1) and named failed to start", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  let next: Config | null = null;
  const rt = await startRuntime(testConfig(), {
    host: { log, loadConfig: () => Promise.resolve({ ok: true, config: next!, warnings: [] }) },
  });
  try {
    const base = rt.config;
    // Its args change (a restart): the sim cannot read that file and exits before its Hello.
    next = {
      ...base,
      providers: [
        simProvider("sim0", { yaml: "/nonexistent/sim.yaml", restart: false }),
        simProvider("sim1", { yaml: "/nonexistent/sim.yaml", restart: false }),
      ],
    };
    await rt.reloader!.request();
    const line = summaryLine(lines);
    // Both started concurrently: either may fail first.
    assert.match(line, /^WARN .*; failed to start: sim[01]: /, line);
    assert.match(line, /[:;] sim0: Hello failed/, line);
    assert.match(line, /[:;] sim1: Hello failed/, line);
    // Before: "providers +0 -0 ~0 =0": sim0 stopped and sim1 tried, counted nowhere.
    assert.match(line, /config reload: providers \+1 -0 ~1 =0;/, line);
  } finally {
    await rt.stop();
  }
});

Deno.test("ConfigReloader: a restart cut short by stop() counts the provider restarted (~1), named not started", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  let next: Config | null = null;
  const rt = await startRuntime(testConfig(), {
    host: { log, loadConfig: () => Promise.resolve({ ok: true, config: next!, warnings: [] }) },
  });
  let stopped: Promise<void> | null = null;
  try {
    const base = rt.config;
    const old = rt.registry.host("sim0");
    assert.ok(old);
    // timeout_ms changes: a restart (a fresh process), not an update in place.
    next = { ...base, providers: [simProvider("sim0", { timeoutMs: 4000 })] };
    const reloading = rt.reloader!.request();
    // The old process is out, its successor registered: its start (spawn, handshake) under way.
    await waitFor(
      "sim0's successor starting",
      () => {
        const h = rt.registry.host("sim0");
        return h !== undefined && h !== old;
      },
      10000,
      0,
    );
    stopped = rt.stop();
    await reloading;
    await stopped;
    const line = summaryLine(lines);
    assert.match(line, /^ERROR .*config reload interrupted \(the runtime is stopping\): /, line);
    // Its start cut by the stop: not started (before: "failed to start: sim0: <the error the stop
    // caused>").
    assert.match(line, /; not started: sim0(;|$)/, line);
    // Before: "providers +0 -0 ~0 =0": the provider it stopped was in none of the counts.
    assert.match(line, /\): providers \+0 -0 ~1 =0;/, line);
  } finally {
    await (stopped ?? rt.stop());
  }
});
