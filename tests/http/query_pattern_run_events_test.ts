/**
 * GET /v0/runs/{run_id}/events: the OpenAPI pattern of `after_sequence` accepts exactly the texts
 * the server answers 200 for (1 to 16 digits, at most 2^53-1), so a generated client is neither
 * stricter nor looser. (limit/offset: runs_page_pattern_test.ts.)
 */
import { withRunsFixture } from "../helpers/runtime_fixture.ts";
import { assertPatternAgrees, INTEGER_TEXTS } from "./_query_pattern_rig.ts";

Deno.test("the OpenAPI pattern of run-events after_sequence accepts exactly the texts the server answers 200", async () => {
  await withRunsFixture({ prefix: "http-after-pattern-" }, async ({ fx }) => {
    const id = (await fx.request("POST", "/v0/runs", { body: {} })).json.run.run_id;
    await assertPatternAgrees(fx, {
      docPath: "/v0/runs/{run_id}/events",
      path: `/v0/runs/${id}/events`,
      field: "after_sequence",
      texts: INTEGER_TEXTS,
    });
  });
});
