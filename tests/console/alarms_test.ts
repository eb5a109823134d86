/**
 * The console's alarm bookkeeping (console/alarms.js), run here under Deno: an `alarm` or
 * `interlock` event applied to what GET /v0/alarms / /v0/interlocks answered, the header's
 * counts, which alarms may be shelved, and the bounds the page shares with the runtime.
 */
import assert from "node:assert/strict";
import {
  actedAt,
  alarmCounts,
  applyAlarmEvent,
  applyInterlockEvent,
  causeText,
  MAX_ALARM_TRANSITIONS,
  MAX_SHELVE_MS,
  SHELVE_CHOICES,
  shelveRefusal,
} from "../../console/alarms.js";
import {
  MAX_ALARM_TRANSITIONS as RUNTIME_MAX_TRANSITIONS,
  MAX_SHELVE_MS as RUNTIME_MAX_SHELVE_MS,
} from "../../src/alarms/mod.ts";

const dbl = (x: number) => ({ type: "double", double: x });

/** An alarm as GET /v0/alarms lists it, normal. */
function listed(over: Record<string, unknown> = {}) {
  return {
    id: "tc1_high",
    signal: "sim0/tempctl0/tc1_temp",
    message: "Heater above 50 °C",
    action: "none",
    state: "normal",
    level: null,
    cause: null,
    limit: null,
    value: dbl(40),
    quality: "OK",
    bad_input: null,
    since_epoch_ms: null,
    shelved_until_epoch_ms: null,
    limits: { hi: 50 },
    alarm_when: null,
    hysteresis: 2,
    delay_ms: 0,
    on_bad_quality: "alarm",
    transitions: [] as { at_epoch_ms: number }[],
    ...over,
  };
}

/** An `alarm` event's data. */
function event(over: Record<string, unknown>) {
  return {
    alarm_id: "tc1_high",
    transition: "raise",
    state: "active",
    level: "MINOR",
    cause: "hi",
    limit: 50,
    signal: "sim0/tempctl0/tc1_temp",
    value: dbl(50.5),
    quality: "OK",
    action: "none",
    message: "Heater above 50 °C",
    shelved_until_epoch_ms: null,
    timestamp_ms: 1000,
    ...over,
  };
}

Deno.test("applyAlarmEvent takes the event's state and appends its transition", () => {
  const before = listed();
  const after = applyAlarmEvent(before, event({}));
  assert.equal(after.state, "active");
  assert.equal(after.level, "MINOR");
  assert.equal(after.cause, "hi");
  assert.equal(after.limit, 50);
  assert.deepEqual(after.value, dbl(50.5));
  assert.equal(after.since_epoch_ms, 1000);
  assert.deepEqual(after.transitions, [{
    transition: "raise",
    state: "active",
    level: "MINOR",
    cause: "hi",
    limit: 50,
    value: dbl(50.5),
    quality: "OK",
    at_epoch_ms: 1000,
  }]);
  assert.deepEqual(after.limits, { hi: 50 }, "what the event does not carry is kept");
  assert.equal(before.state, "normal", "the listed alarm is left as it was");
  assert.deepEqual(before.transitions, []);
});

Deno.test("applyAlarmEvent keeps the last MAX_ALARM_TRANSITIONS transitions, as the runtime does", () => {
  assert.equal(MAX_ALARM_TRANSITIONS, RUNTIME_MAX_TRANSITIONS);
  let a = listed();
  for (let i = 1; i <= MAX_ALARM_TRANSITIONS + 1; i++) {
    a = applyAlarmEvent(a, event({ transition: i % 2 ? "raise" : "clear", timestamp_ms: i }));
  }
  assert.equal(a.transitions.length, MAX_ALARM_TRANSITIONS);
  assert.equal(a.transitions[0]!.at_epoch_ms, 2, "the oldest went first");
  assert.equal(a.transitions.at(-1)?.at_epoch_ms, MAX_ALARM_TRANSITIONS + 1);
});

Deno.test("applyAlarmEvent forgets the bad input on a clear or a limit raise, keeps it otherwise", () => {
  const bad = listed({
    state: "active",
    level: "MAJOR",
    cause: "bad_quality",
    bad_input: "stale: 3000 ms old",
  });
  assert.equal(applyAlarmEvent(bad, event({ transition: "ack" })).bad_input, "stale: 3000 ms old");
  assert.equal(
    applyAlarmEvent(bad, event({ transition: "raise", cause: "bad_quality" })).bad_input,
    "stale: 3000 ms old",
  );
  assert.equal(applyAlarmEvent(bad, event({ transition: "clear" })).bad_input, null);
  assert.equal(applyAlarmEvent(bad, event({ transition: "raise", cause: "hi" })).bad_input, null);
});

