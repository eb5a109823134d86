/**
 * The runtime as a process (`src/main.ts --config FILE` as a child of the test) and the scripted
 * provider (tests/providers/_scripted_provider.ts) for the process and signal scenarios.
 */
import type { ProviderConfig } from "../../src/config/mod.ts";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import { freePort, NotListeningError, startOnFreePort } from "../helpers/ports.ts";
import { REPO } from "../helpers/sim_config.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { compiledPermissions } from "../helpers/compiled_permissions.ts";

export { freePort, processAlive, waitFor };

export const MAIN = `${REPO}src/main.ts`;
export const SCRIPTED_MAIN = `${REPO}tests/providers/_scripted_provider.ts`;

/** Deno permissions the scripted provider runs with. */
const SCRIPTED_PERMISSIONS = ["--allow-read", "--allow-write", "--allow-env", "--allow-run"];

/** Command and args running the scripted provider with `flags`. */
export function scriptedCommand(flags: readonly string[]): { command: string; args: string[] } {
  return {
    command: Deno.execPath(),
    args: ["run", "--quiet", ...SCRIPTED_PERMISSIONS, SCRIPTED_MAIN, ...flags],
  };
}

/** A provider entry (typed config) running the scripted provider with `flags`. */
export function scriptedProvider(
  id: string,
  flags: readonly string[],
  o: { timeoutMs?: number; restart?: boolean; helloTimeoutMs?: number } = {},
): ProviderConfig {
  return {
    id,
    ...scriptedCommand(flags),
    timeoutMs: o.timeoutMs ?? 5000,
    helloTimeoutMs: o.helloTimeoutMs ?? 10000,
    readyTimeoutMs: 10000,
    restartPolicy: {
      enabled: o.restart ?? false,
      maxAttempts: 3,
      backoffMs: [0, 0, 0],
      timeoutMs: 30000,
      successResetMs: 1000,
    },
  };
}

/** What the scripted provider wrote to its --log file. */
export interface ScriptedLog {
  readonly pids: number[];
  readonly helpers: number[];
  readonly hangs: string[];
  /** Why the provider applied its safe state, each time it did (`--safe-state-ms`). */
  readonly safe: string[];
  /** How many times its stdin closed while it kept running (`--ignore-stdin-eof`). */
  stdinEofs: number;
}

/** Reads a scripted provider's --log file (empty when it does not exist yet). */
export function readScriptedLog(path: string): ScriptedLog {
  let text = "";
  try {
    text = Deno.readTextFileSync(path);
  } catch {
    // not written yet
  }
  const log: ScriptedLog = { pids: [], helpers: [], hangs: [], safe: [], stdinEofs: 0 };
  for (const line of text.split("\n")) {
    const [what, value] = line.split(" ");
    if (what === "pid") log.pids.push(Number(value));
    if (what === "helper") log.helpers.push(Number(value));
    if (what === "hang") log.hangs.push(value!);
    if (what === "safe") log.safe.push(value!);
    if (what === "stdin_eof") log.stdinEofs++;
  }
  return log;
}

/** YAML of one provider entry (list item under `providers:`). */
export function providerYaml(
  id: string,
  command: { command: string; args: readonly string[] },
  extra = "",
): string {
  const args = command.args.map((a) => JSON.stringify(a)).join(", ");
  return `  - id: ${id}\n    command: ${
    JSON.stringify(command.command)
  }\n    args: [${args}]\n${extra}`;
}

/** Writes runtime.yaml into `dir` and returns its path. */
export async function writeRuntimeConfig(
  dir: string,
  o: { port: number; providers: string; runtime?: string; http?: string },
): Promise<string> {
  const path = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(
    path,
    `runtime:
  name: proc
  data_dir: ${dir}/data
${o.runtime ?? "  shutdown_timeout_ms: 2000\n"}http:
  port: ${o.port}
${o.http ?? ""}providers:
${o.providers}polling:
  interval_ms: 100
`,
  );
  return path;
}

/** A runtime process; `exit` resolves with its exit code once it ended and its pipes drained. */
export interface RuntimeProcess {
  readonly child: Deno.ChildProcess;
  readonly exit: Promise<{ code: number; stderr: string }>;
  /** Resolves with the first stderr line matching `pattern` (rejects if the process ends first). */
  stderrLine(pattern: RegExp): Promise<string>;
  /** Kills the runtime (SIGKILL) if still running and waits for it; for finally blocks. */
  dispose(): Promise<void>;
}

