/**
 * A re-verification waiting for its turn (a provider that came back while latched was secured,
 * its read-back waits for the running stop) belongs to the latch its securing calls were made
 * under: a release ends it (its read-back is skipped), and a provider secured under a new latch
 * pressed meanwhile starts a batch of its own, whose record counts that latch's calls alone and
 * names its cause (docs/safety.md, "A provider that comes back while latched").
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { expectation, plantProvider } from "./_fixture.ts";
import { heldSlowRig } from "./_held_slow_rig.ts";

Deno.test("Estop re-verification waiting across a release and a new latch keeps each latch's calls in its own record", async () => {
  const plantEntry = plantProvider("plant", { restartBackoffMs: 50 });
  const { r: started, held } = await heldSlowRig(
    { ...plantEntry, restartPolicy: { ...plantEntry.restartPolicy, maxAttempts: 5 } },
    [expectation("plant/plant0/fan_duty", { equals: 0 }, 0)],
  );
  await using r = started;
  try {
    const rt = r.kernel;
    const plant = rt.registry.host("plant")!;
    const securingCalls = async () => {
      const page = await rt.audit.query({ limit: 100, origin: "estop" });
      return page.entries.filter((e) =>
        e.action === "call" && e.device_handle === "plant/plant0" && e.outcome === "accepted"
      ).length;
    };
    const pid0 = r.kill("plant");
    await waitFor("plant down", () => !plant.available);
    // The first latch: its stop is held by slow's ladder call.
    const first = rt.estop.trigger("first latch");
    let firstDone = false;
    void first.then(() => (firstDone = true));
    await waitFor("plant back", () => plant.available && plant.session!.pid !== pid0, 20_000);
    await waitFor("plant secured under the first latch", async () => await securingCalls() === 1);
    // Released (its read-back, waiting for the stop, is skipped) and latched again.
    rt.estop.clear();
    const second = rt.estop.trigger("second latch", { cause: "sparkplug" });
    const pid1 = r.kill("plant");
    await waitFor("plant down again", () => !plant.available);
    await waitFor("plant back again", () => plant.available && plant.session!.pid !== pid1, 20_000);
    await waitFor("plant secured under the second latch", async () => await securingCalls() === 2);
    assert.equal(firstDone, false, "the first stop ended before the provider was back twice");
    held.resolve();
    await first;
    await second;
    const records = await waitFor("the second latch's re-verification audited", async () => {
      const page = await rt.audit.query({ limit: 100, origin: "estop" });
      const found = page.entries.filter((e) =>
        e.action === "estop" &&
        (e.args as { reason?: string }).reason === "available while latched"
      );
      return found.some((e) => (e.origin as { cause?: string }).cause === "sparkplug")
        ? found
        : undefined;
    }, 20_000);
    // One record, of the second latch: its securing run's one call, not the released latch's.
    assert.deepEqual(
      records.map((e) => ({
        cause: (e.origin as { cause?: string }).cause,
        outcome: e.outcome,
        actions: (e.result as { actions: number }).actions,
      })),
      [{ cause: "sparkplug", outcome: "accepted", actions: 1 }],
    );
  } finally {
    held.resolve();
  }
});
