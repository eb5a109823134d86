/**
 * A listener of the state cache that throws is contained and its failure said at WARN; a custom
 * logger that throws on that WARN line must not take the listeners after it (the history, the
 * alarms) away from the poll, nor the poll's own bookkeeping.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { plantProvider } from "../safety/_fixture.ts";

Deno.test("StateCache tells the poll listeners after a throwing one when its WARN line throws too (a custom logger)", async () => {
  await using r = await rig({
    providers: [plantProvider("plant")],
    // The sink fails on the cache's listener-failure line.
    onLine: (line) => {
      if (line.includes("device poll listener failed")) throw new Error("log sink failed");
    },
  });
  const rt = r.kernel;
  let thrown = 0;
  rt.cache.onDevicePolled(() => {
    thrown++;
    throw new Error("a peripheral subsystem's bug (poll)");
  });
  let told = 0;
  rt.cache.onDevicePolled(() => told++);
  // Before: the WARN line's throw left the loop over the listeners at the faulty one: the one
  // after it was never told (nor the history or alarms subscribed after it).
  await waitFor("two polls told", () => thrown >= 2, 5000);
  await waitFor("the listener after the faulty one told", () => told >= 2, 2000);
  assert.ok(told >= thrown - 1, `told ${told} of ${thrown} polls`);
});
