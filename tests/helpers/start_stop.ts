/**
 * The runtime run once as the single binary would run it: one inert simulated provider, the
 * compiled binary's permissions (deno.json `compile` --allow-env list and no --allow-all, so the
 * process sees the same variables and the same refusals), `env` added to the test's environment.
 */
import assert from "node:assert/strict";
import {
  type RuntimeChild,
  type RuntimeChildOptions,
  startRuntimeWithConfigOnFreePort,
} from "./runtime_process.ts";
import { simRuntimeConfig } from "./sim_config.ts";

/** How withInertRuntime starts the runtime (startRuntimeChild's options it passes on). */
export type InertRuntimeOptions =
  & Pick<RuntimeChildOptions, "env" | "wrap" | "ownSession">
  & {
    /** More YAML under the sim's provider entry (e.g. its restart_policy), indented 4. */
    readonly providerYaml?: string;
  };

/**
 * Starts the runtime with one inert sim (waits for it to be ready), runs `fn` while it runs, stops
 * it (exit code 0 asserted) and resolves with everything it wrote to stderr.
 */
export async function withInertRuntime(
  o: InertRuntimeOptions,
  fn: (rt: RuntimeChild) => Promise<void>,
): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-inert-" });
  try {
    const rt = await startRuntimeWithConfigOnFreePort(
      `${dir}/runtime.yaml`,
      (port) =>
        `runtime: {data_dir: ${dir}/data}
http: {port: ${port}}
${simRuntimeConfig()}${o.providerYaml ?? ""}`,
      {
        ...(o.env ? { env: o.env } : {}),
        ...(o.wrap ? { wrap: o.wrap } : {}),
        ...(o.ownSession ? { ownSession: true } : {}),
      },
    );
    try {
      await fn(rt);
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
    }
    return rt.stderr();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The runtime started and stopped once, for what it says at start: its stderr. */
export function stderrOfStartAndStop(env: Record<string, string>): Promise<string> {
  return withInertRuntime({ env }, () => Promise.resolve());
}
