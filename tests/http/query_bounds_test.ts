/**
 * A query number out of its range is refused naming the range (docs/http-api.md "History and
 * incidents", "Audit trail"): a year's `step_ms` or an epoch beyond 2^53 is a non-negative integer,
 * and being told it is not one leaves the client guessing.
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";

Deno.test("history step_ms and since/until of history and audit beyond their range are 400 naming the range", async () => {
  const fx = await startHttpFixture({ providers: 1 });
  try {
    for (
      const [path, message] of [
        [
          "/v0/history/sim0/tempctl0?step_ms=31536000000",
          "step_ms: must be a non-negative integer of milliseconds, at most 9999999999",
        ],
        [
          "/v0/history/sim0/tempctl0?since_ms=9007199254740992",
          "since_ms: must be epoch milliseconds (a non-negative integer, at most 9007199254740991)",
        ],
        [
          "/v0/audit?until=9007199254740992",
          "until: must be epoch milliseconds (a non-negative integer, at most 9007199254740991)",
        ],
      ] as const
    ) {
      const res = await fx.request("GET", path);
      assert.equal(res.status, 400, path);
      assert.equal(res.json.status.message, message, path);
    }
  } finally {
    await fx.close();
  }
});
