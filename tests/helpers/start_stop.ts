/**
 * The runtime started and stopped once, for what it says at start: one inert simulated provider,
 * the compiled binary's permissions (deno.json `compile` --allow-env list, so the single binary
 * would see the same variables), `env` added to the test's environment. Resolves with its stderr.
 */
import assert from "node:assert/strict";
import { freePort, startRuntimeChild } from "./runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "./sim_config.ts";

export async function stderrOfStartAndStop(env: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-start-stop-" });
  try {
    const port = freePort();
    await Deno.writeTextFile(
      `${dir}/runtime.yaml`,
      `runtime: {data_dir: ${dir}/data}
http: {port: ${port}}
providers:
  - id: sim0
    command: ${Deno.execPath()}
    args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}]
`,
    );
    const rt = await startRuntimeChild({
      config: `${dir}/runtime.yaml`,
      port,
      env,
      permissions: "compiled",
    });
    assert.equal(await rt.stop(), 0, rt.stderr());
    return rt.stderr();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