/** Options of spawnRuntime. */
export interface SpawnRuntimeOptions {
  readonly env?: Record<string, string>;
  readonly extraArgs?: string[];
  /**
   * Start the runtime in a process group of its own, as a shell starts a foreground job: then
   * `Deno.kill(-child.pid, "SIGINT")` is what a terminal's Ctrl-C does.
   */
  readonly ownProcessGroup?: boolean;
}

/** Starts `src/main.ts --config path` with `env` added to this process's environment. */
export function spawnRuntime(config: string, o: SpawnRuntimeOptions = {}): RuntimeProcess {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      ...compiledPermissions(),
      "--quiet",
      MAIN,
      "--config",
      config,
      ...(o.extraArgs ?? []),
    ],
    env: { NO_COLOR: "1", ...o.env },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
    detached: o.ownProcessGroup ?? false,
  }).spawn();
  return runtimeProcess(child);
}

/** A spawned runtime (or a process running one, such as `deno task`) whose stderr is piped. */
export function runtimeProcess(child: Deno.ChildProcess): RuntimeProcess {
  let text = "";
  const waiters = new Set<() => void>();
  const decoder = new TextDecoder();
  const drained = (async () => {
    for await (const chunk of child.stderr) {
      text += decoder.decode(chunk, { stream: true });
      for (const w of waiters) w();
    }
  })();
  const exit = Promise.all([child.status, drained]).then(([s]) => ({ code: s.code, stderr: text }));
  let ended = false;
  exit.then(() => {
    ended = true;
    for (const w of waiters) w();
  });
  return {
    child,
    exit,
    stderrLine(pattern) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const line = text.split("\n").find((l) => pattern.test(l));
          if (line === undefined && !ended) return;
          waiters.delete(check);
          if (line !== undefined) return resolve(line);
          reject(new Error(`the process ended with no stderr line matching ${pattern}:\n${text}`));
        };
        waiters.add(check);
        check();
      });
    },
    async dispose() {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
      await exit;
    },
  };
}

/**
 * Starts the runtime with the config `config(port)` writes, on a free port, and returns once this
 * very process listens on it (startOnFreePort: started again on another port when a stranger
 * took it first). When the runtime ends without listening, the error carries its stderr.
 */
export async function startRuntimeOnFreePort(
  config: (port: number) => Promise<string>,
  o: SpawnRuntimeOptions = {},
): Promise<{ port: number; rt: RuntimeProcess }> {
  let stderr = "";
  try {
    const { port, started } = await startOnFreePort(
      async (port) => spawnRuntime(await config(port), o),
      (rt) => ({ pid: rt.child.pid, ended: rt.exit }),
      async (rt) => {
        await rt.dispose();
        stderr = (await rt.exit).stderr;
      },
    );
    return { port, rt: started };
  } catch (err) {
    if (err instanceof NotListeningError && stderr !== "") err.message += `\n${stderr}`;
    throw err;
  }
}

/** GET /v0/runtime/status, or null while the API does not answer. */
export async function runtimeStatus(port: number): Promise<Record<string, unknown> | null> {
  try {
    const r = await apiFetch(`http://127.0.0.1:${port}/v0/runtime/status`);
    return r.ok ? await r.json() : (await r.body?.cancel(), null);
  } catch {
    return null;
  }
}

/** Resolves with `p`'s value, or "timeout" after `ms` (the timer is always cleared). */
export async function within<T>(p: Promise<T>, ms: number): Promise<T | "timeout"> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<"timeout">((r) => (timer = setTimeout(() => r("timeout"), ms)));
  try {
    return await Promise.race([p, t]);
  } finally {
    clearTimeout(timer);
  }
}

/** SIGKILLs every pid still alive (test cleanup: nothing may outlive a failed test). */
export function killLeftovers(pids: readonly number[]): void {
  for (const pid of pids) {
    if (pid <= 1 || !processAlive(pid)) continue;
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // ended meanwhile
    }
  }
}

/**
 * SIGKILLs every process whose command line names `marker` (a folder of the test's own): the
 * providers of a SIGKILLed runtime outlive it until they see their stdin close.
 */
export function killProcessesNaming(marker: string): void {
  const pids: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    const pid = Number(e.name);
    if (!Number.isInteger(pid)) continue;
    try {
      if (Deno.readTextFileSync(`/proc/${pid}/cmdline`).includes(marker)) pids.push(pid);
    } catch {
      // gone
    }
  }
  killLeftovers(pids);
}
