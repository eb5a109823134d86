import type { SignalDefinition } from "../../../src/provider_sdk/mod.ts";
import { type SimDevice, simDeviceFields } from "./sim_device.ts";

const CHANNELS = [1, 2, 3, 4] as const;

/** Safe state, also the start-up state: all four relays off. */
const SAFE_OUTPUTS: Readonly<Record<`relay${(typeof CHANNELS)[number]}`, boolean>> = {
  relay1: false,
  relay2: false,
  relay3: false,
  relay4: false,
};

/** relayio: four relays and four GPIO inputs wired back to them, as the reference sim's. */
export function createRelayIo(
  deviceId: string,
  _cfg: Readonly<Record<string, unknown>>,
): SimDevice {
  const out = { ...SAFE_OUTPUTS };
  // GPIO reads false until the first physics tick.
  const gpio = [false, false, false, false];
  const hints = { pollHintHz: 1, staleAfterMs: 2000 };
  const signals: SignalDefinition[] = [
    ...CHANNELS.map((n) => ({
      id: `relay_ch${n}_state`,
      name: `Relay Ch${n} State`,
      type: "bool" as const,
      ...hints,
      read: () => out[`relay${n}`]!,
    })),
    ...CHANNELS.map((n) => ({
      id: `gpio_input_${n}`,
      name: `GPIO Input ${n}`,
      type: "bool" as const,
      ...hints,
      read: () => gpio[n - 1]!,
    })),
  ];
  return {
    definition: {
      ...simDeviceFields(
        deviceId,
        "sim.relay_io_module",
        "Sim Relay/IO Module (4 Relay + 4 GPIO)",
        "relay_io",
      ),
      signals,
      functions: CHANNELS.map((n) => ({
        id: n,
        name: `set_relay_ch${n}`,
        description: `Switch relay channel ${n}`,
        category: "ACTUATE" as const,
        args: [{ name: "enabled", type: "bool" as const }],
        handler: (args) => {
          out[`relay${n}`] = args.bool("enabled");
        },
      })),
      applySafeState: () => void Object.assign(out, SAFE_OUTPUTS),
    },
    outputs: out,
    tick() {
      // Inputs 2 and 4 are wired through inverters.
      gpio[0] = out.relay1;
      gpio[1] = !out.relay2;
      gpio[2] = out.relay3;
      gpio[3] = !out.relay4;
    },
  };
}
