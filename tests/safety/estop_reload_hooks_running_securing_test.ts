/**
 * A reload that changes the hook calls into FAULT addressed to a provider while the e-stop's
 * securing run of that provider (begun when it came back while latched) is making its ladder
 * calls: the new hook calls wait for that run's ladder calls, so a later ladder call does not land
 * after a hook call and undo it (a stop's order: ladder, then hooks). None of the new hook calls
 * is left out: the run began with the ladder in force then. In-process: the real Estop and
 * ModeManager over a router that holds each call until the test answers it.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { containedEstop, providerComingBack } from "./_clock_rig.ts";
import { call, fanIntoFault } from "./_fixture.ts";
import { macrotask, untilTurns } from "../helpers/turns.ts";

Deno.test("Estop: new hook calls into FAULT a reload makes wait for the securing run still making its ladder calls", async () => {
  const held: { req: CallRequest; answered: boolean; answer(): void }[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drainFrom: () => () => Promise.resolve(true),
    call: (req: CallRequest) =>
      new Promise<unknown>((resolve) => {
        const h = { req, answered: false, answer: () => (h.answered = true, resolve({})) };
        held.push(h);
      }),
  } as unknown as CallRouter;
  const { inventory, host, comeBack } = providerComingBack("plant");
  const log = testLogger();
  const bus = new EventBus();
  const modes = new ModeManager({
    router,
    inventory,
    bus,
    clock: systemClock,
    log,
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: [], afterTransition: [] },
  });
  const estop = containedEstop({
    router,
    inventory,
    log,
    bus,
    modes,
    safeState: {
      setpoints: [],
      hooks: [
        call("plant/plant0", "set_heater", { enabled: false }),
        call("plant/plant0", "set_fan", { duty: { double: 0 } }),
      ],
      zeroIsSafe: false,
      expect: [],
      verifyTimeoutMs: 100,
    },
  });
  const issued = () =>
    held.map((h) => `${h.req.functionName}(${JSON.stringify(Object.values(h.req.args))})`);
  const answerAll = () => held.forEach((h) => h.answered || h.answer());

  // The stop: its ladder's two calls (one after the other), then no hook calls into FAULT.
  const stop = estop.trigger("test");
  await untilTurns(() => {
    answerAll();
    return held.length === 2;
  }, "the stop's ladder made its calls");
  answerAll();
  await stop;

  // plant comes back while latched: its securing run makes its first ladder call, held.
  comeBack();
  await untilTurns(() => held.length === 3, "the securing run made its first ladder call");
  // While that run is under way, a reload adds a cool-down into FAULT for plant (fan at half).
  modes.reconfigure({ beforeTransition: [], afterTransition: [fanIntoFault(0.5)] }, "BLOCK");

  // Answer every call as it comes until the securing run and the hook call have all been made.
  await untilTurns(() => {
    answerAll();
    return held.length === 5;
  }, "the securing run's two calls and the reloaded hook call were made");
  answerAll();
  const secured = await estop.securing(host);
  assert.equal(secured?.length, 2);
  assert.deepEqual(
    issued().slice(2),
    [
      'set_heater([{"type":"bool","bool":false}])',
      'set_fan([{"type":"double","double":0}])',
      'set_fan([{"type":"double","double":0.5}])',
    ],
    "the securing run's ladder calls, then the new hook call (not between them)",
  );
  // Nothing left running: once released, re-arming is accepted (it waits for no stop action).
  estop.clear();
  let left = false;
  for (let i = 0; i < 200 && !left; i++) {
    left = await modes.requestWithReport("MANUAL").then(() => true, () => false);
    if (!left) await macrotask();
  }
  assert.ok(left, "FAULT -> MANUAL accepted once every stop action has ended");
});
