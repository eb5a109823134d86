/** The automation wired into the service (run records, HTTP over a socket) and the start-up check. */
import assert from "node:assert/strict";
import { RuntimeError, type SpawnFn } from "../../src/common/mod.ts";
import { spawnProcess } from "../../src/host/mod.ts";
import { newKernel, startServing } from "../helpers/kernel.ts";
import { automationConfig, MOTOR_THEN_SLEEP, TreeDir, treeXml } from "./automation_helpers.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

Deno.test("The service: a run opened over HTTP captures the tree version and appears in /v0/automation/status", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("recipe.xml", MOTOR_THEN_SLEEP);
    const config = automationConfig(tree, {
      config: { runtime: { dataDir: `${dir.path}/data` }, http: { port: 0 } },
    });
    const service = await startServing(config);
    try {
      const base = `http://127.0.0.1:${service.http!.port}/v0`;
      const opened = await apiFetch(`${base}/runs`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: "{}",
      });
      assert.equal(opened.status, 200);
      const { run } = await opened.json();
      const status = await (await apiFetch(`${base}/automation/status`)).json();
      assert.equal(status.run_id, run.run_id);
      assert.equal(status.automation_version.id, "recipe");
      assert.deepEqual(run.automation_version, status.automation_version);
    } finally {
      await service.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.start refuses a tree with errors, listing every diagnostic, before spawning providers", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "broken.xml",
      treeXml(`<Sequence>
      <NoSuchNode />
      <CallDevice device_handle="sim0/motorctl0" />
    </Sequence>`),
    );
    let spawned = 0;
    const spawn: SpawnFn = (o) => (spawned++, spawnProcess(o));
    const rt = newKernel(automationConfig(tree), { spawn });
    try {
      const err = await rt.start().then(() => null, (e) => e);
      assert.ok(err instanceof RuntimeError, String(err));
      assert.equal(err.code, "INVALID_ARGUMENT");
      assert.match(err.message, /Failed to load behavior tree .*broken\.xml: 2 error\(s\)/);
      assert.match(err.message, /broken\.xml:4:7: error: .*NoSuchNode/);
      assert.match(err.message, /broken\.xml:5:7: error: .*function_name/);
      assert.equal(spawned, 0);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
