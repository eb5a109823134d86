/**
 * runService (src/app/process.ts) stops the kernel after a failed start-up, whatever its logger
 * does: a logger that throws on the "start-up failed" line must not leave the half-started
 * runtime (its provider processes, its audit journal) unstopped. The process logger swallows its
 * own write failures, so only a logger that breaks that contract throws; this one throws on the
 * e-stop plan line (which fails the start: kernel_start_plan_log_fails_test.ts) and on the
 * "start-up failed" line. Real: the service over the simulated provider as a child process.
 */
import assert from "node:assert/strict";
import { runService } from "../../src/app/process.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { isolated } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("runService stops the kernel after a failed start-up when the 'start-up failed' log line throws", async () => {
  const lines: string[] = [];
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => 0,
    write: (line) => {
      lines.push(line);
      if (line.includes("e-stop plan (start-up)")) throw new Error("log sink failed");
      if (line.includes("start-up failed")) throw new Error("log sink failed again");
    },
  });
  const config = isolated(testConfig({ http: { enabled: false } }));
  await assert.rejects(runService(config, log), /^Error: log sink failed again$/);
  assert.ok(lines.some((l) => l.includes("start-up failed: log sink failed")), lines.join("\n"));
  assert.ok(
    lines.some((l) => l.includes("runtime stopped")),
    `kernel stopped:\n${lines.join("\n")}`,
  );
  assert.ok(
    !lines.some((l) => l.includes("still running at exit")),
    `no provider left for the exit's kill:\n${lines.join("\n")}`,
  );
});
