/**
 * The connection bound and descriptor exhaustion: more idle connections than the bound, or than the
 * process may hold, never end the runtime; a client with a request still gets in (an idle
 * connection is evicted for it), or gets a clear 503 when every connection is busy; accept errors
 * (EMFILE) are survived. Real sockets on loopback; the runtime as a child process with a low
 * `ulimit -n`.
 */
import assert from "node:assert/strict";
import { serveHttp } from "../../src/host/mod.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { startOnFreePort } from "../helpers/ports.ts";
import { REPO, SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { closedWithin, connect, getRequest, readResponse, send, sleep } from "./_raw_socket.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { compiledPermissions } from "../helpers/compiled_permissions.ts";

const MAIN = `${REPO}src/main.ts`;
const ACCEPT_ERROR_SERVER = new URL("./_accept_error_server.ts", import.meta.url).pathname;

Deno.test("Deno still provides serveHttpOnConnection, which the connection layer is built on", () => {
  // A Deno upgrade that moves this internal must fail here, not in production.
  const key = (Deno as unknown as { internal: symbol }).internal;
  const internals = (Deno as unknown as Record<symbol, Record<string, unknown>>)[key];
  assert.equal(typeof internals?.serveHttpOnConnection, "function");
});

/** A handler whose /block requests wait until released; anything else answers at once. */
function blockingHandler() {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let blocked = 0;
  return {
    handler: async (req: Request) => {
      if (new URL(req.url).pathname === "/block") {
        blocked++;
        await released;
      }
      return Response.json({ ok: true });
    },
    release,
    blocked: () => blocked,
  };
}

Deno.test("serveHttp at http.max_connections closes the oldest idle connection to admit a new one", async () => {
  const h = blockingHandler();
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    handler: h.handler,
    log: testLogger(),
    maxConnections: 8,
    openFileLimit: null,
  });
  const idle: Deno.TcpConn[] = [];
  try {
    assert.equal(server.maxConnections, 8);
    for (let i = 0; i < 8; i++) idle.push(await connect(server.port));
    await waitFor("8 connections held", () => server.connectionStats().open === 8);
    assert.equal(server.connectionStats().evicted, 0);
    // The 9th connection is served; the oldest idle one pays for it.
    const fresh = await connect(server.port);
    await send(fresh, getRequest("/v0/runtime/status"));
    assert.equal((await readResponse(fresh))?.status, 200);
    fresh.close();
    assert.notEqual(await closedWithin(idle.shift()!, 2000), null, "oldest idle still open");
    assert.equal(server.connectionStats().evicted, 1);
    assert.equal(server.connectionStats().refused, 0);
  } finally {
    for (const c of idle) await closedWithin(c, 0);
    await server.shutdown();
  }
});

Deno.test("serveHttp refuses a new connection with 503 when every connection has a request in flight", async () => {
  const h = blockingHandler();
  const server = await serveHttp({
    hostname: "127.0.0.1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    handler: h.handler,
    log: testLogger(),
    maxConnections: 8,
    openFileLimit: null,
  });
  const busy: Deno.TcpConn[] = [];
  try {
    for (let i = 0; i < 8; i++) {
      const c = await connect(server.port);
      await send(c, getRequest("/block"));
      busy.push(c);
    }
    await waitFor("8 requests in flight", () => h.blocked() === 8);
    const extra = await connect(server.port);
    const refusal = await readResponse(extra);
    assert.equal(refusal?.status, 503);
    assert.equal(JSON.parse(refusal!.body).status.code, "UNAVAILABLE");
    assert.match(JSON.parse(refusal!.body).status.message, /http\.max_connections = 8/);
    assert.notEqual(await closedWithin(extra, 2000), null, "a refused connection is closed");
    assert.equal(server.connectionStats().refused, 1);
    assert.equal(server.connectionStats().evicted, 0);
    // Every busy request still completes.
    h.release();
    for (const c of busy) assert.equal((await readResponse(c))?.status, 200);
  } finally {
    h.release();
    for (const c of busy) await closedWithin(c, 0);
    await server.shutdown();
  }
});

