/**
 * protectionWeakenings (src/app/run_gate.ts): what a reload takes away from the protections, judged
 * on configurations loaded by the real loader.
 */
import assert from "node:assert/strict";
import { protectionWeakenings } from "../../src/app/run_gate.ts";
import type { Config } from "../../src/config/mod.ts";
import { load } from "../config/_helpers.ts";

function cfg(yaml: string): Config {
  const r = load(yaml);
  assert.ok(r.config, JSON.stringify(r.diagnostics));
  return r.config;
}

/**
 * A machine with one actuating function and no stale bound that moves. The hook from any mode into
 * FAULT is also the e-stop's ladder (no `safety:` section: it adopts the hook's calls).
 */
const RUNNING = { actuatingFunctions: 1, longerStaleBounds: () => [], slowerPolls: () => [] };

function hooks(faultArgs: string, afterTransition = "[]"): string {
  return `
providers: [{id: sim0, command: prov}]
automation:
  enabled: true
  behavior_tree: /etc/rig/bt.xml
  mode_transition_hooks:
    before_transition:
      - from: "*"
        to: FAULT
        calls:
          - {device_handle: sim0/motorctl0, function_name: set_motor_duty, args: ${faultArgs}}
    after_transition: ${afterTransition}
`;
}

Deno.test("protectionWeakenings: a call into FAULT (a hook's, the e-stop's) whose args are written in another order is the same call, not a lost one", () => {
  const before = cfg(hooks("{motor_index: 1, duty: 0.0}"));
  // The hooks section changes (a hook added), and the FAULT call's args are written the other way.
  const next = cfg(hooks(
    "{duty: 0.0, motor_index: 1}",
    "[{from: MANUAL, to: IDLE, calls: [{device_handle: sim0/motorctl0, function_name: stop}]}]",
  ));
  assert.deepEqual(protectionWeakenings(before, next, RUNNING), []);
  // A call that really changed is still lost: by the hooks section, whose change it is (the safety
  // section, unchanged, is judged over the hooks in force when it applies).
  const changed = cfg(hooks("{motor_index: 2, duty: 0.0}"));
  assert.deepEqual(
    protectionWeakenings(before, changed, RUNNING).map((w) => [w.section, w.what]),
    [
      [
        "automation.mode_transition_hooks",
        "a hook into FAULT no longer calls sim0/motorctl0 set_motor_duty",
      ],
      [
        "automation.mode_transition_hooks",
        "the e-stop no longer calls sim0/motorctl0 set_motor_duty",
      ],
    ],
  );
});

function interlock(block: string): string {
  return `
providers: [{id: sim0, command: prov}]
interlocks:
  - id: hot
    block: ${block}
    while: sim0/tempctl0/tc1_temp > 400
    message: Motor held while hot
`;
}

Deno.test("protectionWeakenings: an interlock blocking the same functions listed in another order has not changed", () => {
  const before = cfg(interlock("[sim0/motorctl0/set_motor_duty, sim0/motorctl0/set_motor_speed]"));
  const next = cfg(interlock("[sim0/motorctl0/set_motor_speed, sim0/motorctl0/set_motor_duty]"));
  assert.deepEqual(protectionWeakenings(before, next, RUNNING), []);
  // One function fewer is a change.
  const fewer = cfg(interlock("[sim0/motorctl0/set_motor_speed]"));
  assert.deepEqual(
    protectionWeakenings(before, fewer, RUNNING).map((w) => [w.section, w.what]),
    [["alarms", "interlock hot changed"]],
  );
});

Deno.test("protectionWeakenings: a longer polling interval names the later dropout only when it is later (3 intervals, at least 500 ms)", () => {
  const polling = (ms: number) =>
    cfg(`providers: [{id: sim0, command: prov}]\npolling: {interval_ms: ${ms}}\n`);
  const what = (from: number, to: number) =>
    protectionWeakenings(polling(from), polling(to), RUNNING).map((w) => [w.section, w.what]);
  // 100 -> 150 ms: a dropout is found after 500 ms either way (the floor); alarms see changes later.
  assert.deepEqual(what(100, 150), [
    ["polling", "polling.interval_ms 100 -> 150 ms: alarms and interlocks see changes later"],
  ]);
  assert.deepEqual(what(100, 3000), [
    [
      "polling",
      "polling.interval_ms 100 -> 3000 ms: alarms and interlocks see changes later, " +
      "a device that drops out is found after 9000 ms instead of 500",
    ],
  ]);
  assert.deepEqual(what(3000, 100), []);
});

Deno.test("protectionWeakenings: a shorter polling interval or a laxer staleness under which devices are polled less often names them, at most three", () => {
  const file = (ms: number, warn = 300) =>
    cfg(
      `providers: [{id: sim0, command: prov}]\npolling: {interval_ms: ${ms}}\n` +
        `health: {staleness: {warn_after_ms: ${warn}, stale_after_ms: 5000}}\n`,
    );
  const asked: [number, number][] = [];
  const slower = ["a", "b", "c", "d"].map((d) => `"sim0/${d}" every 110 -> 200 ms`);
  const machine = {
    ...RUNNING,
    slowerPolls: (ms: number, staleness: { warnAfterMs: number }) => {
      asked.push([ms, staleness.warnAfterMs]);
      return slower;
    },
  };
  const what = (before: Config, next: Config) =>
    protectionWeakenings(before, next, machine).map((w) => [w.section, w.what]);
  const named = '"sim0/a" every 110 -> 200 ms; "sim0/b" every 110 -> 200 ms; ' +
    '"sim0/c" every 110 -> 200 ms; and 1 more device(s)';
  assert.deepEqual(what(file(110), file(100)), [
    ["polling", `polling.interval_ms 110 -> 100 ms: devices polled less often: ${named}`],
  ]);
  assert.deepEqual(asked.splice(0), [[100, 300]], "the file's interval, the staleness in force");
  assert.deepEqual(what(file(100), file(100, 0)), [
    ["health", `health.staleness: devices polled less often: ${named}`],
  ]);
  assert.deepEqual(asked.splice(0), [[100, 0]], "the interval in force, the file's staleness");
  // None polled less often: nothing weakened.
  assert.deepEqual(protectionWeakenings(file(110), file(100, 0), RUNNING), []);
});
