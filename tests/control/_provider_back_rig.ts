/**
 * The shared rig of the provider-back tests (mode_provider_back_*_test.ts): real modes over the
 * router the test gives, with provider plant, whose return the test announces, and the FAULT hooks
 * of a reload (set_cooler in force at the start, set_heater after the reload).
 */
import type { CallRouter } from "../../src/control/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import type { HookConfig } from "../../src/config/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import type { InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { call, hook } from "../safety/_fixture.ts";

/**
 * A ModeManager over `router` whose FAULT hook is set_cooler (`cool`); `heaterOff` is the hook a
 * reload puts in its place; `comeBack()` tells the modes that provider `host` (plant) is up again.
 */
export function providerBackModes(router: CallRouter) {
  const availability: ((p: ProviderSummary, up: boolean) => void)[] = [];
  const host = { id: "plant", available: true, config: { timeoutMs: 1000 } } as ProviderSummary;
  const inventory = {
    onAvailability: (l: (p: ProviderSummary, up: boolean) => void) => {
      availability.push(l);
      return () => {};
    },
    provider: () => host,
    providers: () => [],
    devices: () => [],
  } as unknown as InventoryReader;
  const cool = hook("*", "FAULT", [call("plant/plant0", "set_cooler", { enabled: true })], false);
  const heaterOff: HookConfig = hook(
    "*",
    "FAULT",
    [call("plant/plant0", "set_heater", { enabled: false })],
    false,
  );
  const modes = new ModeManager({
    router,
    inventory,
    bus: new EventBus(),
    clock: systemClock,
    log: testLogger(),
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: [cool], afterTransition: [] },
  });
  return {
    modes,
    host,
    heaterOff,
    comeBack: () => {
      for (const l of availability) l(host, true);
    },
  };
}
