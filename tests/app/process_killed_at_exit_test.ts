/**
 * What runService (src/app/process.ts) says of the provider processes still running as it exits
 * (reapProvidersAtExit): one line per event. A provider the stop left running, in a shutdown that
 * otherwise ended clean, is said once, as the exit's last line (exit 4); one a provider's stop or
 * a second stop signal sent SIGKILL before, still not reaped, is said too (a WARN, not an exit 4).
 * Real: the service over the simulated provider, a stray provider group spawned through the same
 * spawnProcess, a real SIGTERM to this process; sh children for the already-killed group.
 */
import assert from "node:assert/strict";
import { EXIT_INTERNAL_ERROR, EXIT_OK } from "../../src/app/exit_codes.ts";
import { reapProvidersAtExit, runService } from "../../src/app/process.ts";
import { spawnProcess } from "../../src/host/mod.ts";
import { isolated, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { signalStand } from "../helpers/signals.ts";

Deno.test("runService says a provider process the stop left running (killed at exit) once: the exit's last line, exit 4", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  // A provider group the kernel's stop does not end (spawned through the same spawnProcess).
  const stray = spawnProcess({
    command: "sh",
    args: ["-c", "exec sleep 1000"],
    cwd: Deno.cwd(),
  });
  void stray.stdout.cancel();
  void stray.stderr.cancel();
  try {
    const config = isolated(testConfig({ http: { enabled: false } }));
    const signals = signalStand();
    const running = runService(config, log, { onSignal: signals.onSignal });
    await waitFor("runtime up", () => lines.some((l) => l.includes("runtime up")));
    signals.send("SIGTERM");
    assert.equal(await running, EXIT_INTERNAL_ERROR);
    assert.equal((await stray.exited).signal, "SIGKILL");
    const errors = lines.filter((l) => l.startsWith("ERROR"));
    assert.equal(errors.length, 1, `one ERROR line for one event:\n${errors.join("\n")}`);
    assert.match(
      lines.at(-1)!,
      /^ERROR .*shutdown failed: 1 provider process\(es\) not stopped by the stop \(killed at exit\)$/,
    );
  } finally {
    stray.kill("SIGKILL");
    await stray.exited;
  }
});

Deno.test("reapProvidersAtExit says a provider process sent SIGKILL before and still not reaped at exit (WARN), not as left running by the stop", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const p = spawnProcess({ command: "sh", args: ["-c", "exec sleep 1000"], cwd: Deno.cwd() });
  void p.stdout.cancel();
  void p.stderr.cancel();
  // A provider's stop (or a second stop signal) sent it SIGKILL; it is not reaped yet.
  p.kill("SIGKILL");
  assert.equal(await reapProvidersAtExit(EXIT_OK, log), 0, "not left running by the stop");
  assert.equal((await p.exited).signal, "SIGKILL");
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.match(
    lines[0]!,
    /^WARN .*1 provider process\(es\) sent SIGKILL before \(a provider's stop, a second stop signal\) still not reaped at exit: sent SIGKILL again/,
  );
});

Deno.test("reapProvidersAtExit says a provider process left running by a stop that did not end clean itself: the exit names no provider", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const p = spawnProcess({ command: "sh", args: ["-c", "exec sleep 1000"], cwd: Deno.cwd() });
  void p.stdout.cancel();
  void p.stderr.cancel();
  assert.equal(await reapProvidersAtExit(EXIT_INTERNAL_ERROR, log), 1);
  assert.equal((await p.exited).signal, "SIGKILL");
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.match(lines[0]!, /^ERROR .*1 provider process\(es\) still running at exit: killed$/);
});
