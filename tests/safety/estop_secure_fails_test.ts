/**
 * The e-stop must work whatever else is failing: a provider that comes back while latched is
 * secured by a run begun from a promise reaction, where a rejection nobody handles ends the
 * runtime (main.ts). A securing run that fails (here the plan cannot be made: the inventory port
 * throws as it is read) is contained: one ERROR line naming the provider, its securing reported
 * failed to whoever awaits it, whoever waits for its ladder calls let go, and the provider's next
 * return secured as usual. In-process: the real Estop over a router that answers every call at
 * once, an inventory whose provider's device list throws while the test says so, and a modes port
 * that records FAULT and keeps the e-stop's latch securing.
 */
import assert from "node:assert/strict";
import type { LatchSecuring } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import type { FreshReader, InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { errorLog, faultRecordingModes, heaterOffLadder, recordingRouter } from "./_clock_rig.ts";

/** Provider plant, up, whose device list throws while `broken.on`; its changes and return told. */
function brittleInventory() {
  const broken = { on: false };
  const availability: ((p: ProviderSummary, up: boolean) => void)[] = [];
  const changes: ((id: string, change: string) => void)[] = [];
  const host = {
    id: "plant",
    available: true,
    get devices() {
      if (broken.on) throw new Error("inventory port failed");
      return [];
    },
    config: { timeoutMs: 1000 },
  } as unknown as ProviderSummary;
  const inventory = {
    onAvailability: (l: (p: ProviderSummary, up: boolean) => void) => {
      availability.push(l);
      return () => {};
    },
    onChange: (l: (id: string, change: string) => void) => {
      changes.push(l);
      return () => {};
    },
    provider: (p: string) => p === "plant" ? host : undefined,
    providers: () => [host],
    devices: () => [],
  } as unknown as InventoryReader;
  return {
    inventory,
    host,
    broken,
    /** Its inventory changed (the plan is made again when next asked for), then it is up again. */
    restarted: () => {
      for (const l of changes) l("plant", "changed");
      for (const l of availability) l(host, true);
    },
  };
}

Deno.test("Estop contains a securing run that fails while latched: one ERROR line, reported failed, the next return secured", async () => {
  const made: string[] = [];
  const { inventory, host, broken, restarted } = brittleInventory();
  const { modes } = faultRecordingModes();
  let latchSecuring: LatchSecuring | undefined;
  modes.setLatchSecuring = (s) => (latchSecuring = s);
  const { log, errors } = errorLog();
  const estop = new Estop({
    router: recordingRouter(made),
    inventory,
    reads: {} as FreshReader,
    clock: systemClock,
    log,
    modes,
    safeState: heaterOffLadder(),
  });
  await estop.trigger("test");
  assert.deepEqual(made, ["plant set_heater"], "the trigger's ladder call");
  broken.on = true;
  restarted();
  const failing = estop.securing(host);
  assert.ok(failing !== null, "a securing run began for the return while latched");
  const err = await failing.then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Error, "its securing is reported failed to whoever awaits it");
  assert.equal((err as { code?: string }).code, "INTERNAL");
  assert.match(err.message, /securing provider plant .* failed: inventory port failed/);
  const lines = errors.filter((l) => l.includes("securing provider plant"));
  assert.equal(lines.length, 1, `one ERROR line: ${errors.join(" | ")}`);
  assert.ok(lines[0]!.startsWith("ERROR"));
  assert.deepEqual(made, ["plant set_heater"], "no call made by the failed run");
  // Whoever waits for its ladder calls (the hooks into FAULT made again) is let go.
  assert.ok(latchSecuring !== undefined);
  assert.deepEqual(await latchSecuring(host, { notBegun: false }), []);
  // The provider's next return is secured as usual.
  broken.on = false;
  restarted();
  const next = estop.securing(host);
  assert.ok(next !== null && next !== failing, "a new securing run began for the next return");
  const actions = await next;
  assert.deepEqual(made, ["plant set_heater", "plant set_heater"], "secured again");
  assert.deepEqual(actions.map((a) => a.success), [true]);
});
