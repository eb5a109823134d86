/**
 * Estop.stopActionsSettled, what a configuration reload waits for before it stops a provider
 * (docs/safety.md, step 2): null at once while no stop action (ladder call, hook call into FAULT)
 * runs on the provider; else it resolves when they have finished, or at its bound (the calls left
 * on the provider, at least 1, x one call's worst case, stopActionWorstCaseMs of its timeout_ms,
 * + DRAIN_MARGIN_MS, at most STOP_ACTIONS_WAIT_MAX_MS, never below one call's) with `settled`
 * false, saying which kinds it waited for. In-process: the real Estop on a manual clock, rung 1
 * declared (one call to `plant`, whose timeout_ms is 1000), a router that holds that call until
 * the test answers it, and a modes port whose hook calls into FAULT to `other` end when the test
 * says (and counts, when the test says, hook calls left on `plant`).
 */
import assert from "node:assert/strict";
import { type CallRequest, stopActionWorstCaseMs } from "../../src/control/mod.ts";
import { DRAIN_MARGIN_MS, STOP_ACTIONS_WAIT_MAX_MS } from "../../src/safety/mod.ts";
import type { ProviderSummary } from "../../src/state/mod.ts";
import { flushMicrotasks, ManualClock, runToSettle } from "../helpers/clock.ts";
import { containedEstop, faultRecordingModes, providersUp, recordingRouter } from "./_clock_rig.ts";

/** `plant`'s timeout_ms in providersUp. */
const PLANT_TIMEOUT_MS = 1000;
/** `other`'s timeout_ms in providersUp. */
const OTHER_TIMEOUT_MS = 1000;

/**
 * `plantHooksLeft`: the hook calls into FAULT to `plant` the modes port counts as left to run
 * (none are waited for: only the bound is read from them).
 */
function rig(plantHooksLeft = 0) {
  const clock = new ManualClock();
  // The hook calls into FAULT to `other` under way: they end when the test resolves it.
  let hookCalls: PromiseWithResolvers<void> | null = null;
  const modes = faultRecordingModes().modes;
  modes.faultHookCallsSettled = (id) => id === "other" ? hookCalls?.promise ?? null : null;
  modes.faultHookCallsLeft = (id) => id === "plant" ? plantHooksLeft : hookCalls ? 1 : 0;
  const made: string[] = [];
  const answers: PromiseWithResolvers<unknown>[] = [];
  const router = recordingRouter();
  router.call = (req: CallRequest) => {
    made.push(`${req.providerId} ${req.functionName}`);
    const answer = Promise.withResolvers<unknown>();
    answers.push(answer);
    return answer.promise as ReturnType<typeof router.call>;
  };
  const inventory = providersUp("plant", "other");
  const estop = containedEstop({
    router,
    inventory,
    clock,
    modes,
  });
  const hooksRun = () => (hookCalls = Promise.withResolvers<void>());
  /** Sets `plant`'s timeout_ms. */
  const plantTimeout = (ms: number) =>
    Object.assign((inventory.provider("plant") as ProviderSummary).config, { timeoutMs: ms });
  return { clock, made, answers, estop, hooksRun, plantTimeout };
}

Deno.test("Estop.stopActionsSettled is null at once while no ladder call runs on the provider", async () => {
  const r = rig();
  assert.equal(await r.estop.stopActionsSettled("plant"), null);
  const stop = r.estop.trigger("test");
  await flushMicrotasks();
  assert.deepEqual(r.made, ["plant set_heater"]);
  // The ladder has no call on `other`: a reload stopping it does not wait.
  assert.equal(await r.estop.stopActionsSettled("other"), null);
  r.answers[0]!.resolve({});
  await runToSettle(r.clock, stop, "the stop");
  assert.equal(await r.estop.stopActionsSettled("plant"), null);
});

Deno.test("Estop.stopActionsSettled waits for the ladder's call in flight until it is answered", async () => {
  const r = rig();
  const stop = r.estop.trigger("test");
  await flushMicrotasks();
  assert.deepEqual(r.made, ["plant set_heater"]);
  let ended = false;
  const wait = r.estop.stopActionsSettled("plant").finally(() => (ended = true));
  r.clock.advance(300);
  await flushMicrotasks();
  assert.equal(ended, false);
  r.answers[0]!.resolve({});
  assert.deepEqual(await wait, {
    ladder: true,
    hooks: false,
    settled: true,
    waitedMs: 300,
    boundMs: stopActionWorstCaseMs(PLANT_TIMEOUT_MS) + DRAIN_MARGIN_MS,
  });
  const result = await runToSettle(r.clock, stop, "the stop");
  assert.deepEqual(result.actions, [
    { device_handle: "plant/plant0", function: "set_heater", success: true },
  ]);
});

