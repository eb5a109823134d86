/**
 * spawnProcess (src/host/spawn.ts) with real child processes: the provider's own process group,
 * signals to the whole group, leftovers killed when the provider exits, and a scrubbed environment
 * (in a process of its own: _spawn_secrets_program.ts).
 */
import assert from "node:assert/strict";
import { killProviderProcesses, spawnProcess } from "../../src/host/mod.ts";
import type { ProviderProcess } from "../../src/common/mod.ts";
import { processAlive, waitFor } from "../helpers/kernel.ts";

const SECRETS_PROGRAM = new URL("./_spawn_secrets_program.ts", import.meta.url).pathname;

/** Process group id of `pid` (from /proc). */
function pgidOf(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
}

/** Runs `script` under sh via spawnProcess. */
function sh(script: string): ProviderProcess {
  return spawnProcess({ command: "sh", args: ["-c", script], cwd: Deno.cwd() });
}

/** The first line the process writes to stdout (the rest is drained in the background). */
async function firstLine(p: ProviderProcess): Promise<string> {
  const reader = p.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) break;
    text += value;
  }
  reader.releaseLock();
  return (text.split("\n")[0])!;
}

/** Closes what the test did not read and waits for the exit. */
async function finish(p: ProviderProcess): Promise<void> {
  p.kill("SIGKILL");
  await p.exited;
  await p.stdin.close().catch(() => {});
  await p.stdout.cancel().catch(() => {});
  await p.stderr.cancel().catch(() => {});
}

Deno.test("spawnProcess starts the provider as the leader of its own process group", async () => {
  const p = sh("echo ready; exec sleep 1000");
  try {
    assert.equal(await firstLine(p), "ready");
    assert.equal(pgidOf(p.pid), p.pid);
    assert.notEqual(pgidOf(p.pid), pgidOf(Deno.pid));
  } finally {
    await finish(p);
  }
});

Deno.test("ProviderProcess.kill signals the whole process group, helpers included", async () => {
  // The shell ignores SIGTERM; its helper does not: only a group signal reaches the helper.
  const p = sh("sleep 1000 & trap '' TERM; echo $!; while :; do sleep 1; done");
  try {
    const helper = Number(await firstLine(p));
    assert.equal(pgidOf(helper), p.pid);
    p.kill("SIGTERM");
    await waitFor("helper ended by the group SIGTERM", () => !processAlive(helper), 2000);
    assert.ok(processAlive(p.pid), "the provider chose to ignore SIGTERM");
    p.kill("SIGKILL");
    assert.equal((await p.exited).signal, "SIGKILL");
  } finally {
    await finish(p);
  }
});

Deno.test("what a provider leaves in its process group is killed when the provider exits", async () => {
  const p = sh("trap '' TERM; sleep 1000 </dev/null >/dev/null 2>&1 & echo $!");
  try {
    const helper = Number(await firstLine(p));
    assert.equal((await p.exited).code, 0);
    await waitFor("leftover helper killed", () => !processAlive(helper), 2000);
  } finally {
    await finish(p);
  }
});

Deno.test("killProviderProcesses SIGKILLs every provider group still running and waits for them", async () => {
  const a = sh("trap '' TERM; echo ready; while :; do sleep 1; done");
  const b = sh("echo ready; exec sleep 1000");
  try {
    await firstLine(a);
    await firstLine(b);
    assert.deepEqual(await killProviderProcesses(2000), { killed: 2, killedBefore: 0 });
    assert.equal((await a.exited).signal, "SIGKILL");
    assert.equal((await b.exited).signal, "SIGKILL");
    assert.deepEqual(
      await killProviderProcesses(2000),
      { killed: 0, killedBefore: 0 },
      "none left",
    );
  } finally {
    await finish(a);
    await finish(b);
  }
});

Deno.test("killProviderProcesses counts only the groups it kills: one sent SIGKILL before and not reaped yet is counted apart, as killed before", async () => {
  const a = sh("echo ready; exec sleep 1000");
  const b = sh("echo ready; exec sleep 1000");
  try {
    await firstLine(a);
    await firstLine(b);
    // A provider's stop (or a second stop signal) sent `a` SIGKILL; it is not reaped yet.
    a.kill("SIGKILL");
    assert.deepEqual(
      await killProviderProcesses(2000),
      { killed: 1, killedBefore: 1 },
      "only `b` was still running unkilled; `a` was killed before, not reaped yet",
    );
    assert.equal((await a.exited).signal, "SIGKILL");
    assert.equal((await b.exited).signal, "SIGKILL");
  } finally {
    await finish(a);
    await finish(b);
  }
});

/**
 * Runs tests/providers/_spawn_secrets_program.ts's case `which` in a process of its own with
 * `env` added to its environment (never set in this process: the shards share it).
 */
async function secretsCase(which: string, env: Record<string, string>): Promise<void> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--no-check", SECRETS_PROGRAM, which],
    env,
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stdout = new TextDecoder().decode(out.stdout);
  const text = stdout + new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, text);
  assert.equal(stdout.trim(), "ok", text);
}

Deno.test("spawnProcess keeps the runtime's secrets out of the provider's environment", async () => {
  await secretsCase("builtin", {
    RUNTIME_API_TOKEN: "api-secret-4711",
    INFLUXDB_TOKEN: "influx-secret-0815",
    PROBE_MARKER: "m1",
  });
});

Deno.test("spawnProcess keeps a variable read through secretFromEnvironment (a token_env) out of the provider's environment", async () => {
  await secretsCase("named", { RUNTIME_TEST_TOKEN_ENV_PROBE: "named-secret-0042" });
});