Deno.test("applyInterlockEvent takes blocking, reason and since from the event; another reason while blocking keeps the engage date", () => {
  const il = {
    id: "hot",
    message: "m",
    condition: "sim0/tempctl0/tc1_temp > 45",
    block: ["sim0/motorctl0/set_motor_duty"],
    blocking: false,
    reason: null,
    since_epoch_ms: null,
    inputs: [{ signal: "sim0/tempctl0/tc1_temp", value: dbl(40), quality: "OK", bad_input: null }],
    unresolved_block: [],
  };
  const engaged = applyInterlockEvent(il, {
    interlock_id: "hot",
    blocking: true,
    reason: "sim0/tempctl0/tc1_temp = 46",
    message: "m",
    block: ["sim0/motorctl0/set_motor_duty"],
    timestamp_ms: 5,
  });
  assert.equal(engaged.blocking, true);
  assert.equal(engaged.reason, "sim0/tempctl0/tc1_temp = 46");
  assert.equal(engaged.since_epoch_ms, 5);
  assert.equal(engaged.condition, il.condition);
  assert.equal(il.blocking, false);
  // Another reason while it keeps blocking: the reason is new, the engage date stays.
  const still = applyInterlockEvent(engaged, {
    interlock_id: "hot",
    blocking: true,
    reason: "bad input: sim0/tempctl0/tc1_temp is FAULT",
    message: "m",
    block: ["sim0/motorctl0/set_motor_duty"],
    timestamp_ms: 9,
  });
  assert.equal(still.reason, "bad input: sim0/tempctl0/tc1_temp is FAULT");
  assert.equal(still.since_epoch_ms, 5, "since it engaged, as GET /v0/interlocks says");
  const released = applyInterlockEvent(still, {
    ...still,
    blocking: false,
    reason: null,
    timestamp_ms: 12,
  });
  assert.equal(released.since_epoch_ms, 12);
});

Deno.test("alarmCounts counts active unacknowledged alarms by level, and the others apart", () => {
  assert.deepEqual(alarmCounts([]), { MAJOR: 0, MINOR: 0, acked: 0, shelved: 0 });
  assert.deepEqual(
    alarmCounts([
      listed({ state: "active", level: "MAJOR" }),
      listed({ state: "active", level: "MINOR" }),
      listed({ state: "active", level: "MINOR" }),
      listed({ state: "active_acked", level: "MAJOR" }),
      listed({ state: "shelved", level: "MINOR" }),
      listed({ state: "normal" }),
      // Not expected from the runtime; counted as the worse level rather than hidden.
      listed({ state: "active", level: null }),
    ]),
    { MAJOR: 2, MINOR: 2, acked: 1, shelved: 1 },
  );
});

Deno.test("shelveRefusal allows action none only, saying why for fault and estop", () => {
  assert.equal(shelveRefusal({ action: "none" }), "");
  assert.equal(
    shelveRefusal({ action: "estop" }),
    "Cannot be shelved: its action estop stops the machine.",
  );
  assert.equal(
    shelveRefusal({ action: "fault" }),
    "Cannot be shelved: its action fault faults the machine.",
  );
});

Deno.test("the shelve durations offered are within the runtime's bound, the longest at it", () => {
  assert.equal(MAX_SHELVE_MS, RUNTIME_MAX_SHELVE_MS);
  const ms = SHELVE_CHOICES.map((c) => c.ms);
  assert.deepEqual(ms, [...ms].sort((a, b) => a - b));
  assert.ok(ms.every((x) => Number.isInteger(x) && x >= 1 && x <= RUNTIME_MAX_SHELVE_MS));
  assert.equal(ms.at(-1), RUNTIME_MAX_SHELVE_MS);
});

Deno.test("causeText says what holds an alarm", () => {
  assert.equal(causeText(listed()), "");
  assert.equal(causeText(listed({ cause: "hihi", limit: 60 })), "hihi 60");
  assert.equal(causeText(listed({ cause: "alarm_when", limit: "open" })), 'alarm_when "open"');
  assert.equal(
    causeText(listed({ cause: "bad_quality", bad_input: "stale: 3000 ms old" })),
    "bad input: stale: 3000 ms old",
  );
  assert.equal(
    causeText(listed({ cause: "bad_quality", quality: "UNAVAILABLE" })),
    "bad input: quality UNAVAILABLE",
  );
});

Deno.test("actedAt is the time of the answer's own transition, else the runtime's clock now", () => {
  const alarm = (transitions: unknown[]) => ({ id: "a", transitions });
  const ack = { transition: "ack", at_epoch_ms: 1_000 };
  const raise = { transition: "raise", at_epoch_ms: 900 };
  assert.equal(actedAt(alarm([raise, ack]), "ack", 5_000), 1_000);
  // Its last transition is not this action's (a raise after an earlier ack): the clock.
  assert.equal(actedAt(alarm([ack, raise]), "ack", 5_000), 5_000);
  assert.equal(actedAt(alarm([raise, ack]), "shelve", 5_000), 5_000);
  assert.equal(actedAt(alarm([]), "unshelve", 5_000), 5_000);
  assert.equal(actedAt({ id: "a" }, "ack", 5_000), 5_000);
});
