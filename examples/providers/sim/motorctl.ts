import {
  DeviceInitError,
  firstOrderLag,
  optionalNumber,
  type SimDevice,
  simDeviceFields,
} from "./sim_device.ts";

const DEFAULT_MAX_RPM = 3200;
const MAX_RPM_LIMIT = 10000;
const TAU_S = 0.8;

/** Safe state, also the start-up state: both motors at zero duty. */
const SAFE_OUTPUTS: Readonly<{ duty1: number; duty2: number }> = { duty1: 0.0, duty2: 0.0 };

/** motorctl: two DC motors driven by duty cycle, as the reference sim's. */
export function createMotorCtl(
  deviceId: string,
  cfg: Readonly<Record<string, unknown>>,
): SimDevice {
  const maxRpm = optionalNumber(deviceId, cfg, "max_speed") ?? DEFAULT_MAX_RPM;
  if (!(maxRpm > 0 && maxRpm <= MAX_RPM_LIMIT)) {
    throw new DeviceInitError(
      `devices[${deviceId}].max_speed: ${maxRpm} is outside (0, ${MAX_RPM_LIMIT}]`,
    );
  }
  const out = { ...SAFE_OUTPUTS };
  const speed = [0.0, 0.0];
  const sig = { pollHintHz: 5, staleAfterMs: 800 };
  const dsig = { pollHintHz: 2, staleAfterMs: 1500, inDefaultSet: false };
  return {
    definition: {
      ...simDeviceFields(
        deviceId,
        "sim.dual_dc_motor",
        "Sim Dual DC Motor Controller",
        "motor_control",
      ),
      signals: [
        {
          id: "motor1_speed",
          name: "Motor 1 Speed",
          type: "double",
          unit: "rpm",
          ...sig,
          read: () => speed[0]!,
        },
        {
          id: "motor2_speed",
          name: "Motor 2 Speed",
          type: "double",
          unit: "rpm",
          ...sig,
          read: () => speed[1]!,
        },
        { id: "motor1_duty", name: "Motor 1 Duty", type: "double", ...dsig, read: () => out.duty1 },
        { id: "motor2_duty", name: "Motor 2 Duty", type: "double", ...dsig, read: () => out.duty2 },
      ],
      functions: [
        {
          id: 10,
          name: "set_motor_duty",
          description: "Set a motor's PWM duty cycle (0..1)",
          category: "ACTUATE",
          args: [
            { name: "motor_index", type: "int64", min: 1, max: 2 },
            { name: "duty", type: "double", min: 0.0, max: 1.0 },
          ],
          handler: (args) => {
            out[args.int64("motor_index") === 1 ? "duty1" : "duty2"] = args.double("duty");
          },
        },
      ],
      applySafeState: () => void Object.assign(out, SAFE_OUTPUTS),
    },
    outputs: out,
    tick(dt) {
      for (let i = 0; i < 2; i++) {
        const target = Math.min(Math.max(i === 0 ? out.duty1 : out.duty2, 0), 1) * maxRpm;
        speed[i] = firstOrderLag(speed[i]!, target, dt, TAU_S);
      }
    },
  };
}
