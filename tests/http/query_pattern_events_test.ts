/**
 * GET /v0/events: the OpenAPI pattern of `last_event_id` accepts exactly the texts the server
 * answers 200 for (blank, `<boot>-<n>` or a plain number, spaces around it), so a generated
 * client is neither stricter nor looser.
 */
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { assertPatternAgrees } from "./_query_pattern_rig.ts";

/** Texts on both sides of parseLastEventId's forms and their length bounds. */
const TEXTS = [
  "",
  " ",
  "\t",
  "x",
  "-",
  "-1",
  "1-",
  "1.5",
  "3f9a0c12-57",
  " 3f9a0c12-57 ",
  "3F9A0C12-57",
  "3f9a 0c12-57",
  "3f9a0c12-57-1",
  "3f9a0c12_57",
  `${"a".repeat(32)}-1`,
  `${"a".repeat(33)}-1`,
  "a-123456789012345",
  "a-1234567890123456",
  "0",
  "57",
  " 57 ",
  "+57",
  "12345678901234567890",
  "123456789012345678901",
];

Deno.test("the OpenAPI pattern of events last_event_id accepts exactly the texts the server answers 200", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    await assertPatternAgrees(fx, {
      docPath: "/v0/events",
      path: "/v0/events",
      field: "last_event_id",
      texts: TEXTS,
    });
  } finally {
    await fx.close();
  }
});