/** Runs `deno <args>` under `ulimit -n <fds>` (exec: the child's pid is Deno's). */
function spawnLimited(fds: number, args: string[]): Deno.ChildProcess {
  const quoted = [Deno.execPath(), ...args].map((a) => `'${a.replaceAll("'", `'\\''`)}'`);
  return new Deno.Command("sh", {
    args: ["-c", `ulimit -n ${fds} && exec ${quoted.join(" ")}`],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
}

// deno-lint-ignore no-explicit-any
async function fetchJson(url: string, init?: RequestInit): Promise<{ status: number; body: any }> {
  const res = await apiFetch(url, { ...init, signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: await res.json() };
}

Deno.test("the runtime under a 256-descriptor limit keeps serving, and takes an e-stop, with 300 idle connections open", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-fds-" });
  const config = `${dir}/runtime.yaml`;
  // startOnFreePort: returns once this runtime listens on its port (another port when a
  // stranger took the first).
  const { port, started: { child, stderr, stdout } } = await startOnFreePort(
    async (port) => {
      await Deno.writeTextFile(
        config,
        `runtime: {name: fds, data_dir: ${dir}/data}
http: {port: ${port}}
providers:
  - id: sim0
    command: ${Deno.execPath()}
    args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}]
polling: {interval_ms: 100}
`,
      );
      const child = spawnLimited(256, [
        "run",
        ...compiledPermissions(),
        "--quiet",
        MAIN,
        "--config",
        config,
      ]);
      return {
        child,
        stderr: new Response(child.stderr).text(),
        stdout: new Response(child.stdout).text(),
      };
    },
    (s) => ({ pid: s.child.pid, ended: s.child.status }),
    async (s) => {
      try {
        s.child.kill("SIGKILL");
      } catch { /* already gone */ }
      await Promise.all([s.child.status, s.stdout, s.stderr]);
    },
  );
  const idle: Deno.TcpConn[] = [];
  try {
    await waitFor("API answering", async () => {
      try {
        return (await fetchJson(`http://127.0.0.1:${port}/v0/runtime/status`)).status === 200;
      } catch {
        return false;
      }
    }, 30000);
    // More idle connections than the bound (128) and than the descriptors left (~225).
    for (let i = 0; i < 300; i++) idle.push(await connect(port));
    await sleep(500);
    const status = await fetchJson(`http://127.0.0.1:${port}/v0/runtime/status`);
    assert.equal(status.status, 200);
    const estop = await fetchJson(`http://127.0.0.1:${port}/v0/estop`, { method: "POST" });
    assert.equal(estop.status, 200);
    assert.equal(estop.body.latched, true);
    // Still the same process, still latched: nothing was lost.
    const after = await fetchJson(`http://127.0.0.1:${port}/v0/runtime/status`);
    assert.equal(after.status, 200);
    for (const c of idle.splice(0)) await closedWithin(c, 0);
    child.kill("SIGTERM");
    const { code } = await child.status;
    const log = await stderr;
    assert.equal(code, 0, log);
    assert.doesNotMatch(log, /crash|Too many open files/);
    assert.match(log, /connection limit http\.max_connections = 128 reached/);
  } finally {
    for (const c of idle) await closedWithin(c, 0);
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await stdout;
    await stderr;
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("serveHttp survives accept() failing with EMFILE and serves again once descriptors free up", async () => {
  const child = spawnLimited(64, ["run", "-A", "--quiet", ACCEPT_ERROR_SERVER]);
  const stderr = new Response(child.stderr).text();
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const idle: Deno.TcpConn[] = [];
  try {
    const port = Number((await lines.read()).value?.trim());
    assert.ok(port > 0);
    // ~30 descriptors are Deno's own: 80 connections exhaust the rest.
    for (let i = 0; i < 80; i++) idle.push(await connect(port));
    await sleep(300);
    for (const c of idle.splice(0)) await closedWithin(c, 0);
    const { status, body } = await waitFor("served again", async () => {
      try {
        return await fetchJson(`http://127.0.0.1:${port}/`);
      } catch {
        return null;
      }
    }, 10000);
    assert.equal(status, 200);
    assert.ok(body.acceptErrors > 0, `accept errors: ${body.acceptErrors}`);
    child.kill("SIGTERM");
    const { code } = await child.status;
    const log = await stderr;
    assert.equal(code, 0, log);
    assert.match(log, /accepting a connection failed, still serving: Too many open files/);
  } finally {
    for (const c of idle) await closedWithin(c, 0);
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await lines.cancel();
    await stderr;
  }
});
