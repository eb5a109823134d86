/**
 * The documented examples, each run against its own real demo and compared with the output the
 * document shows (how: tests/docs/_doc_examples.ts):
 * - README.md's quickstart, which takes a new user from nothing to "I moved the motor by hand,
 *   watched it, and pressed the e-stop"; its watch waits for the demo to heat (~13 s);
 * - every captured `$ curl` example of docs/http-api.md, in document order;
 * - the walkthrough of docs/automation.md (the demo in AUTO), which waits as a reader does
 *   (`sleep`) for the heating and for an injected signal fault (~20 s);
 * - the examples of docs/migrating-from-anolis.md (differences an anolis client notices).
 * The four run concurrently (they mostly wait), so the file costs about as long as the longest.
 * The counts pin how many examples ran, so that an example cannot silently stop being checked.
 */
import assert from "node:assert/strict";
import { checkDocExamples, type DocCheckReport } from "./_doc_examples.ts";

const DOCUMENTS: {
  file: string;
  commandBlocksOnly: boolean;
  checked: number;
  skipped: number;
}[] = [
  { file: "README.md", commandBlocksOnly: true, checked: 9, skipped: 0 },
  { file: "docs/http-api.md", commandBlocksOnly: false, checked: 61, skipped: 5 },
  { file: "docs/automation.md", commandBlocksOnly: true, checked: 19, skipped: 0 },
  { file: "docs/migrating-from-anolis.md", commandBlocksOnly: true, checked: 12, skipped: 0 },
];

Deno.test("The README quickstart, docs/http-api.md, the docs/automation.md walkthrough and the anolis migration examples answer as documented", async () => {
  const results = await Promise.allSettled(
    DOCUMENTS.map((d) => checkDocExamples(d.file, { commandBlocksOnly: d.commandBlocksOnly })),
  );
  const problems: string[] = [];
  results.forEach((r, i) => {
    const d = DOCUMENTS[i];
    if (r.status === "rejected") {
      problems.push(`${d!.file}: ${r.reason instanceof Error ? r.reason.message : r.reason}`);
      return;
    }
    const report: DocCheckReport = r.value;
    if (report.checked !== d!.checked) {
      problems.push(`${d!.file}: ${report.checked} examples checked, expected ${d!.checked}`);
    }
    if (report.skipped.length !== d!.skipped) {
      problems.push(`${d!.file}: skipped blocks ${report.skipped.join(", ") || "none"}`);
    }
  });
  assert.deepEqual(problems, []);
});
