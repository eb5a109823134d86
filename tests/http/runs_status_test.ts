/**
 * A run registry that cannot start answers every runs request 503; GET /v0/runtime/status and
 * GET /metrics say so, with the reason, so an operator sees it without calling the runs API.
 */
import assert from "node:assert/strict";
import { withRunsFixture } from "../helpers/runtime_fixture.ts";

Deno.test("GET /v0/runtime/status and /metrics show a run registry that could not start, with its reason", async () => {
  // A data folder under a regular file: the registry's folder cannot be created.
  const dataDir = async (dir: string) => {
    await Deno.writeTextFile(`${dir}/not-a-folder`, "");
    return `${dir}/not-a-folder/data`;
  };
  await withRunsFixture({ prefix: "http-runs-status-", dataDir }, async ({ fx }) => {
    const open = await fx.request("POST", "/v0/runs", { body: {} });
    assert.equal(open.status, 503, open.text);

    const status = await fx.request("GET", "/v0/runtime/status");
    assert.equal(status.status, 200, status.text);
    assert.equal(status.json.runs?.available, false, status.text);
    assert.match(String(status.json.runs?.unavailable_reason), /not-a-folder/);
    assert.equal(status.json.runs.open_run_id, null);

    const metrics = await fx.request("GET", "/metrics");
    assert.match(metrics.text, /^runtime_runs_available 0$/m);
  });
});

Deno.test("GET /v0/runtime/status and /metrics show an available run registry and its open run", async () => {
  await withRunsFixture({ prefix: "http-runs-status-" }, async ({ fx, runs }) => {
    const { run } = await runs.open({});
    const status = await fx.request("GET", "/v0/runtime/status");
    assert.equal(status.json.runs?.available, true, status.text);
    assert.equal(status.json.runs.unavailable_reason, null);
    assert.equal(status.json.runs.open_run_id, run.run_id);
    const metrics = await fx.request("GET", "/metrics");
    assert.match(metrics.text, /^runtime_runs_available 1$/m);
  });
});
