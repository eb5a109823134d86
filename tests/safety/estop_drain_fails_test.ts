/**
 * The e-stop answers when its drain cannot be done: the drain (waiting for each provider's calls
 * in flight, bounded) runs beside the ladder, and a router whose drain rejects, or an inventory
 * that cannot list its providers, made the trigger reject after the ladder's calls were made --
 * the caller of POST /v0/estop lost its answer although the latch, FAULT and the calls held.
 * Now the drain is reported incomplete (the provider it could not wait for named as pending, or
 * none named when the providers could not be listed), with one ERROR line.
 * In-process: the real Estop, rung 1 declared (its call needs no device inventory).
 */
import assert from "node:assert/strict";
import type { CallRouter } from "../../src/control/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import {
  containedEstop,
  errorLog,
  faultRecordingModes,
  providersUp,
  recordingRouter,
} from "./_clock_rig.ts";

function rig(router: CallRouter, inventory: InventoryReader) {
  const fault = faultRecordingModes();
  const { log, errors } = errorLog();
  const estop = containedEstop({
    router,
    inventory,
    log,
    modes: fault.modes,
  });
  return { estop, fault, errors };
}

Deno.test("Estop.trigger answers with the drain incomplete when the router's drain rejects", async () => {
  const made: string[] = [];
  const router = recordingRouter(made);
  (router as { drainFrom: unknown }).drainFrom = () => () =>
    Promise.reject(new Error("drain port failed"));
  const r = rig(router, providersUp("plant"));
  const result = await r.estop.trigger("test");
  assert.equal(result.latched, true);
  assert.equal(r.estop.latched, true);
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(made, ["plant set_heater"]);
  assert.deepEqual(result.drain, { complete: false, pending_providers: ["plant"] });
  const lines = r.errors.filter((l) => l.includes("drain port failed"));
  assert.equal(lines.length, 1, `one ERROR line: ${r.errors.join(" | ")}`);
  assert.match(lines[0]!, /^ERROR .*plant/);
});

Deno.test("Estop.trigger answers with the drain incomplete when the providers cannot be listed", async () => {
  const made: string[] = [];
  const inventory = providersUp("plant");
  (inventory as { providers: unknown }).providers = () => {
    throw new Error("inventory port failed");
  };
  const r = rig(recordingRouter(made), inventory);
  const result = await r.estop.trigger("test");
  assert.equal(result.latched, true);
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(made, ["plant set_heater"]);
  assert.deepEqual(result.drain, { complete: false, pending_providers: [] });
  // (The plan reads the providers too: its own ERROR line says it fell back to rung 1.)
  const lines = r.errors.filter((l) => l.includes("drain") && l.includes("inventory port failed"));
  assert.equal(lines.length, 1, `one ERROR line: ${r.errors.join(" | ")}`);
});
