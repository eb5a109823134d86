/**
 * The e-stop remembers each provider's actuating devices as listed (ListedBefore), the most
 * recently listed MAX_LISTED_BEFORE_DEVICES per provider: a provider that renames its device at
 * each restart goes past it, and the oldest are let go of -- status no longer names them though
 * nothing secures them. That must not happen silently: one WARN per provider, the first time
 * (docs/safety.md, "Verified safe state"). In-process: the real Estop over an inventory whose
 * providers the test changes.
 */
import assert from "node:assert/strict";
import type { DeviceCapabilities } from "../../src/common/mod.ts";
import { MAX_LISTED_BEFORE_DEVICES } from "../../src/safety/mod.ts";
import type { InventoryListener, InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { deviceCapabilities } from "../helpers/capabilities.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { containedEstop } from "./_clock_rig.ts";

/** One actuating device of `providerId`. */
function actuator(providerId: string, deviceId: string): DeviceCapabilities {
  return deviceCapabilities(providerId, deviceId, {
    functions: [{
      functionId: 1,
      name: "set_on",
      description: "",
      category: "ACTUATE",
      actuating: true,
      args: [],
    }],
  });
}

/**
 * Providers ren and other, up (listed before the e-stop is built); `list(id, deviceId)` makes one
 * list that device only, its inventory changed.
 */
function inventory() {
  const listeners: InventoryListener[] = [];
  const hosts = new Map<string, { id: string; devices: DeviceCapabilities[] }>();
  const configured = new Set(["ren", "other"]);
  const host = (id: string) =>
    ({
      id,
      available: true,
      lifecycle: "RUNNING",
      devices: hosts.get(id)?.devices ?? [],
      config: { timeoutMs: 1000 },
      hostCheck: () => null,
    }) as unknown as ProviderSummary;
  const reader = {
    onAvailability: () => () => {},
    onChange: (l: InventoryListener) => {
      listeners.push(l);
      return () => {};
    },
    provider: (id: string) => hosts.has(id) ? host(id) : undefined,
    providers: () => [...hosts.keys()].map(host),
    devices: () => [],
    configured: (id: string) => configured.has(id),
  } as unknown as InventoryReader;
  return {
    reader,
    list: (id: string, deviceId: string) => {
      hosts.set(id, { id, devices: [actuator(id, deviceId)] });
      for (const l of listeners) l(id, "changed");
    },
    /** A reload removes `id` (its entry leaves the file). */
    remove: (id: string) => {
      configured.delete(id);
      hosts.delete(id);
      for (const l of listeners) l(id, "removed");
      // Its entry gone from the file too: the registry's one notice of that (onUnconfigured).
      for (const l of listeners) l(id, "unconfigured");
      configured.add(id);
    },
  };
}

Deno.test("Estop says once per provider, in a WARN, that it let go of the oldest devices its provider listed before", () => {
  const inv = inventory();
  inv.list("ren", "d0");
  inv.list("other", "o0");
  const { log, lines } = capturingLogger({ level: "warn", now: () => 0 });
  const estop = containedEstop({
    inventory: inv.reader,
    log,
    safeState: { hooks: [], setpoints: [], zeroIsSafe: false, expect: [], verifyTimeoutMs: 100 },
  });
  const warnings = () => lines.filter((l) => l.includes("actuating devices since it was"));
  // Renamed at each restart: up to the bound, every device is named, and nothing is said.
  for (let i = 1; i < MAX_LISTED_BEFORE_DEVICES; i++) inv.list("ren", `d${i}`);
  assert.equal(estop.status().unverified_devices.length, MAX_LISTED_BEFORE_DEVICES + 1);
  assert.deepEqual(warnings(), []);
  // One past it: d0 is let go of, and said; more past it: not said again.
  for (let i = MAX_LISTED_BEFORE_DEVICES; i < MAX_LISTED_BEFORE_DEVICES + 10; i++) {
    inv.list("ren", `d${i}`);
  }
  const named = estop.status().unverified_devices;
  assert.equal(named.includes("ren/d0"), false);
  assert.equal(named.includes("ren/d10"), true);
  assert.equal(warnings().length, 1, lines.join("\n"));
  assert.match(
    warnings()[0]!,
    new RegExp(
      `e-stop: provider ren has listed more than ${MAX_LISTED_BEFORE_DEVICES} actuating devices ` +
        "since it was configured \\(a device renamed at each restart, say\\): the oldest it no " +
        "longer lists are let go of, so estop.unverified_devices and estop.plan.uncovered no " +
        "longer name them though nothing secures them \\(said once per provider\\)$",
    ),
  );
  // A reload removes ren, and it is configured again: its devices are new, and so is the WARN.
  inv.remove("ren");
  inv.list("ren", "n0");
  for (let i = 1; i <= MAX_LISTED_BEFORE_DEVICES; i++) inv.list("ren", `n${i}`);
  assert.equal(warnings().length, 2, lines.join("\n"));
  assert.equal(lines.filter((l) => l.includes("provider other")).length, 0);
});
