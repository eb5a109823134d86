/**
 * A reload adding providers under a low open-file limit (the runtime as a child process under
 * `ulimit -n`): the HTTP server's connection bound was fitted at start to the limit, keeping
 * descriptors for the providers configured then; providers a reload adds would need descriptors
 * the HTTP server may hold. The reload must not meet EMFILE: it is refused, naming the providers
 * and the limit, and what runs goes on.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startOnFreePort } from "../helpers/ports.ts";
import { REPO, SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { closedWithin, connect, sleep } from "../http/_raw_socket.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { runtimeProcess } from "../scenarios/process_helpers.ts";
import { compiledPermissions } from "../helpers/compiled_permissions.ts";

const MAIN = `${REPO}src/main.ts`;
const LIMIT = 256;

function providersYaml(ids: readonly string[]): string {
  return ids.map((id) =>
    `  - id: ${id}\n    command: ${Deno.execPath()}\n` +
    `    args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}]\n`
  ).join("");
}

function configYaml(dir: string, port: number, ids: readonly string[]): string {
  return `runtime: {name: fds, data_dir: ${dir}/data}
http: {port: ${port}, max_connections: 1000}
providers:
${providersYaml(ids)}polling: {interval_ms: 100}
`;
}

Deno.test("a reload adding providers that the open-file limit has no room for beside the HTTP connections is refused, naming them and the limit", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-reload-fds-" });
  const config = `${dir}/runtime.yaml`;
  const { port, started: rt } = await startOnFreePort(
    async (port) => {
      await Deno.writeTextFile(config, configYaml(dir, port, ["sim0"]));
      const quoted = [
        Deno.execPath(),
        "run",
        ...compiledPermissions(),
        "--quiet",
        MAIN,
        "--config",
        config,
      ]
        .map((a) => `'${a}'`).join(" ");
      return runtimeProcess(
        new Deno.Command("sh", {
          args: ["-c", `ulimit -n ${LIMIT} && exec ${quoted}`],
          env: { NO_COLOR: "1" },
          stdin: "null",
          stdout: "null",
          stderr: "piped",
        }).spawn(),
      );
    },
    (r) => ({ pid: r.child.pid, ended: r.exit }),
    (r) => r.dispose(),
  );
  const idle: Deno.TcpConn[] = [];
  try {
    const fitted = await rt.stderrLine(/serving at most \d+ connections/);
    const bound = Number(/serving at most (\d+) connections/.exec(fitted)![1]);
    await waitFor("API answering", async () => {
      try {
        const r = await apiFetch(`http://127.0.0.1:${port}/v0/runtime/status`);
        await r.body?.cancel();
        return r.ok;
      } catch {
        return false;
      }
    }, 30000);
    // The HTTP server holds as many connections as its bound lets it.
    for (let i = 0; i < bound + 20; i++) idle.push(await connect(port));
    await sleep(300);
    const added = Array.from({ length: 12 }, (_, i) => `extra${i}`);
    await Deno.writeTextFile(config, configYaml(dir, port, ["sim0", ...added]));
    Deno.kill(rt.child.pid, "SIGHUP");
    const summary = await rt.stderrLine(/config reload: providers/);
    assert.doesNotMatch(summary, /Too many open files|EMFILE|failed to start/);
    assert.match(
      summary,
      /providers \+0 -0 ~0 =1; refused providers: the open-file limit 256 .*not starting extra0, .*extra11;/,
    );
  } finally {
    for (const c of idle) await closedWithin(c, 0);
    await rt.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});