Deno.test("Estop.stopActionsSettled gives up at one call's worst case (2 x timeout_ms: the call on the wire ahead, then its own) + DRAIN_MARGIN_MS", async () => {
  const r = rig();
  const stop = r.estop.trigger("test");
  await flushMicrotasks();
  let ended = false;
  const wait = r.estop.stopActionsSettled("plant").finally(() => (ended = true));
  const boundMs = stopActionWorstCaseMs(PLANT_TIMEOUT_MS) + DRAIN_MARGIN_MS;
  r.clock.advance(boundMs - 1);
  await flushMicrotasks();
  assert.equal(ended, false, "ended before its bound");
  r.clock.advance(1);
  assert.deepEqual(await wait, {
    ladder: true,
    hooks: false,
    settled: false,
    waitedMs: boundMs,
    boundMs,
  });
  r.answers[0]!.resolve({});
  await runToSettle(r.clock, stop, "the stop");
});

Deno.test("Estop.stopActionsSettled ends at once when its until resolves (a second stop signal), before its bound", async () => {
  const r = rig();
  const stop = r.estop.trigger("test");
  await flushMicrotasks();
  const hurry = Promise.withResolvers<void>();
  let ended = false;
  const wait = r.estop.stopActionsSettled("plant", Infinity, hurry.promise)
    .finally(() => (ended = true));
  r.clock.advance(300);
  await flushMicrotasks();
  assert.equal(ended, false, "ended before the hurry");
  hurry.resolve();
  assert.deepEqual(await wait, {
    ladder: true,
    hooks: false,
    settled: false,
    cut: true,
    waitedMs: 300,
    boundMs: stopActionWorstCaseMs(PLANT_TIMEOUT_MS) + DRAIN_MARGIN_MS,
  });
  assert.equal(r.clock.pendingTimers, 0, "its bound's timer is cleared");
  r.answers[0]!.resolve({});
  await runToSettle(r.clock, stop, "the stop");
});

Deno.test("Estop.stopActionsSettled waits for the hook calls into FAULT to the provider until they end", async () => {
  const r = rig();
  // An operator's FAULT: no ladder call, a hook call into FAULT to `other` under way.
  const hookCalls = r.hooksRun();
  let ended = false;
  const wait = r.estop.stopActionsSettled("other").finally(() => (ended = true));
  r.clock.advance(200);
  await flushMicrotasks();
  assert.equal(ended, false);
  hookCalls.resolve();
  assert.deepEqual(await wait, {
    ladder: false,
    hooks: true,
    settled: true,
    waitedMs: 200,
    boundMs: stopActionWorstCaseMs(OTHER_TIMEOUT_MS) + DRAIN_MARGIN_MS,
  });
  // None under way on `plant`: nothing to wait for.
  assert.equal(await r.estop.stopActionsSettled("plant"), null);
});

Deno.test("Estop.stopActionsSettled gives up on the hook calls into FAULT at the same bound", async () => {
  const r = rig();
  const hookCalls = r.hooksRun();
  let ended = false;
  const wait = r.estop.stopActionsSettled("other").finally(() => (ended = true));
  const boundMs = stopActionWorstCaseMs(OTHER_TIMEOUT_MS) + DRAIN_MARGIN_MS;
  r.clock.advance(boundMs - 1);
  await flushMicrotasks();
  assert.equal(ended, false, "ended before its bound");
  r.clock.advance(1);
  assert.deepEqual(await wait, {
    ladder: false,
    hooks: true,
    settled: false,
    waitedMs: boundMs,
    boundMs,
  });
  hookCalls.resolve();
});

/** Triggers, waits on `plant` and asserts it gives up at `boundMs`, not before. */
async function givesUpAt(r: ReturnType<typeof rig>, boundMs: number): Promise<void> {
  const stop = r.estop.trigger("test");
  await flushMicrotasks();
  assert.deepEqual(r.made, ["plant set_heater"]);
  let ended = false;
  const wait = r.estop.stopActionsSettled("plant").finally(() => (ended = true));
  r.clock.advance(boundMs - 1);
  await flushMicrotasks();
  assert.equal(ended, false, "ended before its bound");
  r.clock.advance(1);
  assert.deepEqual(await wait, {
    ladder: true,
    hooks: false,
    settled: false,
    waitedMs: boundMs,
    boundMs,
  });
  r.answers[0]!.resolve({});
  await runToSettle(r.clock, stop, "the stop");
}

Deno.test("Estop.stopActionsSettled bounds its wait by the calls left on the provider: its ladder call and two hook calls into FAULT, each up to its worst case", async () => {
  await givesUpAt(rig(2), 3 * stopActionWorstCaseMs(PLANT_TIMEOUT_MS) + DRAIN_MARGIN_MS);
});

Deno.test("Estop.stopActionsSettled waits at most STOP_ACTIONS_WAIT_MAX_MS however many calls are left", async () => {
  await givesUpAt(rig(1000), STOP_ACTIONS_WAIT_MAX_MS);
});

Deno.test("Estop.stopActionsSettled never bounds one call by less than its worst case + DRAIN_MARGIN_MS, past STOP_ACTIONS_WAIT_MAX_MS", async () => {
  const r = rig(1);
  const timeoutMs = STOP_ACTIONS_WAIT_MAX_MS / 2 + 5000;
  r.plantTimeout(timeoutMs);
  await givesUpAt(r, stopActionWorstCaseMs(timeoutMs) + DRAIN_MARGIN_MS);
});
