/**
 * MALLOC_ARENA_MAX: the systemd unit and the start tasks set it (docs/deployment.md, "Memory: V8
 * and malloc settings"); a compiled binary cannot carry it. Started without it (or with it empty),
 * the runtime says so in one INFO line at start; with it set, nothing. Run with the compiled
 * binary's permissions (deno.json `compile` --allow-env list), so the single binary can read it.
 */
import assert from "node:assert/strict";
import { freePort, startRuntimeChild } from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";

async function runWithEnv(env: Record<string, string>): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-arena-" });
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

Deno.test(
  {
    name: "runtime says at start, once, that MALLOC_ARENA_MAX is not set",
    ignore: Deno.build.os !== "linux",
  },
  async () => {
    const stderr = await runWithEnv({ MALLOC_ARENA_MAX: "" });
    const lines = stderr.split("\n").filter((l) => l.includes("MALLOC_ARENA_MAX"));
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0]!, /^INFO {2}\S+ MALLOC_ARENA_MAX is not set: .*MALLOC_ARENA_MAX=2/);
  },
);

Deno.test("runtime says nothing about MALLOC_ARENA_MAX when it is set", async () => {
  const stderr = await runWithEnv({ MALLOC_ARENA_MAX: "2" });
  assert.ok(!stderr.includes("MALLOC_ARENA_MAX"), stderr);
});
