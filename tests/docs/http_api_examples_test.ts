/**
 * Every captured `$ curl ...` example of docs/http-api.md, run against the real demo in document
 * order and compared with the documented answer (how: tests/docs/_doc_examples.ts).
 */
import assert from "node:assert/strict";
import { checkDocExamples } from "./_doc_examples.ts";

Deno.test("docs/http-api.md: every captured curl example answers as documented by the demo", async () => {
  const { checked, skipped } = await checkDocExamples("docs/http-api.md");
  // Pinned so that an example cannot silently stop being checked.
  assert.equal(skipped.length, 2, `skipped blocks: ${skipped.join(", ")}`);
  assert.equal(checked, 53, "examples checked");
});
