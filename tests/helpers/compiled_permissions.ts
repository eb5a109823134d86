/**
 * The permissions `deno task compile` bakes into the single binary, read from deno.json: what the
 * tests run the runtime with (tests/helpers/runtime_process.ts, cli.ts, the scenarios), so that a
 * read the binary is refused (an environment variable, the process's own /proc files) fails a test
 * here instead of a deployment.
 */
const DENO_JSON = new URL("../../deno.json", import.meta.url).pathname;

/** A permission flag of `deno run` / `deno compile`: --allow-*, --deny-*, --ignore-*. */
const PERMISSION_FLAG = /^--(allow|deny|ignore)-[a-z]+(=\S+)?$/;

/** The permission flags of a compile task of deno.json (default `compile`, the runtime's). */
export function compiledPermissions(task = "compile"): string[] {
  const tasks = JSON.parse(Deno.readTextFileSync(DENO_JSON)).tasks as Record<string, string>;
  const line = tasks[task];
  if (line === undefined) throw new Error(`deno.json: task '${task}' is missing`);
  const flags = line.split(/\s+/).filter((w) => PERMISSION_FLAG.test(w));
  if (flags.length === 0) throw new Error(`deno.json: task '${task}' grants no permission`);
  return flags;
}

/** Only the environment flags of a compile task (`--allow-env=<list>`, `--ignore-env`). */
export function compiledEnvPermissions(task = "compile"): string[] {
  return compiledPermissions(task).filter((f) => /^--(allow|deny|ignore)-env\b/.test(f));
}
