/**
 * A provider that comes back while a re-application of its hook calls into FAULT already waits
 * for its turn (a reload changed its e-stop ladder calls while the stop's hooks still ran) is not
 * dropped as if that re-application covered it: it may have missed the stop's calls, so it gets
 * the calls a reload dropped from the stop first, then the hooks in force, after the securing run
 * the e-stop began for this return (not only the one begun for the reload) -- a stop's order,
 * ladder then hooks (ModeManager #providerBack). In-process: a router that holds each call until
 * the test answers it, and e-stop securing runs the test settles.
 */
import assert from "node:assert/strict";
import type { CallConfig } from "../../src/config/mod.ts";
import { holdingRouter } from "./_mode_hook_rig.ts";
import { providerBackModes } from "./_provider_back_rig.ts";
import { macrotask, untilTurns } from "../helpers/turns.ts";

Deno.test("ModeManager makes the stop's dropped calls for a provider that comes back while a re-application for a reloaded ladder waits, after the securing run of that return", async () => {
  const { held, router } = holdingRouter();
  const { modes, host, heaterOff, comeBack } = providerBackModes(router);
  // The e-stop's securing runs of plant: the one a reload of its ladder begins (asked for as
  // "not begun"), and the one its return begins (the latest, asked for at the turn).
  const forReload = Promise.withResolvers<readonly CallConfig[]>();
  const forReturn = Promise.withResolvers<readonly CallConfig[]>();
  const asked: string[] = [];
  modes.setLatchSecuring((_host, o) => {
    asked.push(o?.notBegun === true ? "reload" : "return");
    return o?.notBegun === true ? forReload.promise : forReturn.promise;
  });

  // FAULT committed as the e-stop does; a reload drops set_cooler before the hooks run.
  const entry = modes.enterFault("e-stop", { kind: "estop", cause: "api" });
  modes.reconfigure({ beforeTransition: [heaterOff], afterTransition: [] }, "BLOCK");
  const hooksRun = entry.runHooks();
  await untilTurns(() => held.length === 1, "the hooks' run made its first call");
  // While they run: a reload changes plant's ladder calls, then plant comes back.
  modes.ladderReloaded(host);
  comeBack();
  // The hooks' own run ends (the stop's dropped call, then the one in force).
  held[0]!.answer();
  await untilTurns(() => held.length === 2, "the hooks' run made its second call");
  held[1]!.answer();
  assert.deepEqual(await hooksRun, []);
  assert.deepEqual(held.map((h) => h.req.functionName), ["set_cooler", "set_heater"]);

  // Both securing runs end; plant's calls are made again after them.
  forReload.resolve([]);
  forReturn.resolve([]);
  let left = false;
  for (let i = 0; i < 200 && !left; i++) {
    for (const h of held) h.answer();
    left = await modes.requestWithReport("MANUAL").then(() => true, () => false);
    if (!left) await macrotask();
  }
  assert.ok(left, "FAULT -> MANUAL accepted once the calls made again have ended");
  assert.deepEqual(
    { asked, made: held.slice(2).map((h) => h.req.functionName) },
    { asked: ["reload", "return"], made: ["set_cooler", "set_heater"] },
    "after the return's securing run: the stop's dropped call, then the hooks in force",
  );
});
