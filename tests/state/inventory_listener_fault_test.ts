/**
 * A listener of the inventory that throws (a bug in a peripheral subsystem: the Sparkplug edge
 * node births a provider's devices from this fan-out) is contained where the provider layer tells
 * its listeners, as the event bus contains its subscribers: the provider still comes up, the
 * listeners after it are still told, and the error is logged once per throw at ERROR. So is a
 * provider's own line that throws (a custom logger): its supervision goes on past it.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { d, manualCall, plantProvider } from "../safety/_fixture.ts";
import type { Kernel } from "../../src/app/kernel.ts";

/**
 * Adds to `rt`'s inventory a change and an availability listener that throw (counted in
 * `thrown`), then one of each after them that notes what it is told in `told`.
 */
function faultyThenTold(rt: Kernel): { thrown: number; told: string[] } {
  const listeners = { thrown: 0, told: [] as string[] };
  rt.inventory.onChange(() => {
    listeners.thrown++;
    throw new Error("a peripheral subsystem's bug (inventory)");
  });
  rt.inventory.onAvailability(() => {
    listeners.thrown++;
    throw new Error("a peripheral subsystem's bug (availability)");
  });
  rt.inventory.onChange((id, change) => listeners.told.push(`${id} ${change}`));
  rt.inventory.onAvailability((p, up) => listeners.told.push(`${p.id} ${up ? "up" : "down"}`));
  return listeners;
}

Deno.test("a throwing inventory listener neither keeps a restarted provider down nor silences the listeners after it", async () => {
  await using r = await rig({
    providers: [plantProvider("plant", { restartBackoffMs: 50 })],
    arm: true,
  });
  const rt = r.kernel;
  const host = rt.registry.host("plant")!;
  const listeners = faultyThenTold(rt);
  const { told } = listeners;

  r.kill("plant");
  // Before: the throw went up through the provider's commit, so the restart failed, again and
  // again, until the circuit opened.
  await waitFor("plant back after its restart", () => told.includes("plant up"), 5000);
  assert.equal(host.available, true);
  assert.ok(listeners.thrown >= 2, `the faulty listener ran (${listeners.thrown})`);
  assert.deepEqual(told, ["plant down", "plant unchanged", "plant up"]);
  const errors = r.lines.filter((l) => l.includes("a peripheral subsystem's bug"));
  assert.ok(errors.length >= 2, r.lines.join("\n"));
  for (const e of errors) assert.match(e, /^ERROR .*listener failed/);
  await manualCall(rt, "plant", "plant0", 2, { duty: d(0.5) });
});

Deno.test("a throwing inventory listener whose ERROR line throws too (a custom logger) does not silence the listeners after it", async () => {
  await using r = await rig({
    providers: [plantProvider("plant", { restartBackoffMs: 50 })],
    arm: true,
    // The sink fails on the listener's ERROR line.
    onLine: (line) => {
      if (line.includes("inventory listener failed")) throw new Error("log sink failed");
    },
  });
  const rt = r.kernel;
  const listeners = faultyThenTold(rt);
  const { told } = listeners;

  r.kill("plant");
  // Before: the ERROR line's throw left the listener error handler, and the listeners after the
  // faulty one were not told.
  await waitFor("plant back after its restart", () => told.includes("plant up"), 5000);
  assert.ok(listeners.thrown >= 2, `the faulty listener ran (${listeners.thrown})`);
  assert.deepEqual(told, ["plant down", "plant unchanged", "plant up"]);
});

Deno.test("a throwing event-bus or device-condition listener whose ERROR line throws too (a custom logger) does not silence the listeners after it", async () => {
  await using r = await rig({
    providers: [plantProvider("plant", { restartBackoffMs: 50 })],
    arm: true,
    // The sink fails on the kernel's listener-error lines.
    onLine: (line) => {
      if (/(event|device condition) listener failed/.test(line)) {
        throw new Error("log sink failed");
      }
    },
  });
  const rt = r.kernel;
  let thrown = 0;
  rt.bus.subscribe(() => {
    thrown++;
    throw new Error("a peripheral subsystem's bug (event)");
  });
  rt.outages.onChange(() => {
    thrown++;
    throw new Error("a peripheral subsystem's bug (device condition)");
  });
  const events: string[] = [];
  rt.bus.subscribe((e) => events.push(e.event.kind));
  const conditions: string[] = [];
  rt.outages.onChange((c) => conditions.push(`${c.deviceId} ${c.condition.kind}`));

  r.kill("plant");
  // Before: the ERROR line's throw left the bus's (the outages') error handler, and the
  // listeners after the faulty one were not told.
  await waitFor("the device's outage told", () => conditions.length > 0, 5000);
  await waitFor("plant back after its restart", () => rt.registry.host("plant")!.available, 5000);
  assert.ok(thrown >= 2, `the faulty listeners ran (${thrown})`);
  assert.ok(events.length > 0, "no event told after the faulty listener");
  assert.match(conditions[0]!, /^plant0 /);
});

Deno.test("a provider whose 'provider down' line throws (a custom logger) is still said down, and restarted", async () => {
  await using r = await rig({
    providers: [plantProvider("plant", { restartBackoffMs: 50 })],
    arm: true,
    // The sink fails on the provider's down line.
    onLine: (line) => {
      if (line.includes("provider down:")) throw new Error("log sink failed");
    },
  });
  const rt = r.kernel;
  const told: string[] = [];
  rt.inventory.onAvailability((p, up) => told.push(`${p.id} ${up ? "up" : "down"}`));

  r.kill("plant");
  // Before: the line's throw left the session's end before the supervisor heard of it: the
  // provider stayed AVAILABLE with no process, never restarted (and the throw went unhandled).
  await waitFor("plant back after its restart", () => told.includes("plant up"), 5000);
  assert.deepEqual(told, ["plant down", "plant up"]);
  await manualCall(rt, "plant", "plant0", 2, { duty: d(0.5) });
});
