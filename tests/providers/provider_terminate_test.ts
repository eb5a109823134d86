/**
 * ProviderSession.terminate: stdin closed first (the ADPP stop signal), SIGTERM for a provider
 * that ignores it, SIGKILL for one that also ignores SIGTERM; it resolves only once the process
 * is gone, within its budget (scripted provider, a real child process).
 */
import assert from "node:assert/strict";
import { spawnProcess } from "../../src/host/mod.ts";
import { ProviderSession } from "../../src/providers/mod.ts";
import { processAlive, testLogger } from "../helpers/kernel.ts";
import { scriptedProvider } from "../scenarios/process_helpers.ts";

/** A started session of the scripted provider with `flags`, handshake done. */
async function session(flags: string[]): Promise<ProviderSession> {
  const cfg = scriptedProvider("p0", flags);
  const s = new ProviderSession(cfg, cfg.command, {
    spawn: spawnProcess,
    log: testLogger(),
    monoMs: () => performance.now(),
    cwd: Deno.cwd(),
  });
  await s.handshake();
  return s;
}

const CASES = [
  { flags: [], exitCode: 0, how: "exits when its stdin closes" },
  { flags: ["--ignore-stdin-eof"], exitCode: 128 + 15, how: "ignores stdin closing: SIGTERM" },
  {
    flags: ["--ignore-stdin-eof", "--ignore-sigterm"],
    exitCode: 128 + 9,
    how: "ignores stdin closing and SIGTERM: SIGKILL",
  },
];

for (const c of CASES) {
  Deno.test(`ProviderSession.terminate: a provider that ${c.how}`, async () => {
    const s = await session(c.flags);
    const pid = s.pid;
    try {
      const started = performance.now();
      // Two callers: both resolve once the process is gone.
      await Promise.all([s.terminate(1500), s.terminate(1500)]);
      const took = performance.now() - started;
      assert.equal(processAlive(pid), false);
      assert.equal(s.exitCode, c.exitCode);
      // Within the budget (generously: timers under load), and the escalation waited its turn.
      assert.ok(took < 1500 + 2000, `took ${took} ms`);
      if (c.exitCode !== 0) assert.ok(took >= 0.6 * 1500 - 50, `SIGTERM after ${took} ms`);
      if (c.exitCode === 128 + 9) assert.ok(took >= 0.9 * 1500 - 50, `SIGKILL after ${took} ms`);
      // Once gone, terminating again returns at once.
      await s.terminate(1500);
    } finally {
      s.kill();
    }
  });
}
