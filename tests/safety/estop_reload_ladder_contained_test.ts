/**
 * A reload of safety.safe_state while latched secures again every provider up whose ladder calls
 * it changes, and tells the mode manager of each (EstopModes.ladderReloaded). A modes port that
 * throws for one provider does not keep the others from being secured: the failure is contained
 * per provider (one ERROR line naming it). In-process: the real Estop over a router that answers
 * every call at once and a modes port whose ladderReloaded throws for the first provider.
 */
import assert from "node:assert/strict";
import type { FaultEntry } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop, type EstopModes, type SafeStateConfig } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { call } from "./_fixture.ts";
import { errorLog, providersUp, recordingRouter } from "./_clock_rig.ts";

Deno.test("Estop.reconfigure while latched secures the next provider when ladderReloaded throws for one", async () => {
  const made: string[] = [];
  const router = recordingRouter(made);
  const inventory = providersUp("alpha", "beta");
  const reloaded: string[] = [];
  const fault: FaultEntry = {
    committed: true,
    from: "MANUAL",
    runHooks: () => Promise.resolve([]),
    hookFailuresSoFar: () => [],
  };
  const modes: EstopModes = {
    current: () => "FAULT",
    enterFault: () => fault,
    addArmCheck() {},
    ladderReloaded(host) {
      reloaded.push(host.id);
      if (host.id === "alpha") throw new Error("modes port broken for alpha");
    },
  };
  const { log, errors } = errorLog();
  const ladder = (fn: string): SafeStateConfig => ({
    setpoints: [],
    hooks: [call("alpha/dev0", fn), call("beta/dev0", fn)],
    zeroIsSafe: false,
    expect: [],
    verifyTimeoutMs: 100,
  });
  const estop = new Estop({
    router,
    inventory,
    reads: {} as FreshReader,
    clock: systemClock,
    log,
    modes,
    safeState: ladder("stop_old"),
  });
  await estop.trigger("test");
  assert.deepEqual(made, ["alpha stop_old", "beta stop_old"]);

  // A reload changes both providers' ladder calls while latched.
  const runs = estop.reconfigure(ladder("stop_new"));
  await Promise.all(runs);
  assert.deepEqual(reloaded, ["alpha", "beta"], "the modes port is told of both providers");
  assert.equal(runs.length, 2, "both providers are secured again");
  assert.deepEqual(made.slice(2).sort(), ["alpha stop_new", "beta stop_new"]);
  assert.deepEqual(
    errors.filter((l) => l.includes("alpha") && l.includes("modes port broken")).length,
    1,
    "one ERROR line names the provider and the failure",
  );
});
