/**
 * ProviderSession.terminate: stdin closed first (the ADPP stop signal), SIGTERM for a provider
 * that ignores it, SIGKILL for one that also ignores SIGTERM; it resolves only once the process
 * is gone, within its budget (scripted provider, a real child process).
 */
import assert from "node:assert/strict";
import { LineLogger, spawnProcess } from "../../src/host/mod.ts";
import { ProviderSession } from "../../src/providers/mod.ts";
import { processAlive } from "../helpers/kernel.ts";
import { scriptedProvider } from "../scenarios/process_helpers.ts";

/** A started session of the scripted provider with `flags`, handshake done; its log lines. */
async function session(flags: string[]): Promise<{ s: ProviderSession; lines: string[] }> {
  const cfg = scriptedProvider("p0", flags);
  const lines: string[] = [];
  const s = new ProviderSession(cfg, cfg.command, {
    spawn: spawnProcess,
    log: new LineLogger({
      level: "warn",
      journald: false,
      now: () => 0,
      write: (l) => lines.push(l),
    }),
    monoMs: () => performance.now(),
    cwd: Deno.cwd(),
  });
  await s.handshake();
  return { s, lines };
}

const CASES = [
  { flags: [], exitCode: 0, signals: [], how: "exits when its stdin closes" },
  {
    flags: ["--ignore-stdin-eof"],
    exitCode: 128 + 15,
    signals: ["SIGTERM"],
    how: "ignores stdin closing: SIGTERM",
  },
  {
    flags: ["--ignore-stdin-eof", "--ignore-sigterm"],
    exitCode: 128 + 9,
    signals: ["SIGTERM", "SIGKILL"],
    how: "ignores stdin closing and SIGTERM: SIGKILL",
  },
];

for (const c of CASES) {
  Deno.test(`ProviderSession.terminate: a provider that ${c.how}`, async () => {
    const { s, lines } = await session(c.flags);
    const pid = s.pid;
    try {
      const started = performance.now();
      // Two callers: both resolve once the process is gone.
      await Promise.all([s.terminate(1500), s.terminate(1500)]);
      const took = performance.now() - started;
      assert.equal(processAlive(pid), false);
      assert.equal(s.exitCode, c.exitCode);
      // Within the budget (generously: timers under load), and the escalation waited its turn.
      assert.ok(took < 1500 + 1000, `took ${took} ms`);
      // Each signal is sent only when the step before it did not end the process.
      assert.deepEqual(
        lines.map((l) => /sending (SIG\w+)/.exec(l)?.[1]).filter((x) => x !== undefined),
        c.signals,
      );
      if (c.exitCode !== 0) assert.ok(took >= 0.6 * 1500 - 50, `SIGTERM after ${took} ms`);
      if (c.exitCode === 128 + 9) assert.ok(took >= 0.9 * 1500 - 50, `SIGKILL after ${took} ms`);
      // Once gone, terminating again returns at once.
      await s.terminate(1500);
    } finally {
      s.kill();
    }
  });
}
