/**
 * A reload that changes the ladder calls of a provider up while latched secures it again with them
 * and waits for that run, counting its calls (docs/safety.md: "the reload waits for it and counts
 * its calls"), also when a securing run of that provider still waits for its turn and takes the
 * new plan in its place (a return of the provider while its securing run before was making its
 * calls).
 */
import assert from "node:assert/strict";
import type { CallRouter } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { untilTurns } from "../helpers/turns.ts";
import { heaterOffLadder, providerComingBack } from "./_clock_rig.ts";
import { call } from "./_fixture.ts";

Deno.test("Estop latched: a reload changing the ladder calls of a provider whose securing run waits for its turn waits for that run and counts its calls", async () => {
  // In-process: the real Estop over a router that holds each call until the test answers it.
  const held: (() => void)[] = [];
  let calls = 0;
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drainFrom: () => () => Promise.resolve(true),
    call: () => new Promise<unknown>((resolve) => (calls++, held.push(() => resolve({})))),
  } as unknown as CallRouter;
  const answerAll = () => held.splice(0).forEach((answer) => answer());
  const { inventory, host, comeBack } = providerComingBack("plant");
  const { log } = capturingLogger({ now: () => 0 });
  const estop = new Estop({
    router,
    inventory,
    reads: {} as FreshReader,
    clock: systemClock,
    log,
    bus: new EventBus(),
    safeState: heaterOffLadder(),
  });
  const stop = estop.trigger("test");
  await untilTurns(() => (answerAll(), calls === 1), "the stop's ladder call");
  await stop;

  // plant comes back: its securing run's ladder call is held; back again meanwhile, its next
  // securing run waits for its turn behind it.
  comeBack();
  await untilTurns(() => calls === 2, "the first securing run's ladder call");
  comeBack();
  const waiting = estop.securing(host);
  // The reload adds a call for plant: the waiting run takes the new plan at its turn.
  const ladder = heaterOffLadder();
  const runs = estop.reconfigure({
    ...ladder,
    hooks: [...ladder.hooks, call("plant/plant0", "set_fan", { duty: { double: 0 } })],
  });
  assert.equal(estop.securing(host), waiting, "the waiting run takes the new plan");
  assert.equal(runs.length, 1, "the reload waits for the run that makes the new plan's calls");
  let made: number | null = null;
  void Promise.all(runs).then((done) => (made = done.reduce((n, a) => n + a.length, 0)));
  await untilTurns(() => (answerAll(), made !== null), "the reload's wait");
  assert.equal(calls, 4, "the first run's call, then the new plan's two");
  assert.equal(made, 2, "the reload counts the new plan's calls");
});
