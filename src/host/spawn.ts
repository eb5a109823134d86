import type { ProviderProcess, SpawnFn, SpawnOptions } from "../common/mod.ts";

/**
 * Environment variables that hold the runtime's secrets (ANOLIS_API_TOKEN is only named in a
 * warning, but it is a token all the same). The runtime reads them (through
 * secretFromEnvironment) and removes them from its own environment before any provider starts,
 * so no provider process inherits them.
 */
export const SECRET_ENV_VARS = [
  "RUNTIME_API_TOKEN",
  "INFLUXDB_TOKEN",
  "ANOLIS_API_TOKEN",
  // The Sparkplug broker's credentials (sparkplug:, docs/sparkplug.md).
  "SPARKPLUG_USERNAME",
  "SPARKPLUG_PASSWORD",
] as const;

/** One of SECRET_ENV_VARS. */
export type SecretEnvVar = (typeof SECRET_ENV_VARS)[number];

/**
 * Every variable treated as a secret: SECRET_ENV_VARS plus each one read through
 * secretFromEnvironment (the `http.tokens[].token_env` variables).
 */
const secretNames = new Set<string>(SECRET_ENV_VARS);
/** Secrets taken out of the environment: name -> value (absent: never set). */
const secrets = new Map<string, string>();
/** Secrets this process may not read or delete (no env permission): blanked at spawn instead. */
const unscrubbable = new Set<string>();

/**
 * Moves every secret still in this process's environment into memory. Runs before each spawn:
 * a secret set again later (tests do) is taken out again.
 */
function takeSecrets(): void {
  for (const name of secretNames) {
    try {
      const value = Deno.env.get(name);
      if (value === undefined) continue;
      secrets.set(name, value);
      Deno.env.delete(name);
    } catch {
      unscrubbable.add(name); // not permitted: the child gets it as an empty string
    }
  }
}

/**
 * The value of a secret as the runtime's environment gave it (undefined when unset or not
 * readable). Reading it also removes it from the environment that providers inherit, and makes
 * `name` a secret from then on (a named token's `token_env` variable is one).
 */
export function secretFromEnvironment(name: string): string | undefined {
  secretNames.add(name);
  takeSecrets();
  return secrets.get(name);
}

/**
 * A provider's scheduling weight against the runtime's, as the nice of its session's autogroup
 * (Linux, `/proc/<pid>/autogroup`). A provider leads its own session (setsid, below), and the
 * kernel's autogroup scheduling gives every session an equal share of the CPU whatever its
 * processes' nice: 40 providers restarting at once (each compiling its code) took the runtime's
 * loop down to one share in 41, and an e-stop requested then latched up to ~200 ms late
 * (bench/README.md, "A restart storm's CPU: providers behind the runtime"). At 10
 * a provider's session weighs ~1/9 of a session at 0 while both want a core; a provider alone on
 * an idle core runs as before. Where the kernel has no autogroups the file does not exist and
 * nothing changes.
 */
export const PROVIDER_AUTOGROUP_NICE = 10;

/**
 * How often setting it is tried when the kernel says "not now" (EAGAIN: a process without
 * CAP_SYS_ADMIN may set one autogroup's nice per 100 ms, machine-wide), AUTOGROUP_RETRY_MS apart.
 */
export const AUTOGROUP_MAX_TRIES = 50;

/** The wait before trying again after EAGAIN (the kernel's interval is 100 ms). */
export const AUTOGROUP_RETRY_MS = 110;

/** How lowerSessionPriority reads, writes and waits (tests pass their own). */
export interface AutogroupWriter {
  read(path: string): string;
  write(path: string, text: string): void;
  later(fn: () => void, ms: number): void;
}

const procAutogroup: AutogroupWriter = {
  read: (path) => Deno.readTextFileSync(path),
  write: (path, text) => Deno.writeTextFileSync(path, text),
  later: (fn, ms) => Deno.unrefTimer(setTimeout(fn, ms)),
};

/** The session id of process `pid` (the 6th field of /proc/<pid>/stat), or null if unreadable. */
function sessionOf(pid: number, read: (path: string) => string): number | null {
  try {
    const stat = read(`/proc/${pid}/stat`);
    // "pid (comm) state ppid pgrp session ...": comm may hold spaces and parentheses.
    const session = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[3]);
    return Number.isInteger(session) ? session : null;
  } catch {
    return null;
  }
}

