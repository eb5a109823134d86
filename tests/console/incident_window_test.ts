/**
 * The Incidents view's window words (console/incidents.js windowText): a record's window is said
 * against its trigger, and a window the runtime clamped to what its ring held (a device loss found
 * long after its date: src/history/incidents.ts #captureNow, docs/history.md) starts after the
 * trigger and says so.
 */
import assert from "node:assert/strict";
import { windowFact, windowText } from "../../console/incidents.js";

const AT = 1_795_871_180_961;

Deno.test("windowText gives the seconds before and after the trigger", () => {
  assert.equal(
    windowText({ at_epoch_ms: AT, from_epoch_ms: AT - 10_000, until_epoch_ms: AT + 5_000 }),
    "10 s before, 5 s after",
  );
  // Written at once (a stop): the window ends at the trigger.
  assert.equal(
    windowText({ at_epoch_ms: AT, from_epoch_ms: AT - 10_000, until_epoch_ms: AT }),
    "10 s before, 0 s after",
  );
});

Deno.test("windowText says a window starting after its trigger was clamped, never a negative 'before'", () => {
  const text = windowText({
    at_epoch_ms: AT,
    from_epoch_ms: AT + 95_000,
    until_epoch_ms: AT + 130_000,
  });
  assert.doesNotMatch(text, /-\d/, `a negative duration: ${text}`);
  assert.doesNotMatch(
    text,
    /\bbefore\b/,
    `a window after its trigger has nothing before it: ${text}`,
  );
  assert.equal(
    text,
    "95 s to 130 s after (clamped: the history ring had let go of its start)",
  );
});

Deno.test("windowText: a window starting less than a second after its trigger is clamped too", () => {
  // Rounded to whole seconds, the start reads "0 s", yet the trigger is outside the window.
  const text = windowText({
    at_epoch_ms: AT,
    from_epoch_ms: AT + 400,
    until_epoch_ms: AT + 30_000,
  });
  assert.match(text, /clamped/);
});

Deno.test("windowFact places the trigger on the chart, or says it is before a clamped window", () => {
  const normal = windowFact({
    at_epoch_ms: AT,
    from_epoch_ms: AT - 10_000,
    until_epoch_ms: AT + 5_000,
  });
  assert.match(normal, /the dashed line is the trigger/);
  const clamped = windowFact({
    at_epoch_ms: AT,
    from_epoch_ms: AT + 95_000,
    until_epoch_ms: AT + 130_000,
  });
  // The chart spans from..until: a trigger before it is not drawn, so no dashed line to point at.
  assert.doesNotMatch(clamped, /dashed line/, `the chart has no trigger line: ${clamped}`);
  assert.match(clamped, /starts 95 s after the trigger/);
  assert.match(clamped, /clamped/);
});
