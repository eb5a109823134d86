/** Runs the `runtime` command line as a real child process (`deno run src/main.ts ...` with the compiled binary's permissions). */
import { compiledPermissions } from "./compiled_permissions.ts";
import { freePort, PORT_ATTEMPTS } from "./ports.ts";
const MAIN = new URL("../../src/main.ts", import.meta.url).pathname;

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs `src/main.ts` with `args` and collects its exit code and output. With `killAfterMs`, a run
 * still going then is killed (SIGKILL) and answered with code -1: for a command that must not hang.
 */
export async function runCli(
  args: string[],
  opts: { cwd?: string; env?: Record<string, string>; killAfterMs?: number } = {},
): Promise<CliRun> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", ...compiledPermissions(), "--quiet", MAIN, ...args],
    ...(opts.cwd === undefined ? {} : { cwd: opts.cwd }),
    env: { NO_COLOR: "1", ...opts.env },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const timer = opts.killAfterMs === undefined
    ? undefined
    : setTimeout(() => child.kill("SIGKILL"), opts.killAfterMs);
  const out = await child.output();
  clearTimeout(timer);
  const text = new TextDecoder();
  const code = out.signal === "SIGKILL" ? -1 : out.code;
  return { code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

/**
 * {@link runCli} for a start that gets to the HTTP port probe (before any provider is spawned)
 * and must get past it: `--port` a free port, not the default 8080 another process may hold, and
 * run again on another port, up to PORT_ATTEMPTS times, when a stranger took it first.
 */
export async function runCliOnFreePort(
  args: string[],
  opts: { cwd?: string; env?: Record<string, string>; killAfterMs?: number } = {},
): Promise<CliRun> {
  for (let attempt = 1;; attempt++) {
    const port = freePort();
    const r = await runCli([...args, "--port", String(port)], opts);
    const taken = r.stderr.includes(`cannot listen on 127.0.0.1:${port}: Address already in use`);
    if (!taken || attempt >= PORT_ATTEMPTS) return r;
  }
}

/**
 * A `safety:` section giving `device` a safe-state hook and an expectation. Appended to a fixture,
 * it keeps `--check-config`'s e-stop review (no safe state, no expectations) out of its output.
 */
export function safetySection(device = "p0/d0"): string {
  return `safety:
  safe_state:
    hooks: [{device_handle: ${device}, function_name: stop}]
    expect: [{signal: ${device}/stopped, equals: true}]
`;
}

/** Runs `fn` with a temp folder holding the given files (sub-folders allowed); removes it after. */
export async function withFiles(
  files: Record<string, string>,
  fn: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-cli-" });
  try {
    for (const [name, text] of Object.entries(files)) {
      await Deno.mkdir(`${dir}/${name}`.replace(/\/[^/]*$/, ""), { recursive: true });
      await Deno.writeTextFile(`${dir}/${name}`, text);
    }
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
