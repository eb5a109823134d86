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

/** A spawned provider's process group, while its leader runs. */
interface LiveGroup {
  kill(signal: "SIGTERM" | "SIGKILL"): void;
  readonly exited: Promise<unknown>;
  /** Whether it was sent SIGKILL already (a stop's escalation, a second stop signal). */
  readonly sigkilled: boolean;
}

/** Every provider spawned by this process whose leader has not exited yet. */
const live = new Set<LiveGroup>();

/**
 * Spawns a provider with piped stdio via Deno.Command, in a new session and so in its own process
 * group (Deno's `detached` calls setsid(): the provider leads a group holding everything it
 * spawns, and a terminal's Ctrl-C reaches only the runtime, which then stops its providers in
 * order). `kill` signals the whole group; once the provider has exited, whatever it left in its
 * group gets SIGKILL. The runtime's secrets (SECRET_ENV_VARS) are not inherited.
 */
export const spawnProcess: SpawnFn = (options: SpawnOptions): ProviderProcess => {
  takeSecrets();
  const blanked = Object.fromEntries([...unscrubbable].map((n) => [n, ""]));
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(options.command, {
      args: [...options.args],
      ...(options.cwd === undefined ? {} : { cwd: options.cwd }),
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
      detached: true,
      ...(unscrubbable.size > 0 ? { env: blanked } : {}),
    }).spawn();
  } catch (err) {
    throw withoutCommand(err, options.command);
  }
  const pgid = child.pid;
  let groupEnded = false;
  let sigkilled = false;
  const kill = (signal: "SIGTERM" | "SIGKILL") => {
    if (groupEnded) return; // the id may belong to someone else by now
    if (signal === "SIGKILL") sigkilled = true;
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
  const group: LiveGroup = {
    kill,
    exited,
    get sigkilled() {
      return sigkilled;
    },
  };
  live.add(group);
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
 * Deno's spawn error names the command whole (`Failed to spawn '<command>': <reason>`): configured
 * text of any length and any character. The caller names the command itself (cut and quoted:
 * ProviderSession), so the error says `Failed to spawn: <reason>`, keeping its class
 * (Deno.errors.NotFound, ...). Another wording is left as it is.
 */
function withoutCommand(err: unknown, command: string): unknown {
  const named = `Failed to spawn '${command}': `;
  if (err instanceof Error && err.message.startsWith(named)) {
    err.message = `Failed to spawn: ${err.message.slice(named.length)}`;
  }
  return err;
}

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

/** What killProviderProcesses found still running. */
export interface ProvidersKilledAtExit {
  /** Groups not sent SIGKILL before: killed here (left running by the stop). */
  readonly killed: number;
  /**
   * Groups already sent SIGKILL (by a provider's stop, by a second stop signal) whose leader was
   * still not reaped: sent it again, not counted in `killed` (they were killed, not left running).
   */
  readonly killedBefore: number;
}

/**
 * Sends SIGKILL to the process group of every provider still running (the last resort before the
 * runtime exits: a second stop signal, an overrun shutdown) and waits up to `timeoutMs` for them
 * to be reaped. Resolves with the groups found still running, as killed here (those not sent
 * SIGKILL before) and killed before (sent it already, not reaped yet).
 */
export async function killProviderProcesses(timeoutMs: number): Promise<ProvidersKilledAtExit> {
  const groups = [...live];
  const killedBefore = groups.filter((g) => g.sigkilled).length;
  for (const g of groups) g.kill("SIGKILL");
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    Promise.all(groups.map((g) => g.exited)),
    new Promise((r) => (timer = setTimeout(r, timeoutMs))),
  ]);
  clearTimeout(timer);
  return { killed: groups.length - killedBefore, killedBefore };
}

/** Sends SIGTERM to every provider's process group without waiting (for a crashing runtime). */
export function terminateProviderProcesses(): void {
  for (const g of live) g.kill("SIGTERM");
}
