/**
 * Two reloads of a provider's e-stop ladder calls while the re-application of its hook calls into
 * FAULT waits for its turn: each begins a securing run (the e-stop runs them one after the other),
 * and the re-application waits for both -- its hook call lands after the ladder calls of the
 * second run too, never between them, the order of a stop (ladder, then hooks; ModeManager
 * mergeProviderBack). In-process: a router that holds each call until the test answers it, and
 * securing runs that make their ladder call through it, queued one behind the other.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import type { CallConfig } from "../../src/config/mod.ts";
import { providerBackModes } from "./_provider_back_rig.ts";
import { macrotask, untilTurns } from "../helpers/turns.ts";

Deno.test("ModeManager makes a provider's hook calls into FAULT again after the ladder calls of both securing runs two reloads of its ladder began while the re-application waited", async () => {
  const held: { req: CallRequest; answer(): void }[] = [];
  const hold = (req: CallRequest) =>
    new Promise<unknown>((resolve) => held.push({ req, answer: () => resolve({}) }));
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: hold,
  } as unknown as CallRouter;
  const { modes, host } = providerBackModes(router);
  // The e-stop's securing runs of plant, one behind the other, each making its ladder call.
  let tail: Promise<unknown> = Promise.resolve();
  let runs = 0;
  modes.setLatchSecuring((_host, o) => {
    assert.equal(o?.notBegun, true, "asked for a run not begun (a reload)");
    const name = `ladder_${++runs}`;
    const run = tail.then(() => hold({ providerId: "plant", functionName: name } as CallRequest))
      .then((): readonly CallConfig[] => []);
    tail = run;
    return run;
  });
  const names = () => held.map((h) => h.req.functionName);

  const entry = modes.enterFault("e-stop", { kind: "estop", cause: "api" });
  const hooksRun = entry.runHooks();
  await untilTurns(() => names().includes("set_cooler"), "the hooks' run made its call");
  // While it runs: two reloads of plant's ladder calls, each beginning a securing run.
  modes.ladderReloaded(host);
  modes.ladderReloaded(host);
  await untilTurns(() => names().includes("ladder_1"), "the first securing run made its call");
  assert.deepEqual(names(), ["set_cooler", "ladder_1"]);
  held[0]!.answer();
  assert.deepEqual(await hooksRun, []);
  // The first run ends; the second makes its ladder call.
  held[1]!.answer();
  await untilTurns(() => names().includes("ladder_2"), "the second securing run made its call");
  assert.deepEqual(
    names(),
    ["set_cooler", "ladder_1", "ladder_2"],
    "no hook call while the second run's ladder call is under way",
  );
  // The second run ends: the hook call is made again, after both.
  held[2]!.answer();
  await untilTurns(() => held.length === 4, "the hook call was made again");
  assert.deepEqual(names(), ["set_cooler", "ladder_1", "ladder_2", "set_cooler"]);
  held[3]!.answer();
  let left = false;
  for (let i = 0; i < 200 && !left; i++) {
    left = await modes.requestWithReport("MANUAL").then(() => true, () => false);
    if (!left) await macrotask();
  }
  assert.ok(left, "FAULT -> MANUAL accepted once the calls made again have ended");
  assert.equal(held.length, 4, "nothing more was made");
});
