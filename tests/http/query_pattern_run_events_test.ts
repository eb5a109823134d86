/**
 * GET /v0/runs/{run_id}/events: the OpenAPI pattern of `after_sequence` accepts exactly the texts
 * the server answers 200 for (1 to 16 digits, at most 2^53-1), so a generated client is neither
 * stricter nor looser. (limit/offset: runs_page_pattern_test.ts.)
 */
import { journalFiles, systemClock } from "../../src/host/mod.ts";
import { RunRegistry } from "../../src/runs/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { assertPatternAgrees, INTEGER_TEXTS } from "./_query_pattern_rig.ts";

Deno.test("the OpenAPI pattern of run-events after_sequence accepts exactly the texts the server answers 200", async () => {
  const dataDir = await Deno.makeTempDir({ prefix: "http-after-pattern-" });
  const runs = new RunRegistry({
    dataDir,
    runtimeName: "t",
    pollingIntervalMs: 100,
    files: journalFiles,
    clock: systemClock,
    logger: testLogger(),
  });
  await runs.start();
  const fx = await startHttpFixture({ start: false, services: { runs } });
  try {
    const id = (await fx.request("POST", "/v0/runs", { body: {} })).json.run.run_id;
    await assertPatternAgrees(fx, {
      docPath: "/v0/runs/{run_id}/events",
      path: `/v0/runs/${id}/events`,
      field: "after_sequence",
      texts: INTEGER_TEXTS,
    });
  } finally {
    await fx.close();
    await runs.shutdown();
    await Deno.remove(dataDir, { recursive: true });
  }
});
