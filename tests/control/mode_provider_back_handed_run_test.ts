/**
 * A re-application of a provider's hook calls into FAULT that waits for its turn and asks the
 * e-stop for its securing run at that turn (a return while latched) keeps a concrete securing run
 * a later reload of the ladder hands it (ModeManager mergeProviderBack): the run asked for at the
 * turn does not always cover it. When the latch is released meanwhile and a device of the provider
 * answers again, the e-stop has no securing run of it at the turn (a return while released is
 * secured by nobody), while the reload's run, begun while latched, still makes its ladder calls:
 * the hook calls must land after them (the order of a stop: ladder, then hooks), not between.
 * In-process: the real Estop and ModeManager over a router that holds each call until the test
 * answers it, an inventory whose return the test announces, and device returns the test announces.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop, type SafeStateConfig } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { call, hook } from "../safety/_fixture.ts";
import { providerComingBack } from "../safety/_clock_rig.ts";
import { macrotask, untilTurns } from "../helpers/turns.ts";
import { deviceReturns, hookModes } from "./_mode_hook_rig.ts";

/** A ladder of one call to plant, `fn`, with no read-back. */
function ladder(fn: string): SafeStateConfig {
  return {
    setpoints: [],
    hooks: [call("plant/plant0", fn)],
    zeroIsSafe: false,
    expect: [],
    verifyTimeoutMs: 100,
  };
}

Deno.test("ModeManager makes a provider's hook calls into FAULT again after the ladder calls of the securing run a reload handed its waiting return, when the e-stop has none at the turn", async () => {
  // Each call, and whether the reload's ladder call (ladder_new) had been answered when it was made.
  const held: { name: string; afterLadder: boolean; answered: boolean; answer(): void }[] = [];
  let ladderNewAnswered = false;
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) =>
      new Promise<unknown>((resolve) => {
        const h = {
          name: req.functionName ?? "",
          afterLadder: ladderNewAnswered,
          answered: false,
          answer: () => {
            h.answered = true;
            if (h.name === "ladder_new") ladderNewAnswered = true;
            resolve({});
          },
        };
        held.push(h);
      }),
  } as unknown as CallRouter;
  const { inventory, comeBack } = providerComingBack("plant");
  const { devices, answersAgain } = deviceReturns();
  const log = testLogger();
  const cool = hook("*", "FAULT", [call("plant/plant0", "set_cooler", { enabled: true })], false);
  const modes = hookModes(router, inventory, [cool], { log, devices });
  const estop = new Estop({
    router,
    inventory,
    reads: {} as FreshReader,
    clock: systemClock,
    log,
    modes,
    devices,
    safeState: ladder("ladder_old"),
  });
  const names = () => held.map((h) => h.name);
  const answerFirst = (name: string) => held.find((h) => h.name === name && !h.answered)!.answer();

  const stop = estop.trigger("test");
  await untilTurns(() => names().includes("ladder_old"), "the stop's ladder call");
  answerFirst("ladder_old");
  await untilTurns(() => names().includes("set_cooler"), "the hooks into FAULT run");
  // While they run, plant comes back (latched): its re-application waits for their run, and asks
  // the e-stop for its securing run at its turn; the e-stop secures it (ladder_old again).
  comeBack();
  await untilTurns(() => names().filter((n) => n === "ladder_old").length === 2, "plant secured");
  answerFirst("ladder_old");
  // A reload changes plant's ladder call: a securing run making ladder_new, handed to the
  // waiting re-application.
  const runs = estop.reconfigure(ladder("ladder_new"));
  await untilTurns(() => names().includes("ladder_new"), "the reload's securing run made its call");
  // The latch is released, and a device of plant answers again: the e-stop secures nothing now
  // (it has no securing run of plant at the re-application's turn).
  estop.clear();
  answersAgain("plant", "plant0");
  // The hooks' own run ends: the re-application's turn.
  answerFirst("set_cooler");
  await stop;
  // Its next steps are promise reactions only (the router holds each call synchronously): one
  // macrotask later, a hook call it made without waiting would be here.
  await macrotask();
  assert.deepEqual(
    names(),
    ["ladder_old", "set_cooler", "ladder_old", "ladder_new"],
    "no hook call while the reload's securing run makes its ladder call",
  );
  answerFirst("ladder_new");
  await untilTurns(() => names().filter((n) => n === "set_cooler").length === 2, "made again");
  const again = held.filter((h) => h.name === "set_cooler")[1]!;
  assert.equal(again.afterLadder, true, "after the reload's ladder call");
  again.answer();
  await Promise.all(runs);
  let left = false;
  for (let i = 0; i < 200 && !left; i++) {
    left = await modes.requestWithReport("MANUAL").then(() => true, () => false);
    if (!left) await macrotask();
  }
  assert.ok(left, "FAULT -> MANUAL accepted once the calls made again have ended");
  assert.equal(held.length, 5, "nothing more was made");
  estop.close();
});
