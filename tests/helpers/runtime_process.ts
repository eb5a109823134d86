/**
 * The `runtime` command as a real child process (`deno run src/main.ts --config ...`), started
 * until its API answers and every provider is AVAILABLE, and stopped with SIGTERM.
 */
import { assertApiAnswer } from "./openapi_check.ts";
import { compiledPermissions } from "./compiled_permissions.ts";
import { listeningPorts, NotListeningError, PORT_ATTEMPTS, portTaken } from "./ports.ts";
const REPO = new URL("../../", import.meta.url).pathname;
const MAIN = `${REPO}src/main.ts`;
/** How long a test waits for the runtime to come up (a loaded CI machine starts slowly). */
const READY_TIMEOUT_MS = 60000;
/** How often the readiness check asks again while the runtime comes up. */
const READY_POLL_MS = 25;
/** How long a SIGTERM'd runtime has to exit before it is killed. */
const STOP_TIMEOUT_MS = 15000;

/**
 * A loopback TCP port that was free a moment ago: racy when handed to a runtime (ports.ts); start
 * one with {@link startRuntimeChildOnFreePort}, which tries another port when a stranger took it.
 */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

export interface RuntimeChildOptions {
  /** The configuration file (absolute, or relative to `cwd`). */
  readonly config: string;
  /** Where the API is expected (the configured port or the --port / RUNTIME_HTTP_PORT one). */
  readonly port: number;
  readonly args?: readonly string[];
  /** The module to run (default src/main.ts; e.g. a bundle of scripts/bundle.ts). */
  readonly entry?: string;
  /** More `deno run` flags before the module (e.g. `--config=<repo>/deno.json` for a bundle). */
  readonly denoFlags?: readonly string[];
  readonly env?: Record<string, string>;
  readonly cwd?: string;
  /**
   * Deno permissions; default: what `deno task compile` bakes into the single binary
   * (tests/helpers/compiled_permissions.ts), so the tests run the runtime as users do. A test that
   * needs more says so (`["-A"]`).
   */
  readonly permissions?: readonly string[];
  /** Bearer token for the readiness check (a runtime with auth and no loopback exemption). */
  readonly token?: string;
  /** PEM of the certificate the runtime serves HTTPS with: the base URL is then https. */
  readonly caCert?: string;
  /**
   * The runtime's stderr is not read until this settles (a reader that stopped: the pipe fills);
   * `stderr()` has nothing until then.
   */
  readonly stderrReadAfter?: Promise<void>;
  /** A command the runtime is started through (its argv prefix), e.g. a shell setting a ulimit. */
  readonly wrap?: readonly string[];
  /** Start it in a session of its own (Deno's `detached`: setsid), as systemd starts a service. */
  readonly ownSession?: boolean;
}

export interface RuntimeChild {
  readonly port: number;
  readonly base: string;
  /** Process id of the runtime (its providers are its children). */
  readonly pid: number;
  /** Sends a signal to the runtime (e.g. SIGHUP: reload the configuration). */
  signal(signal: Deno.Signal): void;
  /** Everything the runtime wrote to stderr so far. */
  stderr(): string;
  /** SIGTERM, then the exit code (SIGKILL after STOP_TIMEOUT_MS; then the code is -1). */
  stop(): Promise<number>;
}

/**
 * GET /v0/runtime/status as JSON, or null while the API does not answer. An answer that breaks
 * the OpenAPI document throws (openapi_check.ts).
 */
async function status(
  base: string,
  token: string | undefined,
  client: Deno.HttpClient | undefined,
  signal: AbortSignal,
): Promise<Record<string, unknown> | null> {
  let r: Response;
  let text: string;
  try {
    r = await fetch(`${base}/v0/runtime/status`, {
      headers: token ? { authorization: `Bearer ${token}` } : {},
      ...(client ? { client } : {}),
      signal,
    });
    text = await r.text();
  } catch {
    return null;
  }
  assertApiAnswer({
    method: "GET",
    path: "/v0/runtime/status",
    status: r.status,
    contentType: r.headers.get("content-type"),
    body: text,
  });
  return r.ok ? JSON.parse(text) : null;
}

/**
 * Starts the runtime and resolves once its API answers with every provider AVAILABLE, from a
 * port the runtime itself listens on (not a stranger's server that took the port first). Throws,
 * with the runtime's stderr, when it exits first (a {@link NotListeningError} saying so when
 * another process holds its port) or does not get there within READY_TIMEOUT_MS.
 */
