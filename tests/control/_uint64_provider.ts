/**
 * A provider (real child process, on the provider SDK) whose function takes the argument types
 * the simulated provider has none of: device `pwm0`, function 1 `set_output` with `duty` uint64
 * [0, 255] and `level` double, signals `duty` (uint64) and `level` (double). Like the BREAD RLHT
 * that anolis's argument coercion was written for (a uint64 duty beside double setpoints).
 */
import {
  createStderrLogger,
  DeviceProvider,
  runStdioProvider,
} from "../../src/provider_sdk/mod.ts";

const log = createStderrLogger("pwm");
const out = { duty: 0, level: 0 };

const provider = new DeviceProvider({ name: "pwm", version: "1.0.0" }, [{
  deviceId: "pwm0",
  typeId: "test.pwm",
  typeVersion: "1",
  label: "PWM output",
  signals: [
    {
      id: "duty",
      name: "Duty",
      type: "uint64",
      pollHintHz: 10,
      staleAfterMs: 0,
      read: () => out.duty,
    },
    {
      id: "level",
      name: "Level",
      type: "double",
      pollHintHz: 10,
      staleAfterMs: 0,
      read: () => out.level,
    },
  ],
  functions: [{
    id: 1,
    name: "set_output",
    category: "ACTUATE",
    args: [
      { name: "duty", type: "uint64", min: 0, max: 255 },
      { name: "level", type: "double" },
    ],
    handler: (args) => {
      out.duty = args.uint64("duty");
      out.level = args.double("level");
      log.info(`set_output duty ${out.duty} level ${out.level}`);
    },
  }],
  applySafeState: () => {
    out.duty = 0;
    out.level = 0;
  },
}]);
await runStdioProvider(provider, { logger: log });
