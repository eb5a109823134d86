/**
 * The walkthrough of docs/automation.md ("the demo in AUTO"), run against the real demo command
 * by command and compared with the answers it shows (how: tests/docs/_doc_examples.ts). It waits
 * as a reader does (`sleep`), for the heating and for an injected 8 s signal fault: ~25 s.
 */
import assert from "node:assert/strict";
import { checkDocExamples } from "./_doc_examples.ts";

Deno.test("docs/automation.md: the walkthrough of the demo in AUTO answers as documented", async () => {
  const { checked, skipped } = await checkDocExamples("docs/automation.md", {
    commandBlocksOnly: true,
  });
  assert.deepEqual(skipped, []);
  assert.equal(checked, 19, "walkthrough commands checked");
});
