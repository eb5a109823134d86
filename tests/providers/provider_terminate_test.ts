/**
 * ProviderSession.terminate: stdin closed first (the ADPP stop signal), SIGTERM for a provider
 * that ignores it, SIGKILL for one that also ignores SIGTERM; it resolves only once the process
 * is gone, within its budget (scripted provider, a real child process).
 */
import assert from "node:assert/strict";
import { spawnProcess } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ProviderSession } from "../../src/providers/mod.ts";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import { ManualClock } from "../helpers/clock.ts";
import { scriptedProvider } from "../scenarios/process_helpers.ts";

/**
 * A started session of the scripted provider with `flags`, handshake done; its log lines. Its
 * waits run on `clock`, which moves only when the test moves it.
 */
async function session(
  flags: string[],
): Promise<{ s: ProviderSession; lines: string[]; clock: ManualClock }> {
  const clock = new ManualClock();
  const cfg = scriptedProvider("p0", flags);
  const lines: string[] = [];
  const s = new ProviderSession(cfg, cfg.command, {
    spawn: spawnProcess,
    log: capturingLogger({ level: "warn", now: () => 0, lines }).log,
    clock,
    cwd: Deno.cwd(),
  });
  await s.handshake();
  return { s, lines, clock };
}

const CASES = [
  { flags: [], exitCode: 0, signals: [], waits: [], how: "exits when its stdin closes" },
  {
    flags: ["--ignore-stdin-eof"],
    exitCode: 128 + 15,
    signals: ["SIGTERM"],
    // 0.6 of the budget after stdin closed.
    waits: [900],
    how: "ignores stdin closing: SIGTERM",
  },
  {
    flags: ["--ignore-stdin-eof", "--ignore-sigterm"],
    exitCode: 128 + 9,
    signals: ["SIGTERM", "SIGKILL"],
    // Then 0.3 of the budget after SIGTERM.
    waits: [900, 450],
    how: "ignores stdin closing and SIGTERM: SIGKILL",
  },
];

for (const c of CASES) {
  Deno.test(`ProviderSession.terminate: a provider that ${c.how}`, async () => {
    const { s, lines, clock } = await session(c.flags);
    const pid = s.pid;
    const sent = () =>
      lines.map((l) => /sending (SIG\w+)/.exec(l)?.[1]).filter((x) => x !== undefined);
    try {
      // Two callers: both resolve once the process is gone.
      const both = Promise.all([s.terminate(1500), s.terminate(1500)]);
      // Each step waits its share of the budget on the clock; the next signal is sent only when
      // that time is up (not a millisecond before) and the process did not end meanwhile.
      for (const [i, wait] of c.waits.entries()) {
        await waitFor(
          `wait ${i + 1} armed`,
          () => clock.pendingDueTimes()[0] === clock.mono + wait,
        );
        clock.advance(wait - 1);
        assert.deepEqual(sent(), c.signals.slice(0, i));
        clock.advance(1);
        await waitFor(`${c.signals[i]} sent`, () => sent().length === i + 1);
      }
      // A provider that exits when its stdin closes is gone without the clock moving at all.
      await both;
      assert.equal(processAlive(pid), false);
      assert.equal(s.exitCode, c.exitCode);
      assert.deepEqual(sent(), c.signals);
      assert.equal(clock.pendingTimers, 0, "no wait outlives the process");
      // Once gone, terminating again returns at once.
      await s.terminate(1500);
    } finally {
      s.kill();
    }
  });
}

Deno.test("ProviderSession.terminate: a hung provider that reads nothing, with a write under way, is still signalled and ended within the budget", async () => {
  const { s, lines, clock } = await session([]);
  const pid = s.pid;
  const sent = () =>
    lines.map((l) => /sending (SIG\w+)/.exec(l)?.[1]).filter((x) => x !== undefined);
  try {
    // Hung: it reads nothing from its stdin any more, and a request larger than a pipe holds
    // (64 KiB) is being written to it (a call with a large argument): the write cannot end.
    Deno.kill(pid, "SIGSTOP");
    s.send(
      "hello",
      {
        protocol_version: "v0",
        client_name: "x".repeat(300_000),
        client_version: "0",
      },
      60_000,
      () => {},
    );
    await new Promise((r) => setTimeout(r, 50)); // the write is under way
    const done = s.terminate(1500);
    // Closing stdin waits for that write: the escalation must not wait for it.
    await waitFor(
      "SIGTERM armed 900 ms after stdin was closed",
      () => clock.pendingDueTimes()[0] === clock.mono + 900,
    );
    clock.advance(900);
    await waitFor(
      "SIGKILL armed 450 ms after SIGTERM",
      () => clock.pendingDueTimes()[0] === clock.mono + 450,
    );
    clock.advance(450);
    await done;
    assert.equal(processAlive(pid), false);
    assert.deepEqual(sent(), ["SIGTERM", "SIGKILL"]);
    assert.equal(s.exitCode, 128 + 9);
  } finally {
    s.kill();
  }
});
