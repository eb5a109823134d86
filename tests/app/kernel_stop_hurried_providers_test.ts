/**
 * A hurried stop (a second stop signal: StopDeadline.hurried, HURRIED_SHUTDOWN_MS left) whose
 * provider was not killed by the hurry -- one started after the process's kill of the providers
 * then alive (app/process.ts shutDown): a start-up spawn still queued then, since none is
 * restarted once the stop has begun; here one that ignores stdin's close and SIGTERM --
 * ends the provider within what the deadline leaves, not within runtime.shutdown_timeout_ms: the
 * providers' stop took 90 % of that (stdin closed, then SIGTERM, then SIGKILL) whatever the
 * deadline said, and the process gave up on the stop (exit 4) before the journals closed. Real:
 * the kernel with the scripted provider as a child process.
 */
import assert from "node:assert/strict";
import { HURRIED_SHUTDOWN_MS } from "../../src/app/process.ts";
import { processAlive, startRuntime } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { scriptedProvider, within } from "../scenarios/process_helpers.ts";

Deno.test("Kernel.stop hurried by a second stop signal ends a provider that ignores stdin's close and SIGTERM within the hurried deadline, not runtime.shutdown_timeout_ms", async () => {
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
      lines.some((l) => /provider ignored SIGTERM; sending SIGKILL/.test(l)),
      `it was killed, its stdin's close and SIGTERM ignored:\n${lines.join("\n")}`,
    );
  } finally {
    await stopping;
  }
});
