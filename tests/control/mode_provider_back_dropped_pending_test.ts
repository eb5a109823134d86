/**
 * A provider that comes back while the stop stands gets that stop's dropped calls first (those a
 * reload dropped between the FAULT commit and the start of its hook run), then the hooks in force
 * minus the ladder's calls -- also when it came back before the hooks began (an e-stop's ladder
 * still running): the e-stop's securing of it, queued behind that ladder, may land after the
 * hooks' own run and undo what they set, so its calls are made again after that securing run
 * (ModeManager #providerBack, waiting branch). In-process: a router that answers every call at
 * once and an e-stop securing the test settles.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import type { CallConfig } from "../../src/config/mod.ts";
import { providerBackModes } from "./_provider_back_rig.ts";
import { macrotask } from "../helpers/turns.ts";

Deno.test("ModeManager makes the calls a reload dropped from the stop again for a provider that came back before the stop's hooks began, after its securing run", async () => {
  const calls: CallRequest[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) => {
      calls.push(req);
      return Promise.resolve({});
    },
  } as unknown as CallRouter;
  const { modes, heaterOff, comeBack } = providerBackModes(router);
  // The e-stop's securing of plant: its ladder made no declared call; settled by the test.
  const securing = Promise.withResolvers<readonly CallConfig[]>();
  let asked = 0;
  modes.setLatchSecuring(() => {
    asked++;
    return securing.promise;
  });

  // As the e-stop does: FAULT committed, its hooks run after its ladder (not yet).
  const entry = modes.enterFault("e-stop", { kind: "estop", cause: "api" });
  // A reload meanwhile drops set_cooler: the stop under way still makes it.
  modes.reconfigure({ beforeTransition: [heaterOff], afterTransition: [] }, "BLOCK");
  // plant comes back while the ladder runs.
  comeBack();

  assert.deepEqual(await entry.runHooks(), []);
  const names = () => calls.map((c) => c.functionName);
  assert.deepEqual(
    names(),
    ["set_cooler", "set_heater"],
    "the stop's own run: dropped, then in force",
  );
  // Its re-application waits for the securing run (which may land after the hooks' run).
  for (let i = 0; i < 100 && asked === 0; i++) await macrotask();
  assert.equal(asked, 1, "plant's calls wait for its securing run");
  securing.resolve([]);
  // Leaving FAULT waits for the re-application: once accepted, it has ended.
  let left = false;
  for (let i = 0; i < 100 && !left; i++) {
    left = await modes.requestWithReport("MANUAL").then(() => true, () => false);
    if (!left) await macrotask();
  }
  assert.ok(left, "FAULT -> MANUAL accepted once the calls made again have ended");
  assert.deepEqual(
    names().slice(2),
    ["set_cooler", "set_heater"],
    "after its securing run: the stop's dropped call, then the hooks in force",
  );
});
