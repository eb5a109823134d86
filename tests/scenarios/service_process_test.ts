/**
 * The runtime as users run it: `src/main.ts --config FILE` in its own process, with the
 * simulated provider as its child. Covers start-up, serving, SIGTERM shutdown (exit 0) and that
 * providers never outlive the runtime, even when it is killed.
 */
import assert from "node:assert/strict";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { startOnFreePort } from "../helpers/ports.ts";
import { MAIN, runtimeStatus as statusOf } from "./process_helpers.ts";
import { compiledPermissions } from "../helpers/compiled_permissions.ts";

async function writeConfig(dir: string, port: number): Promise<string> {
  const path = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(
    path,
    `runtime:
  name: proc
  data_dir: ${dir}/data
  shutdown_timeout_ms: 2000
http:
  port: ${port}
providers:
  - id: sim0
    command: ${Deno.execPath()}
    args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}]
polling:
  interval_ms: 100
`,
  );
  return path;
}

function spawnRuntime(config: string, extra: string[] = []): Deno.ChildProcess {
  return new Deno.Command(Deno.execPath(), {
    args: ["run", ...compiledPermissions(), "--quiet", MAIN, "--config", config, ...extra],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

/**
 * The runtime on a free port (startOnFreePort: returns once this process listens on it), with
 * its output collected; the temporary dir is removed when it cannot start.
 */
async function startOnPort(dir: string, extra: string[] = []) {
  try {
    return await startOnFreePort(
      async (port) => {
        const child = spawnRuntime(await writeConfig(dir, port), extra);
        const stderr = new Response(child.stderr).text();
        const stdout = new Response(child.stdout).text();
        return { child, stderr, stdout };
      },
      (s) => ({ pid: s.child.pid, ended: s.child.status }),
      async (s) => {
        try {
          s.child.kill("SIGKILL");
        } catch { /* already gone */ }
        await Promise.all([s.child.status, s.stdout, s.stderr]);
      },
    );
  } catch (err) {
    await Deno.remove(dir, { recursive: true });
    throw err;
  }
}

/** Pids of the direct children of `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(e.name));
    } catch {
      // process ended while listing
    }
  }
  return out;
}

Deno.test("runtime --config serves the API and exits 0 on SIGTERM, leaving no provider behind", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-proc-" });
  const { port, started: { child, stderr, stdout } } = await startOnPort(dir, [
    "--log-level",
    "debug",
  ]);
  try {
    const status = await waitFor("API answering", () => statusOf(port), 30000);
    assert.equal(status.mode, "IDLE");
    const providers = childrenOf(child.pid);
    assert.equal(providers.length, 1, "one provider process");
    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0);
    const log = await stderr;
    assert.match(log, /^DEBUG /m, "--log-level debug is honoured");
    assert.match(log, /SIGTERM received/);
    assert.match(log, /shutdown complete/);
    for (const pid of providers) assert.equal(processAlive(pid), false);
  } finally {
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await stdout;
    await stderr;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("providers do not outlive a runtime killed with SIGKILL", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-proc-" });
  const { port, started: { child, stderr, stdout } } = await startOnPort(dir);
  try {
    await waitFor("API answering", () => statusOf(port), 30000);
    const providers = childrenOf(child.pid);
    assert.equal(providers.length, 1);
    child.kill("SIGKILL");
    await child.status;
    // The provider's stdin pipe closes with the runtime: ADPP's stop signal.
    await waitFor("provider exit", () => providers.every((p) => !processAlive(p)), 10000);
  } finally {
    await stdout;
    await stderr;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runtime --config exits 3 when a provider cannot start", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-proc-" });
  try {
    const path = `${dir}/bad.yaml`;
    await Deno.writeTextFile(
      path,
      // No API: its port probe (before any provider is spawned) would fail the start first
      // should a stranger hold the port.
      `providers: [{id: gone, command: /nonexistent/provider}]\nhttp: {enabled: false}\nruntime: {data_dir: ${dir}/data}\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...compiledPermissions(), "--quiet", MAIN, "--config", path],
      env: { NO_COLOR: "1" },
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(out.code, 3);
    assert.match(
      new TextDecoder().decode(out.stderr),
      /start-up failed: .*gone: cannot start provider/,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
