/**
 * A provider that keeps crashing and being restarted, over months of a runtime that is never
 * restarted: each restart must leave the runtime holding the pipes of the new process only. The
 * `runtime` command runs as a real child process over a real simulated provider, which the test
 * kills with SIGKILL; the runtime's open pipes are counted in /proc/<pid>/fd.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import {
  childPids,
  type RuntimeChild,
  startRuntimeWithConfigOnFreePort,
} from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";

/** How long a test waits for a restart. */
const WAIT_MS = 60000;
/** Crash and restart cycles. */
const CYCLES = 4;

/** The pid of the runtime's one child process (its provider), or undefined while there is none. */
function providerPid(rt: RuntimeChild): number | undefined {
  return childPids(rt.pid)[0];
}

/** How many pipes the runtime process holds open. */
function openPipes(rt: RuntimeChild): number {
  let n = 0;
  for (const fd of Deno.readDirSync(`/proc/${rt.pid}/fd`)) {
    try {
      if (Deno.readLinkSync(`/proc/${rt.pid}/fd/${fd.name}`).startsWith("pipe:")) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

/**
 * Whether the provider runs again with its restart streak over (`RUNNING`, not `RECOVERING`): the
 * streak ends at its first answered poll (dc633aa), and a crash before that counts against
 * max_attempts 1 -- the circuit would open and no new process come.
 */
async function providerRunning(rt: RuntimeChild): Promise<boolean> {
  const r = await apiFetch(`${rt.base}/v0/providers/health`);
  const body = await r.json() as { providers: { lifecycle_state: string }[] };
  return body.providers.every((p) => p.lifecycle_state === "RUNNING");
}

Deno.test("a crashed provider's pipes are closed: restarts leave the runtime with the pipes of the running process only", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-crash-pipes-" });
  const rt = await startRuntimeWithConfigOnFreePort(
    `${dir}/runtime.yaml`,
    (port) =>
      `runtime: {data_dir: ${dir}/data, shutdown_timeout_ms: 2000}\n` +
      `http: {port: ${port}}\npolling: {interval_ms: 200}\nproviders:\n` +
      `  - {id: sim0, command: ${Deno.execPath()}, args: [run, --quiet, --allow-read, ` +
      `--allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}], restart_policy: ` +
      `{enabled: true, max_attempts: 1, backoff_ms: [50], timeout_ms: 30000, success_reset_ms: 0}}\n`,
  );
  try {
    const before = openPipes(rt);
    for (let i = 0; i < CYCLES; i++) {
      const pid = await waitFor("the provider's process", () => providerPid(rt), WAIT_MS);
      Deno.kill(pid, "SIGKILL");
      await waitFor("its new process", () => {
        const next = providerPid(rt);
        return next !== undefined && next !== pid;
      }, WAIT_MS);
      await waitFor("the provider running again", () => providerRunning(rt), WAIT_MS);
    }
    // The old processes' stdout and stderr are closed once read to their end: given a moment.
    await waitFor("the pipes back to their count", () => openPipes(rt) <= before, 2000)
      .catch(() => {});
    assert.equal(
      openPipes(rt),
      before,
      `${CYCLES} crashes and restarts: the runtime holds ${openPipes(rt)} pipes, ${before} before`,
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
