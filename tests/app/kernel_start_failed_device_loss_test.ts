/**
 * A start-up that fails stops the providers already up (ProviderRegistry.startAll) on purpose:
 * their going is the failed start's cleanup, not a device loss (docs/history.md), as in any stop.
 * Real kernel, real children: the simulated provider `s1` comes up, then `bad` (a shell that
 * waits for the test's word) exits before its Hello, failing the start; or `hung` (a scripted
 * provider) never answers its first poll, and the priming poll's start-up budget (Kernel
 * #primeCache) stops them all.
 */
import assert from "node:assert/strict";
import { newKernel, tempDir, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { killLeftovers, readScriptedLog, scriptedProvider } from "../scenarios/process_helpers.ts";

Deno.test("Kernel.start failing after a provider came up records no device_loss incident for the provider it stops", async () => {
  const gate = `${tempDir("start-failed-gate-")}/go`;
  const bad = {
    ...simProvider("bad", { restart: false }),
    command: "/bin/sh",
    args: ["-c", `while [ ! -e '${gate}' ]; do sleep 0.05; done; exit 1`],
  };
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = newKernel(
    testConfig({ providers: [simProvider("s1", { restart: false }), bad] }),
    { log },
  );
  const starting = rt.start().then(() => null, (e: Error) => e.message);
  try {
    // s1 up with its devices in the cache (followed by the outage monitor), then bad fails.
    await waitFor(
      "s1 up with its devices",
      () => rt.registry.host("s1")?.available && rt.cache.providerDevices("s1").length > 0,
    );
    Deno.writeTextFileSync(gate, "");
    const failed = await starting;
    assert.match(failed ?? "start succeeded", /provider start failed: bad/);
  } finally {
    Deno.writeTextFileSync(gate, "");
    await starting;
    await rt.stop();
  }
  assert.deepEqual(rt.incidents?.list() ?? [], [], "no incident recorded");
  assert.deepEqual(lines.filter((l) => /incident .*device_loss|lost/.test(l)), []);
});

Deno.test("Kernel.start failing on a first poll not answered records no device_loss incident for the provider up and primed that it stops", async () => {
  const dir = tempDir("start-failed-poll-");
  const plog = `${dir}/provider.log`;
  // `hung` comes up and never answers its first poll (its timeout far past the start-up budget):
  // only runtime.startup_timeout_ms ends the start, after s1 is up and primed.
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = newKernel(
    testConfig({
      runtime: { startupTimeoutMs: 1500, shutdownTimeoutMs: 600 },
      providers: [
        simProvider("s1", { restart: false }),
        scriptedProvider("hung", ["--log", plog, "--hang", "read_signals"], { timeoutMs: 60000 }),
      ],
    }),
    { log },
  );
  try {
    const failed = await rt.start().then(() => null, (e: Error) => e.message);
    assert.match(failed ?? "start succeeded", /first poll of hung not answered/);
  } finally {
    await rt.stop();
    killLeftovers(readScriptedLog(plog).pids);
  }
  assert.deepEqual(rt.incidents?.list() ?? [], [], "no incident recorded");
  assert.deepEqual(lines.filter((l) => /incident .*device_loss|lost/.test(l)), []);
});
