/**
 * What the process was started with: its command-line arguments, its environment (read plainly,
 * unlike secretFromEnvironment, which takes a secret out of it) and the operating system it runs
 * on. For the composition root (main.ts, app/process.ts), which must not call Deno.* itself.
 */

/** The operating system this process runs on (Deno's names: "linux", "darwin", "windows", ...). */
export type OperatingSystem = typeof Deno.build.os;

/** The operating system this process runs on. */
export function operatingSystem(): OperatingSystem {
  return Deno.build.os;
}

/** The process's command-line arguments after the script (or the compiled binary's name). */
export function commandLineArguments(): readonly string[] {
  return Deno.args;
}

/**
 * An environment variable, or undefined when unset or not readable with this permission set. A
 * plain read: the variable stays in the environment (secrets go through secretFromEnvironment).
 */
export function readEnvironment(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined; // a binary compiled without --allow-env for it: as if unset
  }
}
