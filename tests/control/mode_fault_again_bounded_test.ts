/**
 * The hooks into FAULT made again while FAULT stands (ModeManager.runFaultHooksAgain, one per
 * e-stop press while latched): the FAULT entry in force keeps one promise standing for "all its
 * runs so far" (a provider that comes back waits for it), never the runs' results -- a press
 * storm must not grow what it retains. Observed with V8's own collector (exposed to this test
 * process through node:v8): after the runs, no press's failures may be reachable from the mode
 * manager. In-process: a router that refuses every call at once (each run fails and says so).
 */
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import type { CallRouter, HookFailure } from "../../src/control/mod.ts";
import { type CallRequest, ModeManager } from "../../src/control/mod.ts";
import { failedPrecondition } from "../../src/common/mod.ts";
import type { InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { call, hook } from "../safety/_fixture.ts";
import { macrotask } from "../helpers/turns.ts";
import { hookModes } from "./_mode_hook_rig.ts";

/** A full collection, then a macrotask: WeakRefs read in a later job see its outcome. */
async function collect(gc: () => void): Promise<void> {
  // A WeakRef target stays alive until the end of the job that made or read it.
  await macrotask();
  gc();
  await macrotask();
}

/** `n` presses while FAULT stands, each awaited; a weak reference to each press's failures. */
async function press(modes: ModeManager, n: number): Promise<WeakRef<HookFailure[]>[]> {
  const kept: WeakRef<HookFailure[]>[] = [];
  for (let i = 0; i < n; i++) {
    const failures: HookFailure[] = [];
    kept.push(new WeakRef(failures));
    const run = modes.runFaultHooksAgain(failures);
    assert.ok(run !== null, `press ${i}: FAULT stands with its hooks run`);
    assert.equal((await run).length, 1, `press ${i}: its run's one call failed`);
  }
  return kept;
}

Deno.test("ModeManager.runFaultHooksAgain keeps none of the presses' failures once their runs have ended (a press storm does not grow the FAULT entry)", async () => {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  const calls: CallRequest[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) => {
      calls.push(req);
      return Promise.reject(failedPrecondition("plant/plant0 refuses (test)"));
    },
  } as unknown as CallRouter;
  const host = { id: "plant", available: true, config: { timeoutMs: 1000 } };
  const inventory = {
    onAvailability: () => () => {},
    provider: () => host as unknown as ProviderSummary,
    providers: () => [],
    devices: () => [],
  } as unknown as InventoryReader;
  const modes = hookModes(router, inventory, [
    hook("*", "FAULT", [call("plant/plant0", "set_heater", { enabled: false })], false),
  ]);
  const first = await modes.requestWithReport("FAULT");
  assert.equal(first.hook_failures.length, 1);

  const PRESSES = 50;
  // Pressed from a frame of its own: nothing of the last press stays on this one.
  const kept = await press(modes, PRESSES);
  assert.equal(calls.length, 1 + PRESSES, "each press made the hook call again");

  await collect(gc);
  const retained = kept.filter((w) => w.deref() !== undefined).length;
  assert.equal(
    retained,
    0,
    `${retained} of ${PRESSES} presses' failures are still reachable after their runs ended`,
  );
  // Still waited for: leaving FAULT is accepted once every run has ended.
  assert.equal(modes.current(), "FAULT");
  assert.equal((await modes.requestWithReport("MANUAL")).mode, "MANUAL");
});
