/**
 * A hurried stop (a second stop signal: StopDeadline.hurried, HURRIED_SHUTDOWN_MS left) whose
 * provider was not killed by the hurry -- one started after the process's kill of the providers
 * then alive (app/process.ts shutDown): a start-up spawn still queued then, since none is
 * restarted once the stop has begun; here one that ignores stdin's close and SIGTERM -- kills the
 * provider at once (ProviderRegistry.stopAll), as the process did the others: the providers'
 * stop took 90 % of runtime.shutdown_timeout_ms (stdin closed, then SIGTERM, then SIGKILL)
 * whatever the deadline said, and the process gave up on the stop (exit 4) before the journals
 * closed. So does a second stop signal that comes while the providers' stop is under way: before,
 * the kernel went on waiting that stop's budget (the process's own kill covered the providers it
 * reached, not one it did not). Real: the kernel with the scripted provider as a child process.
 */
import assert from "node:assert/strict";
import { HURRIED_SHUTDOWN_MS } from "../../src/app/process.ts";
import { processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { readScriptedLog, scriptedProvider, within } from "../scenarios/process_helpers.ts";

/** The WARN of a provider killed because a second stop signal hurried the stop. */
const HURRY_KILL = /the runtime's stop was hurried by a second stop signal: sending SIGKILL/;

Deno.test("Kernel.stop hurried by a second stop signal kills a provider that ignores stdin's close and SIGTERM at once, not at runtime.shutdown_timeout_ms", async () => {
  const { log, lines } = capturingLogger({ level: "warn" });
  const rt = await startRuntime(
    testConfig({
      providers: [scriptedProvider("p0", ["--ignore-stdin-eof", "--ignore-sigterm"])],
      runtime: { shutdownTimeoutMs: 10_000 },
    }),
    { host: { log } },
  );
  const pid = rt.registry.host("p0")!.session!.pid;
  // Hurried from the start: the process's deadline is HURRIED_SHUTDOWN_MS away, and this
  // provider is one its kill at the second signal did not reach.
  const endsAt = performance.now() + HURRIED_SHUTDOWN_MS;
  const stopping = rt.stop({
    leftMs: () => endsAt - performance.now(),
    hurried: Promise.resolve(),
  });
  try {
    const outcome = await within(stopping, HURRIED_SHUTDOWN_MS);
    assert.notEqual(
      outcome,
      "timeout",
      `the providers' stop outlasted the hurried deadline:\n${lines.join("\n")}`,
    );
    assert.equal(processAlive(pid), false, "the provider is gone when the stop ends");
    assert.ok(
      lines.some((l) => HURRY_KILL.test(l)),
      `it was killed at once, as the hurry asked:\n${lines.join("\n")}`,
    );
  } finally {
    await stopping;
  }
});

Deno.test("a second stop signal during the providers' stop kills the provider still ending at once, not when that stop's budget runs out", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-stop-hurry-" });
  const log = `${dir}/provider.log`;
  const { log: logger, lines } = capturingLogger({ level: "warn" });
  const rt = await startRuntime(
    testConfig({
      providers: [
        scriptedProvider("p0", ["--log", log, "--ignore-stdin-eof", "--ignore-sigterm"]),
      ],
      // The longest: its stdin's share alone (60 %) is 18 s, which the hurry must cut.
      runtime: { shutdownTimeoutMs: 30_000 },
    }),
    { host: { log: logger } },
  );
  const pid = rt.registry.host("p0")!.session!.pid;
  const hurry = Promise.withResolvers<void>();
  // The process's deadline far off: only the hurry may end the providers' stop early.
  const stopping = rt.stop({ leftMs: () => 120_000, hurried: hurry.promise });
  try {
    // The providers' stop is under way: it closed the provider's stdin, which it ignores.
    await waitFor("the provider's stdin closed", () => readScriptedLog(log).stdinEofs > 0, 30_000);
    hurry.resolve(); // the second stop signal (the process's own kill did not reach this one)
    await stopping;
    assert.equal(processAlive(pid), false, "the provider is gone when the stop ends");
    assert.ok(
      lines.some((l) => HURRY_KILL.test(l)),
      `it was killed at the hurry:\n${lines.join("\n")}`,
    );
    assert.ok(
      !lines.some((l) => /sending SIGTERM/.test(l)),
      `not after its stdin's share of the budget ran out:\n${lines.join("\n")}`,
    );
  } finally {
    hurry.resolve();
    await stopping;
    if (processAlive(pid)) Deno.kill(pid, "SIGKILL");
    await Deno.remove(dir, { recursive: true });
  }
});