export async function startRuntimeChild(o: RuntimeChildOptions): Promise<RuntimeChild> {
  const permissions = o.permissions ?? compiledPermissions();
  const [command, ...wrapArgs] = [...(o.wrap ?? []), Deno.execPath()];
  const child = new Deno.Command(command!, {
    args: [
      ...wrapArgs,
      "run",
      ...permissions,
      "--quiet",
      ...(o.denoFlags ?? []),
      o.entry ?? MAIN,
      "--config",
      o.config,
      ...(o.args ?? []),
    ],
    ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
    env: { NO_COLOR: "1", ...o.env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    ...(o.ownSession ? { detached: true } : {}),
  }).spawn();
  let text = "";
  const decoder = new TextDecoder();
  const drained = (async () => {
    await o.stderrReadAfter;
    for await (const chunk of child.stderr) text += decoder.decode(chunk, { stream: true });
  })();
  const exit = Promise.all([child.status, drained]).then(([s]) => s.code);
  let exited = false;
  // A readiness read a stranger on the port never answers ends when the runtime does (its stderr
  // may be read only later: stderrReadAfter).
  const ended = new AbortController();
  child.status.then(() => {
    exited = true;
    ended.abort();
  });
  const base = `${o.caCert === undefined ? "http" : "https"}://127.0.0.1:${o.port}`;
  const stop = async (): Promise<number> => {
    if (!exited) {
      try {
        child.kill("SIGTERM");
      } catch {
        // already gone
      }
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<"late">((r) => timer = setTimeout(() => r("late"), STOP_TIMEOUT_MS));
    const code = await Promise.race([exit, late]).finally(() => clearTimeout(timer));
    if (code !== "late") return code;
    child.kill("SIGKILL");
    await exit;
    return -1;
  };
  const deadline = Date.now() + READY_TIMEOUT_MS;
  const client = o.caCert === undefined
    ? undefined
    : Deno.createHttpClient({ caCerts: [o.caCert] });
  try {
    for (;;) {
      if (exited) {
        // All its stderr, unless that is read only later (then what was read so far).
        const code = o.stderrReadAfter === undefined ? await exit : (await child.status).code;
        const message = `runtime exited with code ${code} before it was ready:\n${text}`;
        if (portTaken(o.port)) {
          throw new NotListeningError(`${message}\n(another process holds port ${o.port})`, true);
        }
        throw new Error(message);
      }
      // Until the runtime itself listens on the port, whatever answers there is a stranger's (another
      // test's server took the port first): its answer is not the runtime's, nor judged against the
      // API's contract; the runtime, unable to bind, exits, and the stranger is named then.
      const own = listeningPorts(child.pid).includes(o.port);
      const s = !own
        ? null
        : await status(base, o.token, client, ended.signal).catch(async (err) => {
          await stop();
          throw err;
        });
      const providers = (s?.providers ?? []) as { state: string }[];
      if (
        s && providers.length > 0 && providers.every((p) => p.state === "AVAILABLE") &&
        listeningPorts(child.pid).includes(o.port)
      ) {
        return {
          port: o.port,
          base,
          pid: child.pid,
          signal: (sig) => child.kill(sig),
          stderr: () => text,
          stop,
        };
      }
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`runtime not ready within ${READY_TIMEOUT_MS} ms:\n${text}`);
      }
      await new Promise((r) => setTimeout(r, READY_POLL_MS));
    }
  } finally {
    client?.close();
  }
}

/**
 * Starts the runtime with the options `make` gives for a free port (written to its config, or
 * `--port`). A port is free only until someone binds it: when another process took it before
 * the runtime did, the runtime is started again on another port (up to PORT_ATTEMPTS times).
 */
export async function startRuntimeChildOnFreePort(
  make: (port: number) => RuntimeChildOptions | Promise<RuntimeChildOptions>,
): Promise<RuntimeChild> {
  for (let attempt = 1;; attempt++) {
    try {
      return await startRuntimeChild(await make(freePort()));
    } catch (err) {
      const race = err instanceof NotListeningError && err.portTakenByStranger;
      if (!race || attempt >= PORT_ATTEMPTS) throw err;
    }
  }
}

/**
 * {@link startRuntimeChildOnFreePort} for a runtime whose port is in its configuration file:
 * `yaml(port)` is written to `config` before each start; `o` are the other options.
 */
export function startRuntimeWithConfigOnFreePort(
  config: string,
  yaml: (port: number) => string,
  o: Omit<RuntimeChildOptions, "config" | "port"> = {},
): Promise<RuntimeChild> {
  return startRuntimeChildOnFreePort(async (port) => {
    await Deno.writeTextFile(config, yaml(port));
    return { ...o, config, port };
  });
}

/**
 * Runs `fn` with a temp mirror of the checkout made of symlinks (`src`, `deno.json`, `deno.lock`,
 * `examples/providers`, `examples/behaviors`) and `config` written to `examples/config.yaml`, so
 * an example configuration's relative paths resolve as they do in the checkout while its run
 * journals (data_dir) land in the temp folder. Deno resolves the simulated provider's
 * `../../../src` imports and its import-map entries from the symlinked path. `extra` files
 * (executable) are written under `examples/`. `fn` gets the `examples` folder; all is removed after.
 */
export async function withCheckoutMirror(
  config: string,
  fn: (dir: string) => Promise<void>,
  extra: Record<string, string> = {},
): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "runtime-example-" });
  const dir = `${root}/examples`;
  try {
    await Deno.mkdir(dir);
    for (
      const path of [
        "src",
        "vendor",
        "deno.json",
        "deno.lock",
        "examples/providers",
        "examples/behaviors",
      ]
    ) {
      await Deno.symlink(`${REPO}${path}`, `${root}/${path}`);
    }
    await Deno.writeTextFile(`${dir}/config.yaml`, config);
    for (const [name, text] of Object.entries(extra)) {
      await Deno.mkdir(`${dir}/${name}`.replace(/\/[^/]*$/, ""), { recursive: true });
      await Deno.writeTextFile(`${dir}/${name}`, text, { mode: 0o755 });
    }
    await fn(dir);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

/**
 * The options of the runtime on `examples/config.yaml` of a {@link withCheckoutMirror} folder
 * `dir`, on `port` (given as `--port`, overriding the file's), started from that folder: for a
 * restart on the port of {@link startRuntimeInMirror}.
 */
export function mirrorOptions(dir: string, port: number): RuntimeChildOptions {
  return { config: `${dir}/config.yaml`, port, args: ["--port", String(port)], cwd: dir };
}

/** The runtime of {@link mirrorOptions}, on a free port. */
export function startRuntimeInMirror(dir: string): Promise<RuntimeChild> {
  return startRuntimeChildOnFreePort((port) => mirrorOptions(dir, port));
}

/** The pids of a process's children (every thread's), from /proc. */
export function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    let children = "";
    try {
      children = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/children`);
    } catch {
      continue; // the thread ended meanwhile
    }
    for (const p of children.trim().split(/\s+/)) if (p !== "") out.push(Number(p));
  }
  return out;
}
