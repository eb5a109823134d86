import type { ProviderProcess, SpawnFn, SpawnOptions } from "../common/mod.ts";

/** Spawns a provider with piped stdio via Deno.Command. */
export const spawnProcess: SpawnFn = (options: SpawnOptions): ProviderProcess => {
  const child = new Deno.Command(options.command, {
    args: [...options.args],
    cwd: options.cwd,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const exited = child.status.then((s) => ({ code: s.code, signal: s.signal ?? null }));
  return {
    pid: child.pid,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    exited,
    kill(signal) {
      try {
        child.kill(signal);
      } catch {
        // already exited
      }
    },
  };
};
