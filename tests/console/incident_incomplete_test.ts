/**
 * The Incidents view says when a record is not whole (GET /v0/incidents `incomplete`: `torn`, a
 * file a power cut cut short; `damaged`, a signal line that does not parse; docs/history.md): the
 * list's samples column and the record's "Recorded" fact, never the bare counts of a whole one.
 */
import assert from "node:assert/strict";
import { recordedText, samplesText } from "../../console/incidents.js";

Deno.test("a whole record reads as its counts", () => {
  const whole = { samples: 36, signals: 3, incomplete: null };
  assert.equal(samplesText(whole), "36 (3 signals)");
  assert.equal(recordedText(whole), "36 samples of 3 signals");
});

Deno.test("a torn or damaged record says it is incomplete, and why", () => {
  const torn = { samples: 12, signals: 1, incomplete: "torn" };
  assert.equal(samplesText(torn), "12 (1 signals), incomplete (torn)");
  assert.match(recordedText(torn), /^12 samples of 1 signals; incomplete, torn: .*power cut/);
  const damaged = { samples: 24, signals: 2, incomplete: "damaged" };
  assert.equal(samplesText(damaged), "24 (2 signals), incomplete (damaged)");
  assert.match(recordedText(damaged), /damaged: a signal line could not be read/);
  // A reason this page does not know yet is still shown, not dropped.
  assert.match(
    samplesText({ samples: 1, signals: 1, incomplete: "future" }),
    /incomplete \(future\)/,
  );
});
