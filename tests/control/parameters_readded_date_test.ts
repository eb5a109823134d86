/**
 * A parameter a reload removes and a later reload declares again: both are `parameter_change`
 * events of that parameter (new_value "", then old_value ""), and docs/http-api.md dates a
 * `parameter_change` no earlier than its parameter's change before it (a step back of the wall
 * clock: NTP). A reader ordering by time (telemetry's runtime_parameter_change rows, an SSE client)
 * must not see the parameter added before it was removed: it would conclude that it is gone. The
 * real ParameterStore with a wall clock the test sets, as parameters_test.ts's step-back test.
 */
import assert from "node:assert/strict";
import type { ParameterConfig } from "../../src/config/mod.ts";
import { ParameterStore } from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";

const W = 1_767_000_000_000;

const TEMP: ParameterConfig = {
  name: "temp",
  type: "double",
  default: 30,
  min: 10,
  max: 80,
  allowedValues: [],
};
const COUNT: ParameterConfig = {
  name: "count",
  type: "int64",
  default: 5,
  min: 0,
  max: 10,
  allowedValues: [],
};

Deno.test("ParameterStore dates a parameter declared again no earlier than its removal when the wall clock stepped back (NTP)", () => {
  let wall = W;
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  const clock = { ...systemClock, nowMs: () => wall };
  const s = new ParameterStore({ parameters: [TEMP, COUNT], bus, clock, log: testLogger() });
  s.redeclare([COUNT]); // a reload removes temp: parameter_change temp 30.000000 -> ""
  wall = W - 10_000; // NTP steps the wall clock back 10 s
  s.redeclare([TEMP, COUNT]); // a later reload declares it again: "" -> 30.000000
  wall = W + 5_000; // past it again: the clock's own time
  s.set("temp", 40);
  assert.deepEqual(
    events.map((e) =>
      e.kind === "parameter_change" &&
      [e.parameter_name, e.old_value, e.new_value, e.timestamp_ms - W]
    ),
    [
      ["temp", "30.000000", "", 0],
      ["temp", "", "30.000000", 0],
      ["temp", "30.000000", "40.000000", 5_000],
    ],
    "declared again no earlier than its removal",
  );
});
