/**
 * What an inventory listener (the upper layers' `inventory.onChange`: alarms, e-stop plan, AUTO
 * gate, edge node) reads when a provider comes back with a new inventory: the provider counts as
 * up, and the state cache and the device outages already hold the new inventory.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel tells inventory listeners once the provider is up and the cache holds its new inventory", async () => {
  const file = await Deno.makeTempFile({ prefix: "inventory-order-", suffix: ".json" });
  await Deno.writeTextFile(
    file,
    JSON.stringify({ devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE }] } } }),
  );
  const runtime = await startRuntime(testConfig({
    providers: [programmableProvider("p0", file, { restart: {} })],
    pollingIntervalMs: 50,
  }));
  try {
    const seen: { change: string; up: boolean; cached: boolean; outage: string }[] = [];
    runtime.inventory.onChange((id, change) => {
      seen.push({
        change,
        up: runtime.inventory.provider(id)?.available ?? false,
        cached: runtime.cache.device("p0", "valve") !== undefined,
        outage: runtime.outages.condition("p0", "valve").reason,
      });
    });
    // The provider comes back with a second device.
    await Deno.writeTextFile(
      file,
      JSON.stringify({
        devices: {
          probe: { signals: [{ id: "temp", type: T.DOUBLE }] },
          valve: { signals: [{ id: "x", type: T.DOUBLE }] },
        },
      }),
    );
    const pid = runtime.registry.host("p0")!.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("the inventory listener told", () => seen.length > 0, 15000);
    const told = seen[0]!;
    assert.deepEqual(
      { change: told.change, up: told.up, cached: told.cached },
      { change: "changed", up: true, cached: true },
      `what the listener read: ${JSON.stringify(told)}`,
    );
    // The outages judge the new device against the new inventory of a provider that is up.
    assert.doesNotMatch(told.outage, /unavailable|not in the inventory/);
  } finally {
    await runtime.stop();
    await Deno.remove(file).catch(() => {});
  }
});
