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
const RUNNING = { actuatingFunctions: 1, longerStaleBounds: () => [] };

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
