/**
 * A parameter set or a reload's redeclaration whose wall clock throws when its parameter_change is
 * dated: the value is in force as soon as it is stored, so what guards the recipe must follow it
 * whatever the clock does. A MANUAL -> AUTO running its before-hooks was requested with the value
 * before the set and is refused at its commit (AUTO is armed only with the recipe it was asked
 * with), the set is answered and recorded as accepted (not refused with the clock's error while
 * its value stands), and a redeclaration keeps every parameter of the new declaration (not only
 * those before the one whose change the clock could not date). The clock is asked once more; when
 * it fails again the change is not published (no invented time), one ERROR line each. In-process:
 * real modes over a router that holds each hook call until the test answers it, the real store,
 * and a clock whose nowMs throws while the test says so.
 */
import assert from "node:assert/strict";
import type { ParameterConfig } from "../../src/config/mod.ts";
import { type AuditDecision, ParameterStore } from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { call, hook } from "../safety/_fixture.ts";
import { errorLog, failingClock } from "../safety/_clock_rig.ts";
import { heldCalls, holdingRouter, hookModes, returnsInventory } from "./_mode_hook_rig.ts";

const PARAMS: ParameterConfig[] = [
  { name: "temp", type: "double", default: 30, min: 10, max: 80.5, allowedValues: [] },
  { name: "count", type: "int64", default: 5, min: 0, max: 10, allowedValues: [] },
];

/** The real store over a clock whose nowMs throws while `failing.on` (both reads of a change). */
function storeRig(modes?: { invalidateAutoEntry(why: string): void }) {
  const failing = { on: false };
  const fc = failingClock({ read: "nowMs", times: Infinity, when: () => failing.on });
  const { log, errors } = errorLog();
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  const audited: AuditDecision[] = [];
  const s = new ParameterStore({
    parameters: PARAMS,
    bus,
    clock: fc.clock,
    log,
    audit: { record: (d) => audited.push(d) },
    ...(modes === undefined ? {} : { modes }),
  });
  return { s, failing, errors, events, audited, failures: fc.failures };
}

Deno.test("ParameterStore.set while MANUAL -> AUTO runs its before-hooks, its clock failing to date the change: AUTO is refused at its commit, the set accepted", async () => {
  const { held, router } = holdingRouter();
  const { inventory } = returnsInventory();
  const modes = hookModes(router, inventory, [
    hook("MANUAL", "AUTO", [call("plant/plant0", "set_heater", { enabled: true })]),
  ]);
  await modes.request("MANUAL");
  const r = storeRig(modes);
  const entering = modes.requestWithReport("AUTO").then(
    (report) => ({ report, error: null }),
    (error: Error) => ({ report: null, error }),
  );
  await heldCalls(held, 1); // the before-hook's call is on the wire
  r.failing.on = true;
  let setError: unknown = null;
  let answer: unknown = null;
  try {
    answer = r.s.set("temp", 55);
  } catch (err) {
    setError = err;
  }
  r.failing.on = false;
  held[0]!.answer();
  const entered = await entering;
  // The safety point first: AUTO was requested with temp 30 and must not run with 55.
  assert.equal(modes.current(), "MANUAL", `AUTO committed: ${JSON.stringify(entered.report)}`);
  assert.match(
    entered.error?.message ?? "",
    /refusing AUTO: a parameter set changed the recipe \("temp" 30 -> 55\)/,
  );
  // The set is in force: answered and recorded as such.
  assert.equal(setError, null, `the set failed: ${String(setError)}`);
  assert.deepEqual(answer, { name: "temp", value: 55 });
  assert.equal(r.s.value("temp"), 55);
  assert.deepEqual(r.audited.map((d) => [d.action, d.outcome, d.function]), [
    ["parameter", "accepted", "temp"],
  ]);
  // Not dated, not published; asked once more, each failure one ERROR line.
  assert.equal(r.failures(), 2);
  assert.deepEqual(r.events.filter((e) => e.kind === "parameter_change"), []);
  assert.equal(
    r.errors.filter((l) => l.includes("clock nowMs failed")).length,
    2,
    r.errors.join("\n"),
  );
});

Deno.test("ParameterStore.redeclare whose clock fails to date a change keeps every parameter of the new declaration", () => {
  const r = storeRig();
  r.s.set("temp", 55);
  r.failing.on = true;
  let error: unknown = null;
  try {
    // temp's new bounds refuse 55 (it goes to its new default); count is declared after it.
    r.s.redeclare([
      { name: "temp", type: "double", default: 20, min: 10, max: 40, allowedValues: [] },
      PARAMS[1]!,
      { name: "fresh", type: "bool", default: true, allowedValues: [] },
    ]);
  } catch (err) {
    error = err;
  }
  r.failing.on = false;
  assert.deepEqual(
    r.s.list().map((p) => [p.name, p.value]),
    [["temp", 20], ["count", 5], ["fresh", true]],
    `the store after the redeclaration (it threw: ${String(error)})`,
  );
  assert.equal(error, null, `the redeclaration failed: ${String(error)}`);
  // Both changes recorded, neither published (no time to date them).
  assert.deepEqual(
    r.audited.filter((d) => d.origin.kind === "reload").map((d) => d.function),
    ["temp", "fresh"],
  );
  assert.equal(r.events.filter((e) => e.kind === "parameter_change").length, 1, "the set's only");
});
