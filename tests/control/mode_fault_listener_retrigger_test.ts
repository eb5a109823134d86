/**
 * A mode listener that triggers the e-stop again, synchronously, when FAULT is committed (inside
 * the first trigger's ModeManager.enterFault: an alarm, a Sparkplug NCMD handler) must not hold the
 * first trigger's stop. The nested trigger comes before the first trigger's stop has begun, so it
 * joins that stop (presses are coalesced, docs/safety.md) and is answered by it: one ladder, then
 * the hooks of the first trigger's FAULT entry (the one it committed), at once. Before, the nested
 * trigger queued its stop ahead of the outer one, whose turn it had not taken yet; that stop waited
 * for the hooks of the outer trigger's FAULT entry, which only the outer stop runs: both waited
 * FAULT_HOOKS_ANSWER_WAIT_MS (10 s) on the clock. In-process: the real Estop and ModeManager over a
 * router that answers every call at once and records it with the manual clock's time; the clock
 * never moves, so every call must be made without waiting on it.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import { FAULT_HOOKS_ANSWER_WAIT_MS, ModeManager } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { Estop, type EstopResult } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { call, hook } from "../safety/_fixture.ts";
import { providersUp } from "../safety/_clock_rig.ts";
import { untilTurns } from "../helpers/turns.ts";

Deno.test("Estop runs the first trigger's ladder and hooks into FAULT at once when a mode listener triggers again inside its enterFault", async () => {
  const clock = new ManualClock();
  const startMs = clock.monoMs();
  // Each call: who made it (the stop's cause, or hook) and when on the manual clock.
  const made: { by: string; fn: string; atMs: number }[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) => {
      const by = req.source?.kind === "estop"
        ? `ladder ${req.source.cause}`
        : req.source?.kind ?? req.origin;
      made.push({ by, fn: req.functionName ?? "", atMs: clock.monoMs() });
      return Promise.resolve({});
    },
  } as unknown as CallRouter;
  const log = testLogger();
  const cool = hook("*", "FAULT", [call("plant/plant0", "set_cooler", { enabled: true })], false);
  const modes = new ModeManager({
    router,
    inventory: providersUp("plant"),
    bus: new EventBus(),
    clock,
    log,
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: [], afterTransition: [cool] },
  });
  const estop = new Estop({
    router,
    inventory: providersUp("plant"),
    reads: {} as FreshReader,
    clock,
    log,
    modes,
    safeState: {
      setpoints: [],
      hooks: [call("plant/plant0", "set_heater", { enabled: false })],
      zeroIsSafe: false,
      expect: [],
      verifyTimeoutMs: 100,
    },
  });
  // The listener triggers again, once, in the commit of the first trigger's FAULT.
  let second: Promise<EstopResult> | null = null;
  modes.onModeChange(({ current }) => {
    if (current === "FAULT" && second === null) {
      second = estop.trigger("again", { cause: "alarm:again" });
    }
  });
  const answers: EstopResult[] = [];
  const first = estop.trigger("first").then((a) => answers[0] = a);
  try {
    assert.ok(second !== null, "the listener triggered again inside enterFault");
    const again = (second as Promise<EstopResult>).then((a) => answers[1] = a);
    await untilTurns(
      () => answers[0] !== undefined,
      "the first trigger answered, the clock unmoved",
    );
    assert.equal(answers[0]!.hooks_pending, undefined, "its hooks into FAULT finished");
    await untilTurns(
      () => answers[1] !== undefined,
      "the second trigger answered, the clock unmoved",
    );
    assert.equal(answers[1]!.hooks_pending, undefined);
    await Promise.all([first, again]);
    // One stop for both: its ladder (audited with the cause of the trigger that queued it), then
    // the hooks of the FAULT entry the first trigger committed; the nested trigger's answer is its.
    assert.deepEqual(made.map((m) => `${m.by} ${m.fn}`), [
      "ladder api set_heater",
      "hook set_cooler",
    ]);
    assert.equal(answers[1], answers[0], "the nested trigger is answered by the stop it joined");
    assert.equal(estop.triggerCount, 2, "each trigger is counted");
    assert.ok(made.every((m) => m.atMs === startMs), "no call waited on the clock");
  } finally {
    // Before the fix the stops wait FAULT_HOOKS_ANSWER_WAIT_MS on the manual clock: let them end.
    clock.advance(FAULT_HOOKS_ANSWER_WAIT_MS);
    await Promise.allSettled([first, second]);
    estop.close();
  }
});
