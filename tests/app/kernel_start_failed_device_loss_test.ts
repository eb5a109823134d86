/**
 * A start-up that fails stops the providers already up (ProviderRegistry.startAll, or the first
 * poll pass past runtime.startup_timeout_ms) on purpose: their going is the failed start's cleanup,
 * not a device loss (docs/history.md), as in any stop. Real kernel, real children: the simulated
 * provider `s1` comes up, then `bad` (a shell that waits for the test's word) exits before its
 * Hello, failing the start; or a scripted provider `hung` never answers its first poll.
 */
import assert from "node:assert/strict";
import { QUALITY_BY_CODE } from "../../src/history/ring.ts";
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

Deno.test("Kernel.start failing at runtime.startup_timeout_ms on a first poll not answered records no device_loss incident and no sample of the providers it stops", async () => {
  const dir = await Deno.makeTempDir({ prefix: "start-failed-prime-" });
  const scripted = `${dir}/provider.log`;
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = newKernel(
    testConfig({
      // Room for s1 to come up and answer its first poll on a busy machine: only hung fails.
      runtime: { startupTimeoutMs: 3000 },
      providers: [
        simProvider("s1", { restart: false }),
        // timeout_ms far beyond the start-up budget: only the budget ends its first poll.
        scriptedProvider("hung", ["--log", scripted, "--hang", "read_signals"], {
          timeoutMs: 60000,
        }),
      ],
    }),
    { log },
  );
  try {
    const failed = await rt.start().then(() => null, (e: Error) => e.message);
    assert.match(failed ?? "start succeeded", /first poll of hung not answered/);
  } finally {
    await rt.stop();
    killLeftovers(readScriptedLog(scripted).pids);
    await Deno.remove(dir, { recursive: true });
  }
  assert.deepEqual(rt.incidents?.list() ?? [], [], "no incident recorded");
  assert.deepEqual(lines.filter((l) => /incident .*device_loss|lost/.test(l)), []);
  // The ring holds s1's answered polls only: its going is not recorded (no UNAVAILABLE sample).
  const history = rt.history!;
  const qualities = new Set<string>();
  for (const [provider, device] of history.devices().filter(([p]) => p === "s1")) {
    for (const signal of history.signalIds(provider, device)) {
      history.eachSampleFrom(provider, device, signal, 0, (x) => {
        qualities.add(QUALITY_BY_CODE[x.quality]!);
      });
    }
  }
  assert.ok(qualities.size > 0, "s1's first poll is in the ring");
  assert.ok(!qualities.has("UNAVAILABLE"), `s1's samples: ${[...qualities].join(", ")}`);
});
