/**
 * Estop.ladderCallsSettled, what a configuration reload waits for before it stops a provider
 * (docs/safety.md, step 2): null at once while no ladder call runs on the provider; else it
 * resolves when they have finished, or at its bound (the provider's timeout_ms + DRAIN_MARGIN_MS)
 * with `settled` false. In-process: the real Estop on a manual clock, rung 1 declared (one call to
 * `plant`, whose timeout_ms is 1000), and a router that holds that call until the test answers it.
 */
import assert from "node:assert/strict";
import type { CallRequest } from "../../src/control/mod.ts";
import { DRAIN_MARGIN_MS, Estop } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { flushMicrotasks, ManualClock, runToSettle } from "../helpers/clock.ts";
import {
  errorLog,
  faultRecordingModes,
  heaterOffLadder,
  providersUp,
  recordingRouter,
} from "./_clock_rig.ts";

/** `plant`'s timeout_ms in providersUp. */
const PLANT_TIMEOUT_MS = 1000;

function rig() {
  const clock = new ManualClock();
  const made: string[] = [];
  const answers: PromiseWithResolvers<unknown>[] = [];
  const router = recordingRouter();
  router.call = (req: CallRequest) => {
    made.push(`${req.providerId} ${req.functionName}`);
    const answer = Promise.withResolvers<unknown>();
    answers.push(answer);
    return answer.promise as ReturnType<typeof router.call>;
  };
  const estop = new Estop({
    router,
    inventory: providersUp("plant", "other"),
    reads: {} as FreshReader,
    clock,
    log: errorLog().log,
    modes: faultRecordingModes().modes,
    safeState: heaterOffLadder(),
  });
  return { clock, made, answers, estop };
}

Deno.test("Estop.ladderCallsSettled is null at once while no ladder call runs on the provider", async () => {
  const r = rig();
  assert.equal(await r.estop.ladderCallsSettled("plant"), null);
  const stop = r.estop.trigger("test");
  await flushMicrotasks();
  assert.deepEqual(r.made, ["plant set_heater"]);
  // The ladder has no call on `other`: a reload stopping it does not wait.
  assert.equal(await r.estop.ladderCallsSettled("other"), null);
  r.answers[0]!.resolve({});
  await runToSettle(r.clock, stop, "the stop");
  assert.equal(await r.estop.ladderCallsSettled("plant"), null);
});

Deno.test("Estop.ladderCallsSettled waits for the ladder's call in flight until it is answered", async () => {
  const r = rig();
  const stop = r.estop.trigger("test");
  await flushMicrotasks();
  assert.deepEqual(r.made, ["plant set_heater"]);
  let ended = false;
  const wait = r.estop.ladderCallsSettled("plant").finally(() => (ended = true));
  r.clock.advance(300);
  await flushMicrotasks();
  assert.equal(ended, false);
  r.answers[0]!.resolve({});
  assert.deepEqual(await wait, {
    settled: true,
    waitedMs: 300,
    boundMs: PLANT_TIMEOUT_MS + DRAIN_MARGIN_MS,
  });
  const result = await runToSettle(r.clock, stop, "the stop");
  assert.deepEqual(result.actions, [
    { device_handle: "plant/plant0", function: "set_heater", success: true },
  ]);
});

Deno.test("Estop.ladderCallsSettled gives up at its provider's timeout_ms + DRAIN_MARGIN_MS", async () => {
  const r = rig();
  const stop = r.estop.trigger("test");
  await flushMicrotasks();
  let ended = false;
  const wait = r.estop.ladderCallsSettled("plant").finally(() => (ended = true));
  const boundMs = PLANT_TIMEOUT_MS + DRAIN_MARGIN_MS;
  r.clock.advance(boundMs - 1);
  await flushMicrotasks();
  assert.equal(ended, false, "ended before its bound");
  r.clock.advance(1);
  assert.deepEqual(await wait, { settled: false, waitedMs: boundMs, boundMs });
  r.answers[0]!.resolve({});
  await runToSettle(r.clock, stop, "the stop");
});
