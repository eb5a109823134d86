/**
 * GET /metrics of a runtime run with the compiled binary's permissions (deno.json `compile`:
 * no --allow-all) carries the process's CPU time. Deno refuses a process without --allow-all its
 * own /proc files (NotCapable on /proc/self/stat), so the figure read from there was left out of
 * the single binary's metrics while every test, run with -A, saw it.
 */
import assert from "node:assert/strict";
import { freePort, startRuntimeChild } from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";

Deno.test("the compiled binary's permissions: GET /metrics has runtime_process_cpu_seconds_total", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-metrics-compiled-" });
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
      permissions: "compiled",
    });
    try {
      const text = await (await fetch(`${rt.base}/metrics`)).text();
      const line = text.split("\n").find((l) => l.startsWith("runtime_process_cpu_seconds_total "));
      assert.ok(
        line !== undefined,
        text.split("\n").filter((l) => l.includes("process")).join("\n"),
      );
      assert.ok(Number(line.split(" ")[1]) > 0, line);
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
