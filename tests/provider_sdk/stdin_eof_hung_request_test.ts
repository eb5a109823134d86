/**
 * A provider on the SDK whose handler hangs still sees stdin's close (the runtime's stop signal)
 * and applies its safe state then, once, and exits 0: before, it served one request at a time and
 * read stdin only after the hung handler, so it went safe only at the SIGTERM that comes 60 % of
 * the stop budget later, or never if SIGKILL came first. Real: the scripted provider (SDK) as a
 * child process, stopped by the runtime's ProviderSession, whose clock never moves here: no
 * SIGTERM is ever sent.
 */
import assert from "node:assert/strict";
import { spawnProcess } from "../../src/host/mod.ts";
import { ProviderSession } from "../../src/providers/mod.ts";
import { EOF_REQUESTS_WAIT_MS } from "../../src/provider_sdk/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import { readScriptedLog, scriptedProvider } from "../scenarios/process_helpers.ts";

/** How long the test waits for the provider to exit once its stdin is closed (real time). */
const EXIT_WAIT_MS = 5000;

Deno.test("runStdioProvider applies the safe state at stdin EOF while a handler hangs, once, and exits 0 without SIGTERM", async () => {
  const dir = await Deno.makeTempDir({ prefix: "sdk-eof-hung-" });
  const log = `${dir}/provider.log`;
  const clock = new ManualClock();
  const cfg = scriptedProvider("p0", [
    "--log",
    log,
    "--hang-after-reads",
    "1",
    "--safe-state-ms",
    "10",
  ]);
  const lines: string[] = [];
  const s = new ProviderSession(cfg, cfg.command, {
    spawn: spawnProcess,
    log: capturingLogger({ level: "info", now: () => 0, lines }).log,
    clock,
    cwd: Deno.cwd(),
  });
  try {
    await s.handshake();
    await s.request("read_signals", { device_id: "probe0" }); // answered
    s.send("read_signals", { device_id: "probe0" }, 60_000, () => {}); // never answered
    await waitFor("the read hung", () => readScriptedLog(log).hangs.includes("read_signals"));
    // A request sent while the handler hangs: read, never served.
    s.send("get_health", {}, 60_000, () => {});
    const t0 = performance.now();
    const stopped = s.terminate(60_000); // closes stdin; SIGTERM only when `clock` moves
    const exited = await Promise.race([
      stopped.then(() => true),
      new Promise<false>((r) => setTimeout(() => r(false), EXIT_WAIT_MS)),
    ]);
    const tookMs = Math.round(performance.now() - t0);
    assert.ok(
      exited,
      `the provider did not exit within ${EXIT_WAIT_MS} ms of its stdin's close; its log: ${
        JSON.stringify(readScriptedLog(log))
      }`,
    );
    assert.equal(s.exitCode, 0, "exit code 0 (CLEAN)");
    assert.equal(processAlive(s.pid), false);
    assert.deepEqual(readScriptedLog(log).safe, ["stdin_eof"], "its safe state, once, for the EOF");
    assert.ok(
      tookMs >= EOF_REQUESTS_WAIT_MS,
      `it waited EOF_REQUESTS_WAIT_MS (${EOF_REQUESTS_WAIT_MS} ms) for the request in hand: ${tookMs} ms`,
    );
    assert.deepEqual(lines.filter((l) => /sending SIG/.test(l)), [], "no signal was needed");
  } finally {
    s.kill();
    await Deno.remove(dir, { recursive: true });
  }
});
