/**
 * spawnProcess (src/host/spawn.ts) with real child processes: the provider's own process group,
 * signals to the whole group, leftovers killed when the provider exits, a scrubbed environment,
 * and the provider's session behind the runtime's in the CPU (its autogroup nice).
 */
import assert from "node:assert/strict";
import {
  AUTOGROUP_MAX_TRIES,
  AUTOGROUP_RETRY_MS,
  type AutogroupWriter,
  killProviderProcesses,
  lowerSessionPriority,
  PROVIDER_AUTOGROUP_NICE,
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

/** This kernel's autogroup of `pid` (`/autogroup-N nice K`), or null where there are none. */
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
    "\n!!!!!!!! /proc/self/autogroup is missing (a kernel without autogroups): the provider " +
      "session priority test is SKIPPED !!!!!!!!\n",
  );
}

Deno.test({
  name:
    "spawnProcess puts the provider's session behind the runtime's: its autogroup nice is PROVIDER_AUTOGROUP_NICE",
  ignore: noAutogroups,
}, async () => {
  const own = autogroupOf(Deno.pid)!;
  assert.equal(PROVIDER_AUTOGROUP_NICE, 10);
  const p = sh("echo ready; exec sleep 1000");
  try {
    assert.equal(await firstLine(p), "ready");
    const group = autogroupOf(p.pid)!;
    assert.match(group, / nice 10$/);
    assert.notEqual(group.split(" ")[0], own.split(" ")[0], "a session of its own");
    assert.equal(autogroupOf(Deno.pid), own, "the runtime's own is untouched");
  } finally {
    await finish(p);
  }
});

Deno.test("lowerSessionPriority tries again after EAGAIN while the provider lives, and gives up on anything else", async () => {
  const writes: string[] = [];
  const waits: number[] = [];
  const writer = (answers: (Error | null)[]): AutogroupWriter => ({
    // pid 42 leads session 42; comm with a space and a parenthesis, as /proc may show it.
    read: () => "42 (a provider) x) S 1 42 42 0 -1",
    write: (path, text) => {
      writes.push(`${path} ${text}`);
      const answer = answers.shift() ?? null;
      if (answer !== null) throw answer;
    },
    later: (fn, ms) => {
      waits.push(ms);
      queueMicrotask(fn);
    },
  });
  const busy = () => new Deno.errors.WouldBlock("Resource temporarily unavailable (os error 11)");
  // EAGAIN twice (an unprivileged writer within the kernel's 100 ms), then set.
  assert.equal(await lowerSessionPriority(42, () => true, writer([busy(), busy(), null])), true);
  assert.deepEqual(writes, Array(3).fill("/proc/42/autogroup 10"));
  assert.deepEqual(waits, [AUTOGROUP_RETRY_MS, AUTOGROUP_RETRY_MS]);
  assert.equal(AUTOGROUP_RETRY_MS, 110);
  // No autogroups (or not Linux): left as it is, no retry.
  writes.length = waits.length = 0;
  const none = new Deno.errors.NotFound("No such file or directory (os error 2)");
  assert.equal(await lowerSessionPriority(42, () => true, writer([none])), false);
  assert.deepEqual([writes.length, waits.length], [1, 0]);
  // A process in another session (a spawn without setsid: the runtime's own): never written.
  writes.length = waits.length = 0;
  const inOurs = { ...writer([]), read: () => "42 (provider) S 1 42 7 0 -1" };
  assert.equal(await lowerSessionPriority(42, () => true, inOurs), false);
  assert.equal(writes.length, 0);
  // The provider ended while waiting: its pid may be someone else's by now, nothing is written.
  writes.length = waits.length = 0;
  let alive = true;
  const ended = writer([busy()]);
  const done = lowerSessionPriority(42, () => alive, {
    read: ended.read,
    write: ended.write,
    later: (fn, ms) => {
      alive = false;
      ended.later(fn, ms);
    },
  });
  assert.equal(await done, false);
  assert.equal(writes.length, 1);
  // Always busy: AUTOGROUP_MAX_TRIES writes, then it gives up.
  writes.length = waits.length = 0;
  const always = writer(Array.from({ length: 100 }, busy));
  assert.equal(await lowerSessionPriority(42, () => true, always), false);
  assert.equal(writes.length, AUTOGROUP_MAX_TRIES);
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
    assert.equal(await killProviderProcesses(2000), 2);
    assert.equal((await a.exited).signal, "SIGKILL");
    assert.equal((await b.exited).signal, "SIGKILL");
    assert.equal(await killProviderProcesses(2000), 0, "none left");
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
