/**
 * The hooks into FAULT made again for a provider that comes back while FAULT stands
 * (ModeManager #providerBack) against a transition leaving FAULT: a stop action must not land
 * after the operator's first commands, so leaving FAULT is refused while they run -- also when
 * the provider came back while that transition's before-hooks ran. In-process: a router and an
 * inventory that hold each call until the test answers it.
 */
import assert from "node:assert/strict";
import type { CallRouter } from "../../src/control/mod.ts";
import { type CallRequest, ModeManager } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import type { InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { call, hook } from "../safety/_fixture.ts";

/** A call the fake router holds until the test answers it. */
interface HeldCall {
  readonly req: CallRequest;
  answer(): void;
}

function fakes() {
  const held: HeldCall[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) =>
      new Promise<unknown>((resolve) => held.push({ req, answer: () => resolve({}) })),
  } as unknown as CallRouter;
  const availability: ((p: ProviderSummary, up: boolean) => void)[] = [];
  const host = (id: string) =>
    ({ id, available: true, config: { timeoutMs: 1000 } }) as unknown as ProviderSummary;
  const inventory = {
    onAvailability: (l: (p: ProviderSummary, up: boolean) => void) => {
      availability.push(l);
      return () => {};
    },
    provider: (id: string) => host(id),
    providers: () => [],
    devices: () => [],
  } as unknown as InventoryReader;
  return {
    held,
    router,
    inventory,
    comesBack: (id: string) => availability.forEach((l) => l(host(id), true)),
  };
}

/** Waits (bounded) until `n` calls are held. */
async function heldCalls(held: HeldCall[], n: number): Promise<void> {
  for (let i = 0; i < 500 && held.length < n; i++) await new Promise((r) => setTimeout(r, 2));
  assert.equal(held.length, n, `${n} call(s) held: ${JSON.stringify(held.map((h) => h.req))}`);
}

Deno.test("ModeManager refuses to leave FAULT when a provider came back during the transition's before-hooks and its hook calls into FAULT still run", async () => {
  const f = fakes();
  const modes = new ModeManager({
    router: f.router,
    inventory: f.inventory,
    bus: new EventBus(),
    clock: systemClock,
    log: testLogger(),
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: {
      beforeTransition: [
        hook("*", "FAULT", [call("plant/plant0", "set_heater", { enabled: false })], false),
        hook("FAULT", "MANUAL", [call("probe/probe0", "read_status")], false),
      ],
      afterTransition: [],
    },
  });
  const fault = modes.requestWithReport("FAULT");
  await heldCalls(f.held, 1);
  f.held[0]!.answer();
  assert.deepEqual((await fault).hook_failures, []);

  // Re-arming: its before-hook (a read) is in flight when plant comes back.
  const rearm = modes.requestWithReport("MANUAL");
  await heldCalls(f.held, 2);
  assert.equal(f.held[1]!.req.providerId, "probe");
  f.comesBack("plant");
  await heldCalls(f.held, 3);
  assert.equal(f.held[2]!.req.providerId, "plant");
  assert.equal(f.held[2]!.req.origin, "safety");
  // The before-hook ends while plant's stop action is still on its way.
  f.held[1]!.answer();
  const outcome = await rearm.then((r) => `committed ${r.mode}`, (e) => `refused: ${e.message}`);
  f.held[2]!.answer();
  assert.match(
    outcome,
    /^refused: FAULT hooks are still running/,
    `a stop action for plant was in flight when FAULT -> MANUAL ended: ${outcome}`,
  );
  assert.equal(modes.current(), "FAULT");
});
