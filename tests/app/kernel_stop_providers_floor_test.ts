/**
 * A stop whose whole budget leaves nothing for the providers' stop past
 * STOP_ACTIONS_SHUTDOWN_RESERVE_MS (the stages before it -- the HTTP drain, a stalled history
 * disk -- took the time) still gives each provider PROVIDERS_STOP_MIN_MS, its stdin closed first,
 * the ADPP stop signal on which it applies its own safe state: before, its budget was 0 and it got
 * SIGTERM and SIGKILL at once, killed before it could. Real: the kernel with the scripted provider
 * as a child process, which logs `safe stdin_eof` once its safe state is applied.
 */
import assert from "node:assert/strict";
import { STOP_ACTIONS_SHUTDOWN_RESERVE_MS } from "../../src/app/kernel.ts";
import { processAlive, startRuntime } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { readScriptedLog, scriptedProvider } from "../scenarios/process_helpers.ts";

/** How long the provider's safe state takes: far more than a kill at once leaves it. */
const SAFE_STATE_MS = 10;

Deno.test("Kernel.stop with no time left past STOP_ACTIONS_SHUTDOWN_RESERVE_MS still closes a provider's stdin and lets it apply its safe state", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-stop-floor-" });
  const log = `${dir}/provider.log`;
  const { log: logger, lines } = capturingLogger({ level: "warn" });
  const rt = await startRuntime(
    testConfig({
      providers: [scriptedProvider("p0", ["--log", log, "--safe-state-ms", String(SAFE_STATE_MS)])],
    }),
    { host: { log: logger } },
  );
  const pid = rt.registry.host("p0")!.session!.pid;
  try {
    // Not hurried: the process's deadline leaves just the reserve when the providers' stop begins.
    await rt.stop({ leftMs: () => STOP_ACTIONS_SHUTDOWN_RESERVE_MS });
    assert.equal(processAlive(pid), false, "the provider is gone when the stop ends");
    assert.deepEqual(
      readScriptedLog(log).safe,
      ["stdin_eof"],
      `the provider applied its safe state on stdin's close:\n${lines.join("\n")}`,
    );
  } finally {
    await rt.stop();
    if (processAlive(pid)) Deno.kill(pid, "SIGKILL");
    await Deno.remove(dir, { recursive: true });
  }
});
