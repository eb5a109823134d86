/**
 * The shared rig of the provider-back tests (mode_provider_back_*_test.ts): real modes over the
 * router the test gives, with provider plant, whose return the test announces, and the FAULT hooks
 * of a reload (set_cooler in force at the start, set_heater after the reload).
 */
import type { CallRouter } from "../../src/control/mod.ts";
import type { HookConfig } from "../../src/config/mod.ts";
import { call, hook } from "../safety/_fixture.ts";
import { hookModes, returnsInventory, upProvider } from "./_mode_hook_rig.ts";

/**
 * A ModeManager over `router` whose FAULT hook is set_cooler (`cool`); `heaterOff` is the hook a
 * reload puts in its place; `comeBack()` tells the modes that provider `host` (plant) is up again.
 */
export function providerBackModes(router: CallRouter) {
  const host = upProvider("plant");
  const { inventory, comesBack } = returnsInventory(() => host);
  const cool = hook("*", "FAULT", [call("plant/plant0", "set_cooler", { enabled: true })], false);
  const heaterOff: HookConfig = hook(
    "*",
    "FAULT",
    [call("plant/plant0", "set_heater", { enabled: false })],
    false,
  );
  const modes = hookModes(router, inventory, [cool]);
  return {
    modes,
    host,
    heaterOff,
    comeBack: () => comesBack("plant"),
  };
}
