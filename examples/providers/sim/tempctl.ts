import { ProviderError } from "../../../src/provider_sdk/mod.ts";
import {
  DeviceInitError,
  firstOrderLag,
  optionalNumber,
  type SimDevice,
  simDeviceFields,
} from "./sim_device.ts";

const AMBIENT_C = 23.0;
/** Heating added in open mode by 0, 1 or 2 relays on. */
const OPEN_LOOP_RISE_C = [0, 45.0, 75.0];
const TAU_S = 6.0;
const TC2_OFFSET_C = 1.5;

/** tempctl: two thermocouples, two heater relays, open/closed loop (sim-devices.md §4). */
export function createTempCtl(deviceId: string, cfg: Readonly<Record<string, unknown>>): SimDevice {
  const initial = optionalNumber(deviceId, cfg, "initial_temp") ?? 25.0;
  const range = cfg.temp_range;
  if (range !== undefined && range !== null) {
    if (
      !Array.isArray(range) || range.length !== 2 ||
      !range.every((x) => typeof x === "number" && Number.isFinite(x)) || range[0] >= range[1]
    ) {
      throw new DeviceInitError(
        `devices[${deviceId}].temp_range: must be [min, max] with min < max`,
      );
    }
    if (initial < range[0] || initial > range[1]) {
      throw new DeviceInitError(
        `devices[${deviceId}].initial_temp: ${initial} is outside temp_range [${range[0]}, ${
          range[1]
        }]`,
      );
    }
  }

  // Safe defaults: heaters off, open loop (no closed-loop heating until set_mode closed).
  const s = {
    tc1: initial,
    tc2: initial,
    relay1: false,
    relay2: false,
    mode: "open" as "open" | "closed",
    setpoint: 60.0,
  };

  const sig = (hz: number, stale: number, inDefaultSet: boolean) => ({
    pollHintHz: hz,
    staleAfterMs: stale,
    inDefaultSet,
  });

  return {
    definition: {
      ...simDeviceFields(
        deviceId,
        "sim.temp_control_card",
        "Sim Temp Control Card (2TC + 2Relay)",
        "temp_control",
      ),
      signals: [
        {
          id: "tc1_temp",
          name: "TC1 Temperature",
          type: "double",
          unit: "C",
          ...sig(2, 1500, true),
          read: () => s.tc1,
        },
        {
          id: "tc2_temp",
          name: "TC2 Temperature",
          type: "double",
          unit: "C",
          ...sig(2, 1500, true),
          read: () => s.tc2,
        },
        {
          id: "relay1_state",
          name: "Relay 1 State",
          type: "bool",
          ...sig(2, 1500, true),
          read: () => s.relay1,
        },
        {
          id: "relay2_state",
          name: "Relay 2 State",
          type: "bool",
          ...sig(2, 1500, true),
          read: () => s.relay2,
        },
        {
          id: "control_mode",
          name: "Control Mode",
          type: "string",
          ...sig(0.5, 3000, false),
          read: () => s.mode,
        },
        {
          id: "setpoint",
          name: "Setpoint",
          type: "double",
          unit: "C",
          ...sig(0.5, 3000, false),
          read: () => s.setpoint,
        },
      ],
      functions: [
        {
          id: 1,
          name: "set_mode",
          description: "Set control mode (open or closed)",
          category: "CONFIG",
          args: [{ name: "mode", type: "string", description: "open or closed" }],
          handler: (args) => {
            const mode = args.string("mode");
            if (mode !== "open" && mode !== "closed") {
              throw ProviderError.invalidArgument(
                `set_mode: mode must be 'open' or 'closed', got '${mode}'`,
              );
            }
            s.mode = mode;
          },
        },
        {
          id: 2,
          name: "set_setpoint",
          description: "Set the closed-loop temperature setpoint",
          category: "CONFIG",
          args: [{ name: "value", type: "double", unit: "C", min: -50.0, max: 400.0 }],
          handler: (args) => {
            s.setpoint = args.double("value");
          },
        },
        {
          id: 3,
          name: "set_relay",
          description: "Switch a heater relay (open mode only)",
          category: "ACTUATE",
          args: [
            { name: "relay_index", type: "int64", min: 1, max: 2 },
            { name: "state", type: "bool" },
          ],
          // The mode precondition comes before any argument check (reference order).
          precheckArgs: false,
          handler: (args) => {
            if (s.mode !== "open") {
              throw ProviderError.failedPrecondition("set_relay: only allowed in open mode");
            }
            const index = args.int64("relay_index");
            const state = args.bool("state");
            if (index === 1) s.relay1 = state;
            else s.relay2 = state;
          },
        },
      ],
    },
    tick(dt) {
      if (s.mode === "closed") {
        const err = s.setpoint - s.tc1;
        if (err > 10) {
          s.relay1 = true;
          s.relay2 = true;
        } else if (err > 2) {
          s.relay1 = true;
          s.relay2 = false;
        } else if (err < -2) {
          s.relay1 = false;
          s.relay2 = false;
        }
      }
      const on = (s.relay1 ? 1 : 0) + (s.relay2 ? 1 : 0);
      const target = s.mode === "open" ? AMBIENT_C + OPEN_LOOP_RISE_C[on] : s.setpoint;
      s.tc1 = firstOrderLag(s.tc1, target, dt, TAU_S);
      s.tc2 = firstOrderLag(s.tc2, target - TC2_OFFSET_C, dt, TAU_S);
    },
  };
}
