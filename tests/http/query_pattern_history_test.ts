/**
 * GET /v0/history/{provider_id}/{device_id}: the OpenAPI patterns of `since_ms`, `until_ms` and
 * `step_ms` accept exactly the texts the server answers 200 for (epoch ms: 1 to 16 digits, at
 * most 2^53-1; step_ms: 1 to 10 digits), so a generated client is neither stricter nor looser.
 */
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { assertPatternAgrees, INTEGER_TEXTS } from "./_query_pattern_rig.ts";

Deno.test("the OpenAPI patterns of history since_ms/until_ms/step_ms accept exactly the texts the server answers 200", async () => {
  const fx = await startHttpFixture({ providers: 1 });
  try {
    const docPath = "/v0/history/{provider_id}/{device_id}";
    const path = "/v0/history/sim0/tempctl0";
    const texts = INTEGER_TEXTS;
    // The other end of the range fixed where any value of the field keeps the range valid.
    await assertPatternAgrees(fx, {
      docPath,
      path,
      field: "since_ms",
      texts,
      also: "until_ms=9007199254740991",
    });
    await assertPatternAgrees(fx, { docPath, path, field: "until_ms", texts, also: "since_ms=0" });
    // A range of one millisecond: no step makes more points than MAX_HISTORY_POINTS.
    await assertPatternAgrees(fx, {
      docPath,
      path,
      field: "step_ms",
      texts,
      also: "since_ms=0&until_ms=0",
    });
  } finally {
    await fx.close();
  }
});
