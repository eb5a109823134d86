/**
 * keptAlarmsNarrowed (src/app/run_gate.ts): the alarms section of a file with the protections of
 * providers that still run left as they are in effect, the rest the file's; null where that cannot
 * be done (nothing else changes, a bound would be passed, a refused weakening names no entry).
 */
import assert from "node:assert/strict";
import { keptAlarmsNarrowed, providerWeakenings } from "../../src/app/run_gate.ts";
import { type Config, MAX_ALARMS } from "../../src/config/mod.ts";
import { load } from "../config/_helpers.ts";

function cfg(yaml: string): Config {
  const r = load(yaml);
  assert.ok(r.config, JSON.stringify(r.diagnostics));
  return r.config;
}

const RUNNING = { actuatingFunctions: 1, longerStaleBounds: () => [], slowerPolls: () => [] };
const PROVIDERS = "providers: [{id: sim0, command: prov}, {id: sim1, command: prov}]\n";
const KEPT = new Map([["sim1", "the providers section was refused"]]);

const BEFORE = cfg(`${PROVIDERS}
alarms:
  - {id: a1, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: fault}
  - {id: a0, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: estop}
  - {id: b1, signal: sim1/tempctl0/tc1_temp, hihi: 400, action: estop}
`);

function narrowed(after: Config) {
  return keptAlarmsNarrowed(
    BEFORE,
    after,
    providerWeakenings(BEFORE, after, RUNNING).filter((w) => w.section === "alarms"),
    KEPT,
  );
}

Deno.test("keptAlarmsNarrowed keeps the kept provider's removed and changed alarms as in effect, in file order then the removed, and applies the rest", () => {
  const after = cfg(`${PROVIDERS}
alarms:
  - {id: b1, signal: sim1/tempctl0/tc1_temp, hihi: 450, action: estop}
  - {id: a0, signal: sim0/tempctl0/tc1_temp, hihi: 400, action: estop}
`);
  const n = narrowed(after);
  assert.ok(n !== null);
  assert.deepEqual(n.next.alarms.map((a) => [a.id, a.limits.hihi]), [
    ["b1", 400],
    ["a0", 400],
    ["a1", 500],
  ]);
  assert.deepEqual(n.kept.map((w) => w.what), [
    "alarm a1 (action fault) removed",
    "alarm b1 (action estop) changed",
  ]);
  assert.deepEqual(n.rest.map((w) => w.what), ["alarm a0 (action estop) changed"]);
});

Deno.test("keptAlarmsNarrowed is null when only the kept provider's protections change (nothing else to apply)", () => {
  const after = cfg(`${PROVIDERS}
alarms:
  - {id: a0, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: estop}
`);
  assert.equal(narrowed(after), null);
});

Deno.test("keptAlarmsNarrowed is null when keeping them would pass MAX_ALARMS, and narrows at exactly MAX_ALARMS", () => {
  const fill = (n: number) =>
    Array.from({ length: n }, (_, i) => ({ ...BEFORE.alarms[1]!, id: `x${i}` }));
  // The file's own entries plus the kept a1 and b1 (both removed by the file).
  const at = { ...BEFORE, alarms: [BEFORE.alarms[1]!, ...fill(MAX_ALARMS - 3)] };
  assert.equal(narrowed(at)?.next.alarms.length, MAX_ALARMS);
  const past = { ...BEFORE, alarms: [BEFORE.alarms[1]!, ...fill(MAX_ALARMS - 2)] };
  assert.equal(narrowed(past), null);
});

Deno.test("keptAlarmsNarrowed is null when a refused weakening names no entry", () => {
  const after = cfg(`${PROVIDERS}
alarms:
  - {id: a0, signal: sim0/tempctl0/tc1_temp, hihi: 400, action: estop}
`);
  const weakens = providerWeakenings(BEFORE, after, RUNNING).filter((w) => w.section === "alarms")
    .map(({ section, what, providers }) => ({ section, what, providers }));
  assert.equal(keptAlarmsNarrowed(BEFORE, after, weakens, KEPT), null);
});
