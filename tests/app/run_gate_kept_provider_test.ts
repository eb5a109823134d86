/**
 * providerWeakenings and keptProviderRefusal (src/app/run_gate.ts): which provider each lost
 * protection belongs to, and the refusal of only those of providers that still run.
 */
import assert from "node:assert/strict";
import { keptProviderRefusal, providerWeakenings } from "../../src/app/run_gate.ts";
import type { Config } from "../../src/config/mod.ts";
import { load } from "../config/_helpers.ts";

function cfg(yaml: string): Config {
  const r = load(yaml);
  assert.ok(r.config, JSON.stringify(r.diagnostics));
  return r.config;
}

const RUNNING = { actuatingFunctions: 1, longerStaleBounds: () => [], slowerPolls: () => [] };

const PROVIDERS = "providers: [{id: sim0, command: prov}, {id: sim1, command: prov}]\n";

const BEFORE = `${PROVIDERS}
alarms:
  - {id: a1, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: fault}
  - {id: a0, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: estop}
interlocks:
  - id: blocks_sim1
    block: [sim1/motorctl0/set_motor_duty]
    while: 'sim0/tempctl0/tc1_temp > 1000'
    message: reads sim0, blocks sim1
safety:
  safe_state:
    setpoints:
      - {device_handle: sim1/motorctl0, function_name: set_motor_duty, args: {motor_index: 1, duty: 0.0}}
    expect:
      - {signal: sim0/motorctl0/motor1_duty, equals: 0}
`;

const AFTER = `${PROVIDERS}
safety:
  safe_state: {}
`;

Deno.test("providerWeakenings names the provider of each lost protection: an interlock by what it reads and what it blocks, a ladder setpoint by its device, an expectation by its signal", () => {
  const ws = providerWeakenings(cfg(BEFORE), cfg(AFTER), RUNNING);
  assert.deepEqual(ws.map((w) => [w.section, w.what, w.providers]), [
    ["safety", "the e-stop no longer sets sim1/motorctl0 set_motor_duty", ["sim1"]],
    ["safety", "the e-stop no longer verifies sim0/motorctl0/motor1_duty", ["sim0"]],
    ["alarms", "interlock blocks_sim1 removed", ["sim0", "sim1"]],
    ["alarms", "alarm a1 (action fault) removed", ["sim1"]],
    ["alarms", "alarm a0 (action estop) removed", ["sim0"]],
  ]);
});

Deno.test("keptProviderRefusal names each kept provider with only its own protections, and is null when none of the weakenings is theirs", () => {
  const ws = providerWeakenings(cfg(BEFORE), cfg(AFTER), RUNNING).filter((w) =>
    w.section === "alarms"
  );
  assert.equal(
    keptProviderRefusal(ws, new Map([["sim1", "why"]])),
    "provider sim1 still runs (why): its protections are kept: interlock blocks_sim1 removed; " +
      "alarm a1 (action fault) removed",
  );
  assert.equal(keptProviderRefusal(ws, new Map([["sim2", "why"]])), null);
  assert.equal(keptProviderRefusal(ws, new Map()), null);
});
