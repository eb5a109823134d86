/**
 * The e-stop answers whatever else is failing, its modes port included: after the ladder (and
 * the hooks into FAULT) the trigger asks the mode for `fault_engaged`, and, when FAULT stood
 * already, asks the hooks into FAULT to be made again. A port that throws there used to reject
 * the trigger after its ladder had run: the answer -- what the stop did -- was lost. Each is
 * contained as the ports before the ladder are: one ERROR line, and the answer carries what is
 * known (the mode unknown: FAULT not claimed; the hooks not made again: the failures of their
 * earlier run). In-process: the real Estop over a router that answers every call at once, and a
 * modes port whose chosen method throws.
 */
import assert from "node:assert/strict";
import type { FaultEntry, HookFailure } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop, type EstopModes } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { errorLog, heaterOffLadder, providersUp, recordingRouter } from "./_clock_rig.ts";

const EARLIER: HookFailure = {
  transition: "MANUAL->FAULT",
  phase: "after",
  hook: "automation.mode_transition_hooks.after_transition[0]",
  device_handle: "plant/plant0",
  function: "set_heater",
  error: "UNAVAILABLE: provider plant is down",
};

/** An e-stop over `modes`; its ladder's calls and ERROR lines recorded. */
function rig(modes: EstopModes) {
  const made: string[] = [];
  const { log, errors } = errorLog();
  const estop = new Estop({
    router: recordingRouter(made),
    inventory: providersUp("plant"),
    reads: {} as FreshReader,
    clock: systemClock,
    log,
    modes,
    safeState: heaterOffLadder(),
  });
  return { estop, made, errors };
}

/** A FAULT entry: `committed` false when FAULT stood already; its hooks fail with EARLIER. */
function entry(committed: boolean): FaultEntry {
  return {
    committed,
    from: committed ? "MANUAL" : "FAULT",
    runHooks: () => Promise.resolve([EARLIER]),
    hookFailuresSoFar: () => [EARLIER],
  };
}

Deno.test("Estop.trigger answers with its ladder's actions when the modes port's current() throws", async () => {
  const r = rig({
    current: () => {
      throw new Error("modes port failed");
    },
    enterFault: () => entry(true),
    addArmCheck() {},
  });
  const result = await r.estop.trigger("test");
  assert.deepEqual(r.made, ["plant set_heater"]);
  assert.deepEqual(result.actions.map((a) => a.success), [true]);
  assert.equal(result.fault_engaged, false, "FAULT is not claimed when the mode is unknown");
  assert.deepEqual(result.hook_failures, [EARLIER]);
  const lines = r.errors.filter((l) => l.includes("reading the mode failed: modes port failed"));
  assert.equal(lines.length, 1, `one ERROR line: ${r.errors.join(" | ")}`);
});

Deno.test("Estop.trigger answers with the hooks' earlier failures when runFaultHooksAgain throws", async () => {
  let asked = 0;
  const r = rig({
    current: () => "FAULT",
    enterFault: () => entry(false),
    runFaultHooksAgain: () => {
      asked++;
      throw new Error("modes port failed");
    },
    addArmCheck() {},
  });
  const result = await r.estop.trigger("test");
  assert.equal(asked, 1, "the hooks were asked to be made again");
  assert.deepEqual(r.made, ["plant set_heater"]);
  assert.deepEqual(result.actions.map((a) => a.success), [true]);
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(result.hook_failures, [EARLIER], "the failures of their earlier run");
  assert.equal(result.hooks_pending, undefined);
  const lines = r.errors.filter((l) =>
    l.includes("making the hooks into FAULT again failed: modes port failed")
  );
  assert.equal(lines.length, 1, `one ERROR line: ${r.errors.join(" | ")}`);
});
