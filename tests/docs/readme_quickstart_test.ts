/**
 * The README's quickstart ("Run the demo"), run against the real demo command by command and
 * compared with the output it shows (how: tests/docs/_doc_examples.ts). It takes a new user from
 * nothing to "I moved the motor by hand, watched it, and pressed the e-stop" (issue 23), so the
 * output it promises must be what they get. The watch waits for the demo to heat (~13 s).
 */
import assert from "node:assert/strict";
import { checkDocExamples } from "./_doc_examples.ts";

Deno.test("README.md: the quickstart answers as it shows", async () => {
  const { checked, skipped } = await checkDocExamples("README.md", { commandBlocksOnly: true });
  assert.deepEqual(skipped, []);
  assert.equal(checked, 9, "quickstart commands checked");
});
