/**
 * The e-stop answers when the hooks into FAULT fail to run at all: after its ladder the trigger
 * runs them (FaultEntry.runHooks, or the modes port's runFaultHooksAgain when FAULT stood already)
 * and waits for their failures. A run that throws, or whose promise rejects within
 * FAULT_HOOKS_ANSWER_WAIT_MS, used to reject the trigger after its ladder had run: the answer --
 * what the stop did -- was lost although the latch, FAULT and the ladder's calls were in force.
 * It is contained: one ERROR line, and the answer lists it in `hook_failures` (after the failures
 * known so far) as one entry for the hooks into FAULT as a whole, with code INTERNAL; not
 * `hooks_pending`, which says the hooks run on. In-process: the real Estop over a router that
 * answers every call at once, and a modes port whose FAULT entry fails as the test says.
 */
import assert from "node:assert/strict";
import {
  FAULT_HOOKS_ANSWER_WAIT_MS,
  type FaultEntry,
  type HookFailure,
} from "../../src/control/mod.ts";
import type { Clock } from "../../src/common/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { Estop, type EstopModes } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { errorLog, heaterOffLadder, providersUp, recordingRouter } from "./_clock_rig.ts";

const EARLIER: HookFailure = {
  transition: "MANUAL->FAULT",
  phase: "before",
  hook: "automation.mode_transition_hooks.before_transition[0]",
  device_handle: "plant/plant0",
  function: "set_heater",
  error: "UNAVAILABLE: provider plant is down",
};

/** An e-stop over `modes` (FAULT once entered); its ladder's calls and ERROR lines recorded. */
function rig(modes: Omit<EstopModes, "current" | "addArmCheck">, clock: Clock = systemClock) {
  const made: string[] = [];
  const { log, errors } = errorLog();
  const estop = new Estop({
    router: recordingRouter(made),
    inventory: providersUp("plant"),
    reads: {} as FreshReader,
    clock,
    log,
    modes: { ...modes, current: () => "FAULT", addArmCheck() {} },
    safeState: heaterOffLadder(),
  });
  return { estop, made, errors };
}

/** A committed FAULT entry whose hooks run with `runHooks`; EARLIER known so far. */
function entry(runHooks: () => Promise<HookFailure[]>): FaultEntry {
  return { committed: true, from: "MANUAL", runHooks, hookFailuresSoFar: () => [EARLIER] };
}

/** The answer's entry for the hooks into FAULT as a whole, failed to run with `message`. */
function failedToRun(message: string): HookFailure {
  return {
    transition: "*->FAULT",
    phase: "before",
    hook: "automation.mode_transition_hooks",
    device_handle: "*",
    function: "*",
    error: `INTERNAL: the hooks into FAULT failed to run: ${message}`,
  };
}

/** The trigger answers with its ladder's call, FAULT, and `hookFailures`; one ERROR line. */
async function answers(r: ReturnType<typeof rig>, hookFailures: HookFailure[]): Promise<void> {
  const result = await r.estop.trigger("test");
  assert.equal(result.latched, true);
  assert.deepEqual(r.made, ["plant set_heater"]);
  assert.deepEqual(result.actions.map((a) => a.success), [true]);
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(result.hook_failures, hookFailures);
  assert.equal(result.hooks_pending, undefined, "the hooks do not run on");
  const lines = r.errors.filter((l) => l.includes("the hooks into FAULT failed to run"));
  assert.equal(lines.length, 1, `one ERROR line: ${r.errors.join(" | ")}`);
  assert.ok(lines[0]!.startsWith("ERROR"));
}

Deno.test("Estop.trigger answers with its ladder's actions and a hook failure when runHooks throws", async () => {
  const r = rig({
    enterFault: () =>
      entry(() => {
        throw new Error("hooks port failed");
      }),
  });
  await answers(r, [EARLIER, failedToRun("hooks port failed")]);
});

Deno.test("Estop.trigger answers with its ladder's actions and a hook failure when runHooks rejects", async () => {
  const r = rig({
    enterFault: () => entry(() => Promise.reject(new Error("hooks port failed"))),
  });
  await answers(r, [EARLIER, failedToRun("hooks port failed")]);
});

Deno.test("Estop.trigger answers with a hook failure when the hooks made again reject", async () => {
  let asked = 0;
  const r = rig({
    // FAULT stood with its hooks run: they are made again after the ladder, and that run rejects.
    enterFault: () => ({
      committed: false,
      from: "FAULT",
      runHooks: () => Promise.resolve([]),
      hookFailuresSoFar: () => [],
    }),
    runFaultHooksAgain: (failures) => {
      asked++;
      failures.push(EARLIER);
      return Promise.reject(new Error("hooks port failed"));
    },
  });
  await answers(r, [EARLIER, failedToRun("hooks port failed")]);
  assert.equal(asked, 1, "the hooks were asked to be made again");
});

Deno.test("Estop.trigger answers with the hooks pending when they outlast the wait and their failures so far cannot be read", async () => {
  const clock = new ManualClock();
  const r = rig({
    enterFault: () => ({
      committed: true,
      from: "MANUAL",
      runHooks: () => new Promise<HookFailure[]>(() => {}), // still running at the answer
      hookFailuresSoFar: () => {
        throw new Error("failures port failed");
      },
    }),
  }, clock);
  let settled = false;
  const answer = r.estop.trigger("test").finally(() => settled = true);
  answer.catch(() => {});
  for (let i = 0; i < 100 && !settled; i++) await clock.advanceAsync(FAULT_HOOKS_ANSWER_WAIT_MS);
  const result = await answer;
  assert.equal(result.latched, true);
  assert.deepEqual(r.made, ["plant set_heater"]);
  assert.equal(result.hooks_pending, true);
  assert.deepEqual(result.hook_failures, []);
  const lines = r.errors.filter((l) => l.includes("failures port failed"));
  assert.equal(lines.length, 1, `one ERROR line: ${r.errors.join(" | ")}`);
});
