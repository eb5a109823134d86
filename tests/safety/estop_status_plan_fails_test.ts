/**
 * Estop.status when the plan cannot be made (the inventory port throws as a provider's devices
 * are read): the stop has its fallback (estop_plan_fails_test.ts), and status must have one too,
 * or GET /v0/runtime/status answers 500 exactly when an operator needs to see the latch. The
 * status shows the latch and its cause, the plan a stop would run without the devices (the
 * declared hooks, else none) and `plan_failed` saying why. In-process (a unit test of the
 * Estop): the real Estop over a router that answers every call at once and an inventory whose
 * provider's device list throws.
 */
import assert from "node:assert/strict";
import { Estop, type SafeStateConfig } from "../../src/safety/mod.ts";
import type { InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { containedEstop, heaterOffLadder } from "./_clock_rig.ts";

/** Provider plant, up, whose device list throws `inventory port failed` when read. */
function brokenInventory(): InventoryReader {
  const host = {
    id: "plant",
    available: true,
    get devices(): never {
      throw new Error("inventory port failed");
    },
    config: { timeoutMs: 1000 },
  } as unknown as ProviderSummary;
  return {
    onAvailability: () => () => {},
    onChange: () => () => {},
    provider: (id: string) => id === "plant" ? host : undefined,
    providers: () => [host],
    devices: () => [],
  } as unknown as InventoryReader;
}

function rig(safeState: SafeStateConfig): Estop {
  return containedEstop({
    inventory: brokenInventory(),
    safeState,
  });
}

Deno.test("Estop.status shows the latch and the hooks plan, and says the plan failed, when the inventory throws", async () => {
  const estop = rig(heaterOffLadder());
  await estop.trigger("test");
  const status = estop.status();
  assert.equal(status.latched, true);
  assert.equal(status.cause, "api");
  assert.equal(typeof status.latched_at_epoch_ms, "number");
  assert.equal(status.software_safe_state, "hooks");
  assert.equal(status.plan_failed, "inventory port failed");
  assert.deepEqual(status.plan, {
    rung: "hooks",
    calls: [{
      device_handle: "plant/plant0",
      function: "set_heater",
      args: heaterOffLadder().hooks[0]!.args,
    }],
    uncovered: [],
  });
  assert.equal(status.uncovered_actuating_functions, 0);
  assert.deepEqual(status.unverified_devices, []);
  assert.deepEqual(status.unverified_reasons, []);
});

Deno.test("Estop.status shows rung none and says the plan failed when the inventory throws and no hooks are declared", () => {
  const estop = rig({ ...heaterOffLadder(), hooks: [], zeroIsSafe: true });
  const status = estop.status();
  assert.equal(status.latched, false);
  assert.equal(status.cause, null);
  assert.equal(status.software_safe_state, "none");
  assert.deepEqual(status.plan, { rung: "none", calls: [], uncovered: [] });
  assert.equal(status.plan_failed, "inventory port failed");
});

Deno.test("Estop.status has no plan_failed while the plan can be made", () => {
  const estop = containedEstop({
    inventory: { ...brokenInventory(), providers: () => [] } as unknown as InventoryReader,
  });
  const status = estop.status();
  assert.equal(status.software_safe_state, "hooks");
  assert.equal("plan_failed" in status, false);
});
