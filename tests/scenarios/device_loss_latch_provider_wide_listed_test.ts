/**
 * The device-loss latch's provider-wide entry with a real provider: the programmable provider as a
 * child listing 70 devices; a kill loses all 70 (64 latched by name, 6 held as one entry). Its next
 * process lists two more: the entry refuses them (each may be one it holds: it keeps no names),
 * and the rediscovery announces that; status names the devices it exempts; entering AUTO exempts
 * (and announces) every device back.
 */
import assert from "node:assert/strict";
import { MAX_LATCHED_DEVICES_PER_PROVIDER } from "../../src/automation/mod.ts";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { startServing, tempDir, waitFor } from "../helpers/kernel.ts";
import { type Inventory, programmableProvider } from "../helpers/programmable_provider.ts";
import { automationConfig } from "./automation_helpers.ts";

const DEVICES = 70;

/** `n` devices with nothing to poll or call (dev0 ... dev<n-1>). */
function devices(n: number): Inventory {
  return {
    devices: Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`dev${i}`, { signals: [], functions: [] }]),
    ),
  };
}

Deno.test("device-loss latch: a device its provider-wide entry refuses as its provider lists it anew is announced; status names the exempt devices", async () => {
  const file = `${tempDir("latch-wide-listed-")}/pol.json`;
  await Deno.writeTextFile(file, JSON.stringify(devices(DEVICES)));
  const rt = await startServing(automationConfig(null, {
    config: {
      providers: [
        programmableProvider("pol", file, { restart: { maxAttempts: 5, backoffMs: [0] } }),
      ],
    },
  }));
  const events: RuntimeEvent[] = [];
  const stop = rt.bus.subscribe((e) => events.push(e.event));
  try {
    const pol = rt.registry.host("pol")!;
    const pid = pol.session!.pid;
    // Its next process lists two more devices (dev70, dev71).
    await Deno.writeTextFile(file, JSON.stringify(devices(DEVICES + 2)));
    Deno.kill(pid, "SIGKILL");
    const held = DEVICES - MAX_LATCHED_DEVICES_PER_PROVIDER;
    await waitFor(
      "the provider-wide entry",
      () => rt.automation!.status().device_loss_latched_providers[0]?.losses === held,
    );
    await waitFor("pol back", () => pol.available && pol.devices.length === DEVICES + 2, 20_000);
    const latchesOf = (d: string) =>
      events.flatMap((e) =>
        e.kind === "device_loss_latch" && e.device_id === d && e.latched ? [e] : []
      );
    // The new devices may be held ones back under their names: refused, and announced so.
    const fresh = ["dev70", "dev71"];
    await waitFor("the new devices announced", () => fresh.every((d) => latchesOf(d).length > 0));
    for (const d of fresh) {
      const [latch, ...more] = latchesOf(d);
      assert.equal(more.length, 0, d);
      assert.equal(latch?.provider_wide, true, d);
      assert.match(
        latch?.reason ?? "",
        /^listed while its provider's provider-wide entry holds devices it does not name/,
        d,
      );
    }
    // A held device listed again was announced by its loss, once (as a named latch's return).
    const heldIds = Array.from(
      { length: held },
      (_, i) => `dev${MAX_LATCHED_DEVICES_PER_PROVIDER + i}`,
    );
    for (const d of heldIds) assert.equal(latchesOf(d).length, 1, d);
    const [wide] = rt.automation!.status().device_loss_latched_providers;
    assert.equal(wide?.exempt_devices, 0);
    assert.deepEqual(wide?.exempt_device_ids, []);
    // Entering AUTO while they are up exempts every device back, and says so.
    await rt.modes.request("MANUAL");
    await rt.modes.request("AUTO");
    const after = rt.automation!.status().device_loss_latched_providers[0];
    assert.equal(after?.exempt_devices, DEVICES + 2);
    assert.deepEqual(
      [...(after?.exempt_device_ids ?? [])].sort(),
      Array.from({ length: DEVICES + 2 }, (_, i) => `dev${i}`).sort(),
    );
    for (const d of [...heldIds, ...fresh]) {
      assert.ok(
        events.some((e) => e.kind === "device_loss_latch" && e.device_id === d && !e.latched),
        `${d} released`,
      );
    }
  } finally {
    stop();
    await rt.stop();
  }
});
