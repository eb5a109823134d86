/**
 * A listener of the inventory that throws (a bug in a peripheral subsystem: the Sparkplug edge
 * node births a provider's devices from this fan-out) is contained where the provider layer tells
 * its listeners, as the event bus contains its subscribers: the provider still comes up, the
 * listeners after it are still told, and the error is logged once per throw at ERROR.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { d, manualCall, plantProvider } from "../safety/_fixture.ts";

Deno.test("a throwing inventory listener neither keeps a restarted provider down nor silences the listeners after it", async () => {
  await using r = await rig({
    providers: [plantProvider("plant", { restartBackoffMs: 50 })],
    arm: true,
  });
  const rt = r.kernel;
  const host = rt.registry.host("plant")!;
  let thrown = 0;
  rt.inventory.onChange(() => {
    thrown++;
    throw new Error("a peripheral subsystem's bug (inventory)");
  });
  rt.inventory.onAvailability(() => {
    thrown++;
    throw new Error("a peripheral subsystem's bug (availability)");
  });
  const told: string[] = [];
  rt.inventory.onChange((id, change) => told.push(`${id} ${change}`));
  rt.inventory.onAvailability((p, up) => told.push(`${p.id} ${up ? "up" : "down"}`));

  r.kill("plant");
  // Before: the throw went up through the provider's commit, so the restart failed, again and
  // again, until the circuit opened.
  await waitFor("plant back after its restart", () => told.includes("plant up"), 5000);
  assert.equal(host.available, true);
  assert.ok(thrown >= 2, `the faulty listener ran (${thrown})`);
  assert.deepEqual(told, ["plant down", "plant unchanged", "plant up"]);
  const errors = r.lines.filter((l) => l.includes("a peripheral subsystem's bug"));
  assert.ok(errors.length >= 2, r.lines.join("\n"));
  for (const e of errors) assert.match(e, /^ERROR .*listener failed/);
  await manualCall(rt, "plant", "plant0", 2, { duty: d(0.5) });
});
