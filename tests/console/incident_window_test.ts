/**
 * The Incidents view's window words (console/incidents.js windowText): a record's window is said
 * against its trigger, and a window the runtime clamped to what its ring held (a device loss found
 * long after its date: src/history/incidents.ts #captureNow, docs/history.md) starts after the
 * trigger and says so. Its time (whenText): its lead's own, and, when the lead joined an incident
 * begun by a weaker trigger, when that one began (where the chart's dashed line is: markLabel);
 * its window, in the list and clamped on its page, is then said against that first trigger, named.
 */
import assert from "node:assert/strict";
import { formatTime } from "../../console/dom.js";
import { markLabel, whenText, windowFact, windowText } from "../../console/incidents.js";

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

Deno.test("whenText gives an incident's lead's own time, and when the incident it joined began", () => {
  const alone = { at_epoch_ms: AT, trigger_at_epoch_ms: AT, trigger: "estop", also: [] };
  assert.equal(whenText(alone), formatTime(AT));
  assert.equal(markLabel(alone), "E-stop");
  // A record of a version without trigger_at_epoch_ms: its lead's time was at_epoch_ms.
  const { trigger_at_epoch_ms: _, ...old } = alone;
  assert.equal(whenText(old), formatTime(AT));
  // An e-stop 500 ms after an alarm's incident began: it leads, the window stays the alarm's.
  const joined = {
    at_epoch_ms: AT,
    trigger_at_epoch_ms: AT + 500,
    trigger: "estop",
    from_epoch_ms: AT - 10_000,
    until_epoch_ms: AT + 10_000,
    also: [
      { trigger: "alarm", cause: "alarm hot: hi too hot", at_epoch_ms: AT },
      { trigger: "fault", cause: "mode MANUAL -> FAULT", at_epoch_ms: AT + 500 },
    ],
  };
  const when = whenText(joined);
  assert.ok(when.startsWith(formatTime(AT + 500)), `the e-stop's own time first: ${when}`);
  assert.match(when, /0\.500 s after the incident began at .*: Alarm raised/);
  assert.ok(when.includes(formatTime(AT)), when);
  assert.equal(markLabel(joined), "Alarm raised", "the dashed line is at the alarm's time");
  assert.match(windowFact(joined), /the dashed line is the first trigger, Alarm raised/);
});

/**
 * A device found down in AUTO forces FAULT at once, which joins the incident of the loss, dated
 * from its first failed read (max(500 ms, 3 x polling.interval_ms) earlier: docs/history.md): the
 * FAULT entry leads at its own time, the window stays around the loss.
 */
const LOST_THEN_FAULT = {
  at_epoch_ms: AT,
  trigger_at_epoch_ms: AT + 3_000,
  trigger: "fault",
  cause: "mode AUTO -> FAULT",
  also: [{ trigger: "device_loss", cause: "p0/probe is down", at_epoch_ms: AT }],
};

Deno.test("windowText: a window around a first trigger its lead joined later names that trigger", () => {
  // The list shows the FAULT entry's time: "10 s before, 10 s after" read against it is wrong by
  // the 3 s between the loss and the FAULT.
  const text = windowText({
    ...LOST_THEN_FAULT,
    from_epoch_ms: AT - 10_000,
    until_epoch_ms: AT + 10_000,
  });
  assert.equal(text, "10 s before, 10 s after the first trigger, Device lost");
  const clamped = windowText({
    ...LOST_THEN_FAULT,
    from_epoch_ms: AT + 95_000,
    until_epoch_ms: AT + 130_000,
  });
  assert.equal(
    clamped,
    "95 s to 130 s after the first trigger, Device lost " +
      "(clamped: the history ring had let go of its start)",
  );
  // The lead's own trigger: as before.
  assert.equal(
    windowText({
      ...LOST_THEN_FAULT,
      trigger_at_epoch_ms: AT,
      from_epoch_ms: AT - 10_000,
      until_epoch_ms: AT + 10_000,
    }),
    "10 s before, 10 s after",
  );
});

Deno.test("windowFact: a clamped window names the first trigger its lead joined later", () => {
  const clamped = windowFact({
    ...LOST_THEN_FAULT,
    from_epoch_ms: AT + 95_000,
    until_epoch_ms: AT + 130_000,
  });
  assert.match(
    clamped,
    /starts 95 s after the first trigger, Device lost, at .*, which the chart does not reach/,
  );
});
