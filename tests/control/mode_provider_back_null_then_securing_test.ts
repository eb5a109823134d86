/**
 * Two reloads of a provider's e-stop ladder calls while the re-application of its hook calls into
 * FAULT waits for its turn, the first with no securing run (the e-stop secures nothing then), the
 * second with one: the re-application waits for that run -- its hook call lands after the run's
 * ladder call, never during it, the order of a stop (ladder, then hooks; ModeManager
 * mergeProviderBack). In-process: a router that holds each call until the test answers it, and a
 * securing run that makes its ladder call through it.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import type { CallConfig } from "../../src/config/mod.ts";
import { providerBackModes } from "./_provider_back_rig.ts";
import { macrotask, untilTurns } from "../helpers/turns.ts";

Deno.test("ModeManager makes a provider's hook calls into FAULT again after the securing run a second reload began when the first reload began none", async () => {
  // Each call, and whether the securing run's ladder call had been answered when it was made.
  const held: { req: CallRequest; afterLadder: boolean; answer(): void }[] = [];
  let ladderAnswered = false;
  const hold = (req: CallRequest) =>
    new Promise<unknown>((resolve) =>
      held.push({
        req,
        afterLadder: ladderAnswered,
        answer: () => {
          if (req.functionName === "ladder_1") ladderAnswered = true;
          resolve({});
        },
      })
    );
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: hold,
  } as unknown as CallRouter;
  const { modes, host } = providerBackModes(router);
  // The first reload's securing: none (null); the second's: a run making its ladder call once
  // the test lets it begin.
  let begin!: () => void;
  const begun = new Promise<void>((r) => begin = r);
  let asked = 0;
  modes.setLatchSecuring((_host, o) => {
    assert.equal(o?.notBegun, true, "asked for a run not begun (a reload)");
    if (++asked === 1) return null;
    return begun.then(() => hold({ providerId: "plant", functionName: "ladder_1" } as CallRequest))
      .then((): readonly CallConfig[] => []);
  });
  const names = () => held.map((h) => h.req.functionName);

  const entry = modes.enterFault("e-stop", { kind: "estop", cause: "api" });
  const hooksRun = entry.runHooks();
  await untilTurns(() => names().includes("set_cooler"), "the hooks' run made its call");
  // While it runs: two reloads of plant's ladder calls, the second beginning a securing run.
  modes.ladderReloaded(host);
  modes.ladderReloaded(host);
  assert.equal(asked, 2);
  begin();
  await untilTurns(() => names().includes("ladder_1"), "the securing run made its call");
  held[0]!.answer();
  assert.deepEqual(await hooksRun, []);
  // The re-application's next steps are promise reactions only (the router holds each call
  // synchronously): one macrotask later, a hook call it made without waiting would be here.
  await macrotask();
  assert.deepEqual(names(), ["set_cooler", "ladder_1"], "no hook call during the ladder call");
  held[1]!.answer();
  await untilTurns(() => held.length === 3, "the hook call was made again");
  assert.deepEqual(names(), ["set_cooler", "ladder_1", "set_cooler"]);
  assert.equal(held[2]!.afterLadder, true, "after the securing run's ladder call");
  held[2]!.answer();
  let left = false;
  for (let i = 0; i < 200 && !left; i++) {
    left = await modes.requestWithReport("MANUAL").then(() => true, () => false);
    if (!left) await macrotask();
  }
  assert.ok(left, "FAULT -> MANUAL accepted once the calls made again have ended");
  assert.equal(held.length, 3, "nothing more was made");
});
