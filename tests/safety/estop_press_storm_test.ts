/**
 * E-stop presses in a burst (an operator hammering the button, a client retrying, a Sparkplug
 * NCMD, an HTTP press and an alarm at once) are coalesced (docs/safety.md, "Presses while a stop
 * runs"): each press latches, is counted and audited at once, as ever; a press while a stop runs
 * queues at most one further whole stop, and a press while that one waits for its turn joins it
 * and is answered with it. So re-arming (refused while a stop runs) waits for at most the running
 * stop and one more, whatever the press rate, not for one whole stop per press. In-process: the
 * real Estop on a manual clock, rung 1 declared (one call to `plant`, answered at once), and a
 * read-back that never holds, so each stop takes its whole verify_timeout_ms of virtual time.
 */
import assert from "node:assert/strict";
import type { ArmCheck, AuditDecision } from "../../src/control/mod.ts";
import { type EstopResult } from "../../src/safety/mod.ts";
import type { FreshRead, FreshReader } from "../../src/state/mod.ts";
import { flushMicrotasks, ManualClock, runToSettle, runUntil } from "../helpers/clock.ts";
import {
  containedEstop,
  faultRecordingModes,
  heaterOffVerifiedLadder,
  recordingRouter,
} from "./_clock_rig.ts";

/** The read-back's bound (safety.safe_state.verify_timeout_ms). */
const VERIFY_MS = 1000;
/** Presses made while the first stop reads back. */
const PRESSES = 20;

function rig() {
  const clock = new ManualClock();
  const made: string[] = [];
  const { modes } = faultRecordingModes();
  let armCheck: ArmCheck | null = null;
  modes.addArmCheck = (check) => void (armCheck = check);
  // Holds on the hook calls into FAULT taken and not let go.
  let hooksHeld = 0;
  modes.holdFaultHookCalls = () => {
    hooksHeld++;
    let held = true;
    return () => {
      if (held) hooksHeld--;
      held = false;
    };
  };
  const audited: AuditDecision[] = [];
  // The heater reads back on: every stop's read-back runs to its bound (mismatch).
  const reads: FreshReader = {
    readFresh: () =>
      Promise.resolve({
        ok: true,
        samples: new Map([["heater", { value: { type: "bool", bool: true }, quality: "OK" }]]),
      } as FreshRead),
  };
  const estop = containedEstop({
    router: recordingRouter(made),
    reads,
    clock,
    modes,
    audit: { record: (d) => void audited.push(d) },
    safeState: { ...heaterOffVerifiedLadder(), verifyTimeoutMs: VERIFY_MS },
  });
  const arming = () => armCheck!("FAULT", "MANUAL");
  return { clock, made, audited, estop, arming, hooksHeld: () => hooksHeld };
}

Deno.test("Estop presses during a stop's read-back queue one further stop, not one per press", async () => {
  const r = rig();
  const answers: Promise<EstopResult>[] = [];
  // Per press: the ladders begun when it latched, and when it was answered.
  const atPress: number[] = [];
  const atAnswer: number[] = [];
  const press = (k: number) => {
    atPress[k] = r.made.length;
    answers.push(
      r.estop.trigger(`press ${k}`).then((result) => {
        atAnswer[k] = r.made.length;
        return result;
      }),
    );
  };
  press(0);
  await flushMicrotasks();
  assert.deepEqual(r.made, ["plant set_heater"], "the first stop's ladder ran; it reads back");
  // The presses arrive while that read-back runs, each in its own turn, 10 ms apart.
  for (let k = 1; k <= PRESSES; k++) {
    r.clock.advance(10);
    await flushMicrotasks();
    press(k);
    // Each press latched, was counted and audited in its own step, as ever.
    assert.equal(r.estop.triggerCount, k + 1);
  }
  assert.equal(r.made.length, 1, "no press ran a ladder while the first stop reads back");
  // The operator releases the latch; re-arming waits for the stops under way.
  r.estop.clear();
  const clearedAt = r.clock.mono;
  assert.match(String(r.arming()), /E-stop still running/);
  await runUntil(r.clock, "re-arming let through", () => r.arming() === null);
  const heldMs = r.clock.mono - clearedAt;
  const results = await Promise.all(answers);
  // Held for the rest of the first read-back and one more, not for one read-back per press.
  assert.ok(
    heldMs <= 2 * VERIFY_MS,
    `re-arming was refused for ${heldMs} ms of the clock after the clear (bound ${2 * VERIFY_MS})`,
  );
  // The first stop, then one more for every press made while it ran: 2 ladders, not 21.
  assert.equal(r.made.length, 2, `${r.made.length} ladders ran for ${PRESSES + 1} presses`);
  // Every press is answered by a stop whose ladder began at or after it.
  for (let k = 0; k <= PRESSES; k++) {
    assert.ok(atAnswer[k]! > atPress[k]!, `press ${k} answered by a stop begun before it`);
  }
  for (const result of results) assert.equal(result.verification.outcome, "mismatch");
  // The presses that joined let their holds go: none is left once the stops have answered.
  assert.equal(r.hooksHeld(), 0);
  assert.equal(await r.estop.stopActionsSettled("plant"), null);
  // What each press records is unchanged: 21 triggers, 21 latch entries in the audit trail.
  assert.equal(r.estop.triggerCount, PRESSES + 1);
  assert.equal(
    r.audited.filter((d) => d.action === "estop" && d.function === undefined).length,
    PRESSES + 1,
  );
});

Deno.test("Estop a press while the further stop runs queues one more; at most one waits", async () => {
  const r = rig();
  const first = r.estop.trigger("first");
  await flushMicrotasks();
  const second = r.estop.trigger("second");
  const joined = r.estop.trigger("joins the second");
  await runUntil(r.clock, "the second stop's ladder", () => r.made.length === 2);
  await first;
  // The second stop has begun: a press now may not join it (it began before the press).
  const third = r.estop.trigger("after the second began");
  const [b, j, c] = await runToSettle(
    r.clock,
    Promise.all([second, joined, third]),
    "the presses' answers",
  );
  assert.equal(r.made.length, 3, "one ladder per stop: first, second (joined), third");
  assert.deepEqual(j, b, "a joined press is answered with the stop it joined");
  assert.equal(c.latched, true);
  assert.equal(r.estop.triggerCount, 4);
});

Deno.test("Estop a reload's wait for a provider's stop actions covers the stop joined presses wait for", async () => {
  const r = rig();
  const first = r.estop.trigger("first");
  await flushMicrotasks();
  const second = r.estop.trigger("second");
  const joined = r.estop.trigger("joins the second");
  // A reload stopping plant now waits for the second stop's ladder call (held from its latch).
  const wait = await runToSettle(r.clock, r.estop.stopActionsSettled("plant"), "the reload's wait");
  assert.equal(wait?.settled, true);
  assert.equal(wait?.ladder, true);
  assert.equal(r.made.length, 2, "it waited for the second stop's call, and no third was queued");
  await runToSettle(r.clock, Promise.all([first, second, joined]), "the presses' answers");
  assert.equal(r.made.length, 2);
  assert.equal(r.hooksHeld(), 0);
  assert.equal(await r.estop.stopActionsSettled("plant"), null, "no ladder call is left held");
});
