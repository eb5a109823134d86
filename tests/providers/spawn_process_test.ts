/**
 * spawnProcess (src/host/spawn.ts) with real child processes: the provider's own process group,
 * signals to the whole group, leftovers killed when the provider exits, and a scrubbed environment.
 */
import assert from "node:assert/strict";
import {
  killProviderProcesses,
  SECRET_ENV_VARS,
  secretFromEnvironment,
  spawnProcess,
} from "../../src/host/mod.ts";
import type { ProviderProcess } from "../../src/common/mod.ts";
import { processAlive, waitFor } from "../helpers/kernel.ts";

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

Deno.test("spawnProcess keeps the runtime's secrets out of the provider's environment", async () => {
  const saved = SECRET_ENV_VARS.map((n) => [n, Deno.env.get(n)] as const);
  Deno.env.set("RUNTIME_API_TOKEN", "api-secret-4711");
  Deno.env.set("INFLUXDB_TOKEN", "influx-secret-0815");
  Deno.env.set("PROBE_MARKER", "m1");
  const p = sh("env | cut -d= -f1 | sort | tr '\\n' ' '; echo");
  try {
    const names = (await firstLine(p)).split(" ");
    assert.ok(names.includes("PROBE_MARKER"), "the rest of the environment passes through");
    assert.ok(!names.includes("RUNTIME_API_TOKEN"));
    assert.ok(!names.includes("INFLUXDB_TOKEN"));
    assert.equal(secretFromEnvironment("RUNTIME_API_TOKEN"), "api-secret-4711");
    assert.equal(secretFromEnvironment("INFLUXDB_TOKEN"), "influx-secret-0815");
  } finally {
    await finish(p);
    Deno.env.delete("PROBE_MARKER");
    for (const [n, v] of saved) v === undefined ? Deno.env.delete(n) : Deno.env.set(n, v);
  }
});

Deno.test("spawnProcess keeps a variable read through secretFromEnvironment (a token_env) out of the provider's environment", async () => {
  const name = "RUNTIME_TEST_TOKEN_ENV_PROBE";
  Deno.env.set(name, "named-secret-0042");
  let p: ReturnType<typeof sh> | null = null;
  try {
    assert.equal(secretFromEnvironment(name), "named-secret-0042");
    assert.equal(Deno.env.get(name), undefined, "taken out of the runtime's environment");
    Deno.env.set(name, "set-again-later"); // taken out again before the next spawn
    p = sh("env | cut -d= -f1 | sort | tr '\\n' ' '; echo");
    const names = (await firstLine(p)).split(" ");
    assert.ok(names.includes("PATH"), "the rest of the environment passes through");
    assert.ok(!names.includes(name));
  } finally {
    if (p !== null) await finish(p);
    Deno.env.delete(name);
  }
});
