/**
 * GET /v0/audit: the OpenAPI patterns of `since`, `until` and `limit` accept exactly the texts the
 * server answers 200 for (epoch ms: 1 to 16 digits, at most 2^53-1; limit: 1 to
 * AUDIT_PAGE_LIMIT.max in at most 7 digits), so a generated client is neither stricter nor looser.
 */
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { assertPatternAgrees, INTEGER_TEXTS } from "./_query_pattern_rig.ts";

Deno.test("the OpenAPI patterns of audit since/until/limit accept exactly the texts the server answers 200", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const texts = INTEGER_TEXTS;
    const at = { docPath: "/v0/audit", path: "/v0/audit", texts };
    await assertPatternAgrees(fx, { ...at, field: "since", also: "until=9007199254740991" });
    await assertPatternAgrees(fx, { ...at, field: "until", also: "since=0" });
    await assertPatternAgrees(fx, { ...at, field: "limit" });
  } finally {
    await fx.close();
  }
});