/**
 * Sets the autogroup nice of the session `pid` leads to PROVIDER_AUTOGROUP_NICE, trying again
 * after EAGAIN while `alive()` (at most AUTOGROUP_MAX_TRIES times). Only a session the process
 * leads: were it in the runtime's (a spawn without setsid), this would put the runtime itself
 * behind every other session. Anything else (no autogroups in this kernel, not Linux, not
 * permitted) leaves the provider's priority as it is: resolves false then, true once set.
 */
export function lowerSessionPriority(
  pid: number,
  alive: () => boolean,
  writer: AutogroupWriter = procAutogroup,
): Promise<boolean> {
  return new Promise((resolve) => {
    const attempt = (tries: number) => {
      if (!alive() || sessionOf(pid, writer.read) !== pid) return resolve(false);
      try {
        writer.write(`/proc/${pid}/autogroup`, String(PROVIDER_AUTOGROUP_NICE));
        resolve(true);
      } catch (err) {
        if (err instanceof Deno.errors.WouldBlock && tries > 1) {
          writer.later(() => attempt(tries - 1), AUTOGROUP_RETRY_MS);
        } else resolve(false);
      }
    };
    attempt(AUTOGROUP_MAX_TRIES);
  });
}

/** A spawned provider's process group, while its leader runs. */
interface LiveGroup {
  kill(signal: "SIGTERM" | "SIGKILL"): void;
  readonly exited: Promise<unknown>;
}

/** Every provider spawned by this process whose leader has not exited yet. */
const live = new Set<LiveGroup>();

/**
 * Spawns a provider with piped stdio via Deno.Command, in a new session and so in its own process
 * group (Deno's `detached` calls setsid(): the provider leads a group holding everything it
 * spawns, and a terminal's Ctrl-C reaches only the runtime, which then stops its providers in
 * order). `kill` signals the whole group; once the provider has exited, whatever it left in its
 * group gets SIGKILL. The runtime's secrets (SECRET_ENV_VARS) are not inherited. The session
 * runs behind the runtime's when both want the CPU (PROVIDER_AUTOGROUP_NICE).
 */
export const spawnProcess: SpawnFn = (options: SpawnOptions): ProviderProcess => {
  takeSecrets();
  const blanked = Object.fromEntries([...unscrubbable].map((n) => [n, ""]));
  const child = new Deno.Command(options.command, {
    args: [...options.args],
    ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    detached: true,
    ...(unscrubbable.size > 0 ? { env: blanked } : {}),
  }).spawn();
  const pgid = child.pid;
  let groupEnded = false;
  const kill = (signal: "SIGTERM" | "SIGKILL") => {
    if (groupEnded) return; // the id may belong to someone else by now
    if (!signalGroup(pgid, signal)) {
      try {
        child.kill(signal); // the group could not be signalled: at least the provider
      } catch {
        // already exited
      }
    }
  };
  const exited = child.status.then((s) => {
    // Helpers outliving the provider would hold its hardware against the next instance.
    signalGroup(pgid, "SIGKILL");
    groupEnded = true;
    live.delete(group);
    return { code: s.code, signal: s.signal ?? null };
  });
  const group: LiveGroup = { kill, exited };
  live.add(group);
  void lowerSessionPriority(pgid, () => !groupEnded);
  return {
    pid: child.pid,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    exited,
    kill,
  };
};

/**
 * Sends `signal` to process group `pgid`. True when delivered or when the group no longer exists
 * (nothing left to signal); false when it could not be signalled (e.g. no permission).
 */
function signalGroup(pgid: number, signal: "SIGTERM" | "SIGKILL"): boolean {
  // kill(-1) would signal every process we may signal, kill(-0) our own group: never.
  if (!Number.isInteger(pgid) || pgid <= 1) return false;
  try {
    Deno.kill(-pgid, signal);
    return true;
  } catch (err) {
    return err instanceof Deno.errors.NotFound;
  }
}

/**
 * Sends SIGKILL to the process group of every provider still running (the last resort before the
 * runtime exits: a second stop signal, an overrun shutdown) and waits up to `timeoutMs` for them
 * to be reaped. Resolves with the number of groups signalled.
 */
export async function killProviderProcesses(timeoutMs: number): Promise<number> {
  const groups = [...live];
  for (const g of groups) g.kill("SIGKILL");
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.all(groups.map((g) => g.exited)),
    new Promise((r) => (timer = setTimeout(r, timeoutMs))),
  ]);
  clearTimeout(timer);
  return groups.length;
}

/** Sends SIGTERM to every provider's process group without waiting (for a crashing runtime). */
export function terminateProviderProcesses(): void {
  for (const g of live) g.kill("SIGTERM");
}
