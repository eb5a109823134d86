/**
 * A stop while a provider's poll hangs (the provider never answers a ReadSignals; it would fail
 * only at the provider's timeout_ms) does not wait out that read: the state cache's stage waits
 * for polls in flight at most CACHE_STOP_POLLS_MS (one WARN naming the provider), then the
 * providers are stopped (stdin closed) and apply their own safe state: the SDK sees stdin's close
 * while the read still hangs (tests/provider_sdk/stdin_eof_hung_request_test.ts). Before,
 * the stage awaited the poll in flight (PollLoop.stop), and with it the providers' stop waited the
 * provider's whole timeout_ms (20 s here), past runtime.shutdown_timeout_ms (what the cache does
 * with a poll that ends after that bound: tests/state/cache_stop_cut_polls_test.ts).
 * Real: the kernel with the scripted provider as a child process.
 */
import assert from "node:assert/strict";
import { CACHE_STOP_POLLS_MS } from "../../src/app/kernel.ts";
import { processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { readScriptedLog, scriptedProvider } from "../scenarios/process_helpers.ts";

/** The provider's timeout_ms: the hung read would fail only then. */
const READ_TIMEOUT_MS = 20_000;
/** runtime.shutdown_timeout_ms: far less than the read's timeout. */
const SHUTDOWN_MS = 4000;

Deno.test("Kernel.stop with a provider's poll hung stops the providers after CACHE_STOP_POLLS_MS, not at the read's timeout_ms", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-stop-hung-read-" });
  const log = `${dir}/provider.log`;
  const { log: logger, lines } = capturingLogger({ level: "warn" });
  const rt = await startRuntime(
    testConfig({
      // The first read (the priming poll) is answered; the poll loop's first one never is.
      providers: [
        scriptedProvider("p0", ["--log", log, "--hang-after-reads", "1", "--safe-state-ms", "10"], {
          timeoutMs: READ_TIMEOUT_MS,
        }),
      ],
      runtime: { shutdownTimeoutMs: SHUTDOWN_MS },
    }),
    { host: { log: logger } },
  );
  const pid = rt.registry.host("p0")!.session!.pid;
  let stopping: Promise<void> | null = null;
  try {
    await waitFor("the poll hung", () => readScriptedLog(log).hangs.includes("read_signals"));
    const t0 = performance.now();
    stopping = rt.stop();
    await stopping;
    const tookMs = performance.now() - t0;
    assert.ok(
      tookMs < SHUTDOWN_MS,
      `the stop took ${Math.round(tookMs)} ms, past runtime.shutdown_timeout_ms ${SHUTDOWN_MS}:\n${
        lines.join("\n")
      }`,
    );
    assert.equal(processAlive(pid), false, "the provider is gone when the stop ends");
    // Its stop began with the stdin's close: the SDK sees it also with the read still hung and
    // applies the safe state EOF_REQUESTS_WAIT_MS later, not at the SIGTERM 60 % of the budget on.
    assert.deepEqual(
      readScriptedLog(log).safe,
      ["stdin_eof"],
      `the provider applied its safe state at its stdin's close:\n${lines.join("\n")}`,
    );
    assert.equal(
      lines.filter((l) => /sending SIG/.test(l)).length,
      0,
      `no signal was needed:\n${lines.join("\n")}`,
    );
    const warns = lines.filter((l) => /stop: state cache: .*CACHE_STOP_POLLS_MS/.test(l));
    assert.equal(warns.length, 1, `one WARN of the poll cut:\n${lines.join("\n")}`);
    assert.match(warns[0]!, /"p0"/, "it names the provider whose poll hung");
    assert.match(warns[0]!, new RegExp(`CACHE_STOP_POLLS_MS ${CACHE_STOP_POLLS_MS}\\b`));
  } finally {
    await (stopping ?? rt.stop());
    if (processAlive(pid)) Deno.kill(pid, "SIGKILL");
    await Deno.remove(dir, { recursive: true });
  }
});
