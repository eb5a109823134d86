/**
 * A provider that comes back (or has a device answer again) while FAULT's hooks have yet to begin
 * (an e-stop's ladder still runs: its committer calls runHooks after it) waits for them, to get
 * its hook calls into FAULT made again once they have run (ModeManager #providerBack). However
 * often it comes back meanwhile -- a flapping provider during a long ladder -- one return per
 * provider waits: the others are dropped then anyway (one re-application per provider waits at
 * a time), so they must not be kept until the hooks run. Observed with V8's own collector
 * (exposed to this test process through node:v8): of N returns' provider summaries, one stays
 * reachable. In-process: a router that answers every call at once.
 */
import assert from "node:assert/strict";
import v8 from "node:v8";
import vm from "node:vm";
import type { CallRouter } from "../../src/control/mod.ts";
import type { CallRequest } from "../../src/control/mod.ts";
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

/**
 * `n` returns of provider `id`, each with a summary of its own (as a reload restarting it would
 * list); weak references to them. The latest is the one `listed` holds: the inventory lists it at
 * the re-application's turn (one taken out by a reload meanwhile gets no calls).
 */
function comeBack(
  availability: ((p: ProviderSummary, up: boolean) => void)[],
  listed: Map<string, ProviderSummary>,
  id: string,
  n: number,
): WeakRef<ProviderSummary>[] {
  const kept: WeakRef<ProviderSummary>[] = [];
  for (let i = 0; i < n; i++) {
    const host = { id, available: true, config: { timeoutMs: 1000 } } as ProviderSummary;
    listed.set(id, host);
    kept.push(new WeakRef(host));
    for (const l of availability) l(host, true);
  }
  return kept;
}

Deno.test("ModeManager keeps one return per provider waiting for FAULT's hooks to begin, however often it comes back before they do, and makes its hook calls again once", async () => {
  v8.setFlagsFromString("--expose-gc");
  const gc = vm.runInNewContext("gc") as () => void;
  const calls: CallRequest[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) => {
      calls.push(req);
      return Promise.resolve({});
    },
  } as unknown as CallRouter;
  const availability: ((p: ProviderSummary, up: boolean) => void)[] = [];
  const listed = new Map<string, ProviderSummary>();
  const inventory = {
    onAvailability: (l: (p: ProviderSummary, up: boolean) => void) => {
      availability.push(l);
      return () => {};
    },
    provider: (id: string) => listed.get(id),
    providers: () => [],
    devices: () => [],
  } as unknown as InventoryReader;
  const modes = hookModes(router, inventory, [
    hook("*", "FAULT", [call("plant/plant0", "set_heater", { enabled: false })], false),
  ]);
  // As the e-stop does: FAULT committed now, its hooks run after its ladder (not yet).
  const entry = modes.enterFault("e-stop", { kind: "estop", cause: "api" });
  assert.equal(entry.committed, true);

  const RETURNS = 50;
  const kept = comeBack(availability, listed, "plant", RETURNS);
  await collect(gc);
  const waiting = kept.filter((w) => w.deref() !== undefined).length;
  assert.equal(
    waiting,
    1,
    `${waiting} of ${RETURNS} returns of plant are kept waiting for FAULT's hooks to begin`,
  );
  assert.equal(calls.length, 0, "nothing is made before the hooks run");

  // The ladder has finished: the hooks run, then plant's calls are made again, once.
  assert.deepEqual(await entry.runHooks(), []);
  const hookRun = calls.length;
  assert.equal(hookRun, 1, "the hooks' own run made its one call");
  for (let i = 0; i < 100 && calls.length < 2; i++) {
    await macrotask();
  }
  // Leaving FAULT waits for the re-application: once accepted, it has ended.
  let left = false;
  for (let i = 0; i < 100 && !left; i++) {
    left = await modes.requestWithReport("MANUAL").then(() => true, () => false);
    if (!left) await macrotask();
  }
  assert.ok(left, "FAULT -> MANUAL accepted once the calls made again have ended");
  assert.equal(calls.length, 2, `one re-application for plant: ${JSON.stringify(calls)}`);
  assert.ok(calls.every((c) => c.providerId === "plant" && c.origin === "safety"));
});
