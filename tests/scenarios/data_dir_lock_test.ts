/**
 * Two runtimes on one runtime.data_dir (a second one started by hand beside the service, with the
 * same configuration): the second is refused at once -- exit 3 naming the folder and the holder's
 * pid -- before it writes anything there or spawns a provider; the first runs on, its open run
 * untouched. Once the first has stopped, the folder is free. Real processes.
 */
import assert from "node:assert/strict";
import {
  freePort,
  providerYaml,
  runtimeStatus,
  scriptedCommand,
  spawnRuntime,
  startRuntimeOnFreePort,
  within,
  writeRuntimeConfig,
} from "./process_helpers.ts";

Deno.test("a second runtime on the same data_dir is refused (exit 3) before it touches the folder or spawns a provider", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-data-dir-lock-" });
  const logA = `${dir}/provider-a.log`;
  const logB = `${dir}/provider-b.log`;
  let configA = "";
  const { port, rt } = await startRuntimeOnFreePort(async (port) => {
    configA = await writeRuntimeConfig(dir, {
      port,
      providers: providerYaml("p", scriptedCommand(["--log", logA])),
    });
    return configA;
  });
  try {
    assert.ok(await runtimeStatus(port));
    const opened = await fetch(`http://127.0.0.1:${port}/v0/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ experiment_label: "first" }),
    });
    assert.equal(opened.status, 200, await opened.clone().text());
    const runId = (await opened.json()).run.run_id as string;
    const runsFile = `${dir}/data/runs.jsonl`;
    const before = await Deno.readTextFile(runsFile);

    // The same configuration but its port (and its provider's log, to see whether it spawned).
    const configB = `${dir}/runtime-b.yaml`;
    await Deno.writeTextFile(
      configB,
      (await Deno.readTextFile(configA)).replace(`port: ${port}`, `port: ${freePort()}`)
        .replaceAll(logA, logB),
    );
    const second = spawnRuntime(configB);
    const exit = await within(second.exit, 30_000);
    if (exit === "timeout") {
      await second.dispose();
      assert.fail("the second runtime did not end");
    }
    assert.equal(exit.code, 3, exit.stderr);
    assert.match(
      exit.stderr,
      new RegExp(
        `runtime\\.data_dir ${dir}/data is in use by another runtime \\(pid ${rt.child.pid}\\)`,
      ),
    );
    assert.equal(
      await Deno.stat(logB).then(() => true, () => false),
      false,
      "the second runtime spawned no provider",
    );
    assert.equal(await Deno.readTextFile(runsFile), before, "runs.jsonl untouched");
    const run = await (await fetch(`http://127.0.0.1:${port}/v0/runs/${runId}`)).json();
    assert.equal(run.run.state, "open", "the first runtime's run is still open");
    assert.ok(await runtimeStatus(port), "the first runtime still answers");

    rt.child.kill("SIGTERM");
    const ended = await within(rt.exit, 30_000);
    assert.notEqual(ended, "timeout");
    // Free again: the same configuration starts.
    const { rt: again } = await startRuntimeOnFreePort(async (p) => {
      await Deno.writeTextFile(
        configB,
        (await Deno.readTextFile(configA)).replace(`port: ${port}`, `port: ${p}`),
      );
      return configB;
    });
    await again.dispose();
  } finally {
    await rt.dispose();
    await Deno.remove(dir, { recursive: true });
  }
});
