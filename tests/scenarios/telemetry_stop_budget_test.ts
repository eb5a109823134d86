/**
 * Telemetry's last flush at a stop takes what is left of the stop's budget: with a provider that
 * needs SIGKILL (its stop takes 90 % of runtime.shutdown_timeout_ms), a database that accepts the
 * connection and never answers, and the HTTP API off (no HTTP_SHUTDOWN_MAX_MS in the budget), the
 * runtime still ends within its shutdown budget (exit 0, not 4), and the rows it could not write
 * are said in one WARN line with their count. The runtime and the provider are real child
 * processes; the database is a real loopback socket.
 */
import assert from "node:assert/strict";
import {
  killLeftovers,
  providerYaml,
  readScriptedLog,
  scriptedCommand,
  spawnRuntime,
  waitFor,
  within,
} from "./process_helpers.ts";
import { hungDatabase } from "../helpers/hung_database.ts";

Deno.test("Kernel.stop gives telemetry's flush what is left of the stop's budget: a hung database after a provider that needed SIGKILL costs no exit 4, and the rows left are said in one WARN with their count", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-telemetry-stop-" });
  const log = `${dir}/provider.log`;
  const db = hungDatabase();
  const config = `${dir}/runtime.yaml`;
  // shutdown_timeout_ms 4000: the provider's stop takes 3.6 s (stdin EOF, then SIGTERM, then
  // SIGKILL); the process's budget without the API is 4000 + 1000 ms. A fixed telemetry share
  // of 2000 ms outlasted it.
  await Deno.writeTextFile(
    config,
    `runtime:
  name: proc
  data_dir: ${dir}/data
  shutdown_timeout_ms: 4000
http:
  enabled: false
providers:
${
      providerYaml(
        "stubborn",
        scriptedCommand(["--log", log, "--ignore-sigterm", "--ignore-stdin-eof"]),
      )
    }polling:
  interval_ms: 100
telemetry:
  enabled: true
  health_interval_ms: 200
  influxdb:
    url: ${db.url}
    token: test-token
    flush_interval_ms: 100
`,
  );
  const rt = spawnRuntime(config);
  try {
    const ready = await within(rt.stderrLine(/Runtime Ready/), 60_000);
    if (ready === "timeout") assert.fail("the runtime did not come up");
    // A write is under way (and never answered) before the stop: the flush has a hung request.
    await waitFor(
      "a write reached the database",
      () => /\nruntime_\w+,/.test(db.received()),
      10_000,
    );
    rt.child.kill("SIGTERM");
    const exit = await within(rt.exit, 30_000);
    if (exit === "timeout") assert.fail("the runtime did not exit");
    assert.equal(exit.code, 0, exit.stderr);
    const lines = exit.stderr.split("\n");
    const lost = lines.filter((l) => l.includes("telemetry rows could not be written"));
    assert.equal(lost.length, 1, exit.stderr);
    const m =
      /^WARN\b.*shutdown: (\d+) telemetry rows could not be written to \S+ org=\S+ bucket=\S+ and are lost$/
        .exec(
          lost[0]!,
        );
    assert.ok(m, lost[0]);
    // Every row the database was sent went unanswered: each one is counted among those lost.
    const sent = new Set(
      db.received().split("\n").filter((l) => /^runtime_\w+,/.test(l)),
    );
    assert.ok(sent.size > 0, db.received());
    assert.ok(Number(m[1]) >= sent.size, `${m[1]} lost, ${sent.size} rows sent`);
    assert.ok(lines.some((l) => /^INFO\b.*runtime stopped$/.test(l)), exit.stderr);
    assert.ok(!lines.some((l) => l.includes("shutdown exceeded")), exit.stderr);
  } finally {
    await rt.dispose();
    killLeftovers(readScriptedLog(log).pids);
    await db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
