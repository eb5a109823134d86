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
/** The thermal time constant (s) unless the device's `time_constant_s` says otherwise. */
const TAU_S = 6.0;
const TC2_OFFSET_C = 1.5;
const INITIAL_SETPOINT_C = 60.0;

/**
 * Safe state, also the start-up state: heaters off, open loop (no closed-loop heating until
 * set_mode closed). The setpoint is kept: it is inactive in open mode.
 */
const SAFE_OUTPUTS: Readonly<{ relay1: boolean; relay2: boolean; mode: "open" | "closed" }> = {
  relay1: false,
  relay2: false,
  mode: "open",
};

/** tempctl: two thermocouples, two heater relays, open/closed loop, as the reference sim's. */
export function createTempCtl(deviceId: string, cfg: Readonly<Record<string, unknown>>): SimDevice {
  const initial = optionalNumber(deviceId, cfg, "initial_temp") ?? 25.0;
  const tau = optionalNumber(deviceId, cfg, "time_constant_s") ?? TAU_S;
  if (!(tau > 0)) {
    throw new DeviceInitError(`devices[${deviceId}].time_constant_s: must be > 0, got ${tau}`);
  }
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

  /** What calls write (the safe state plus the setpoint). */
  const out = { ...SAFE_OUTPUTS, setpoint: INITIAL_SETPOINT_C };
  const s = { tc1: initial, tc2: initial };

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
          read: () => out.relay1,
        },
        {
          id: "relay2_state",
          name: "Relay 2 State",
          type: "bool",
          ...sig(2, 1500, true),
          read: () => out.relay2,
        },
        {
          id: "control_mode",
          name: "Control Mode",
          type: "string",
          ...sig(0.5, 3000, false),
          read: () => out.mode,
        },
        {
          id: "setpoint",
          name: "Setpoint",
          type: "double",
          unit: "C",
          ...sig(0.5, 3000, false),
          read: () => out.setpoint,
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
            out.mode = mode;
          },
        },
        {
          id: 2,
          name: "set_setpoint",
          description: "Set the closed-loop temperature setpoint",
          category: "CONFIG",
          args: [{ name: "value", type: "double", unit: "C", min: -50.0, max: 400.0 }],
          handler: (args) => {
            out.setpoint = args.double("value");
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
            if (out.mode !== "open") {
              throw ProviderError.failedPrecondition("set_relay: only allowed in open mode");
            }
            const index = args.int64("relay_index");
            const state = args.bool("state");
            if (index === 1) out.relay1 = state;
            else out.relay2 = state;
          },
        },
      ],
      applySafeState: () => void Object.assign(out, SAFE_OUTPUTS),
    },
    outputs: out,
    tick(dt) {
      if (out.mode === "closed") {
        const err = out.setpoint - s.tc1;
        if (err > 10) {
          out.relay1 = true;
          out.relay2 = true;
        } else if (err > 2) {
          out.relay1 = true;
          out.relay2 = false;
        } else if (err < -2) {
          out.relay1 = false;
          out.relay2 = false;
        }
      }
      const on = (out.relay1 ? 1 : 0) + (out.relay2 ? 1 : 0);
      const target = out.mode === "open" ? AMBIENT_C + OPEN_LOOP_RISE_C[on]! : out.setpoint;
      s.tc1 = firstOrderLag(s.tc1, target, dt, tau);
      s.tc2 = firstOrderLag(s.tc2, target - TC2_OFFSET_C, dt, tau);
    },
  };
}
