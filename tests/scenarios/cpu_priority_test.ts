/**
 * The runtime's session ahead of its providers' while they start, restart or are down
 * (src/app/session_priority.ts, src/host/priority.ts), with the real /proc: a runtime that leads
 * its session (as systemd starts it) runs at autogroup nice -10 while its provider starts, at 0
 * once it is up, at -10 again while it restarts after a crash, and says so in one line at start;
 * one started from another process's session (a shell's, this test's) leaves that session alone
 * and says why. Its providers keep nice 0 (their own sessions).
 */
import assert from "node:assert/strict";
import { childPids } from "../helpers/runtime_process.ts";
import { withInertRuntime } from "../helpers/start_stop.ts";

/** /proc/<pid>/autogroup ("/autogroup-N nice K"), or null without autogroups. */
function autogroupOf(pid: number): string | null {
  try {
    return Deno.readTextFileSync(`/proc/${pid}/autogroup`).trim();
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
}

const noAutogroups = autogroupOf(Deno.pid) === null;
if (noAutogroups) {
  console.warn(
    "\n!!!!!!!! /proc/self/autogroup is missing (a kernel without autogroups): the runtime's " +
      "cpu priority tests are SKIPPED !!!!!!!!\n",
  );
}

/** Polls `ok` every 20 ms, at most `tries` times; asserts it with `what`. */
async function until(ok: () => boolean, what: string, tries = 500): Promise<void> {
  for (let i = 0; i < tries && !ok(); i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(ok(), what);
}

/**
 * Runs `fn` while a runtime with one inert sim (restarted after a crash) runs, once the line is
 * said (right after start-up began, when the first setting is answered); its stderr.
 */
function withRuntime(ownSession: boolean, fn: (pid: number) => Promise<void>): Promise<string> {
  return withInertRuntime({
    ownSession,
    providerYaml:
      "    restart_policy: {enabled: true, max_attempts: 3, backoff_ms: [300, 300, 300], timeout_ms: 30000}\n",
  }, async (rt) => {
    await until(() => /cpu priority: /.test(rt.stderr()), `the line: ${rt.stderr()}`);
    await fn(rt.pid);
  });
}

const priorityLines = (stderr: string) =>
  stderr.split("\n").filter((l) => l.includes("cpu priority: "));

Deno.test({
  name:
    "a runtime that leads its session (as under systemd) runs it at autogroup nice -10 while its provider starts or restarts, at 0 once it is up",
  ignore: noAutogroups,
  fn: async () => {
    const root = Deno.uid() === 0;
    const stderr = await withRuntime(true, async (pid) => {
      // Up (startRuntimeChild waited for it): back at the default weight.
      await until(() => / nice 0$/.test(autogroupOf(pid)!), `settled: ${autogroupOf(pid)}`);
      const [sim] = childPids(pid);
      assert.ok(sim !== undefined, "the sim");
      assert.match(autogroupOf(sim)!, / nice 0$/, "a provider keeps the default weight");
      assert.notEqual(autogroupOf(sim)!.split(" ")[0], autogroupOf(pid)!.split(" ")[0]);
      // The sim crashes: while it is down and restarting, the runtime's session is ahead.
      Deno.kill(sim, "SIGKILL");
      if (root) {
        await until(() => / nice -10$/.test(autogroupOf(pid)!), `raised: ${autogroupOf(pid)}`);
      }
      await until(
        () => childPids(pid).some((c) => c !== sim) && / nice 0$/.test(autogroupOf(pid)!),
        `restarted and settled: ${autogroupOf(pid)}`,
      );
    });
    const lines = priorityLines(stderr);
    assert.equal(lines.length, 1, stderr);
    if (root) {
      assert.match(
        lines[0]!,
        /^INFO {2}\S+ cpu priority: this runtime's session at autogroup nice -10 while providers start, restart or are down/,
      );
    } else {
      // Without CAP_SYS_NICE or a LimitNICE: said as a warning naming the fix, nothing changed.
      assert.match(
        lines[0]!,
        /^WARN {2}\S+ cpu priority: not raised: autogroup nice -10 needs LimitNICE=-10/,
      );
    }
  },
});

Deno.test({
  name:
    "a runtime started in another process's session leaves that session's priority alone and says why",
  ignore: noAutogroups,
  fn: async () => {
    const before = autogroupOf(Deno.pid);
    const stderr = await withRuntime(false, () => Promise.resolve());
    assert.equal(autogroupOf(Deno.pid), before);
    const lines = priorityLines(stderr);
    assert.equal(lines.length, 1, stderr);
    assert.match(
      lines[0]!,
      /^INFO {2}\S+ cpu priority: not raised: this runtime does not lead its own session \(started from a shell\); under the systemd unit it does/,
    );
  },
});
