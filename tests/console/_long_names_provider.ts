/**
 * A provider whose ids, labels and units are very long words (no space to break at), for the
 * console's layout tests, run as a real child process:
 * `deno run --allow-env tests/console/_long_names_provider.ts`.
 */
import { DeviceProvider, runStdioProvider } from "../../src/provider_sdk/mod.ts";

/** A word of `n` characters with no space or hyphen to break at. */
export const longWord = (stem: string, n: number): string =>
  (stem + "_" + "x".repeat(n)).slice(0, n);

export const DEVICE_ID = longWord("chamber_pressure_controller", 120);
export const SIGNAL_ID = longWord("upstream_chamber_absolute_pressure", 100);
export const UNIT = longWord("kilopascal_absolute", 40);

const provider = new DeviceProvider({ name: "long-names-provider", version: "1.0.0" }, [{
  deviceId: DEVICE_ID,
  typeId: longWord("test.long_type", 90),
  typeVersion: "1.0",
  label: longWord("ChamberPressureControllerOfTheSecondVacuumLine", 150),
  signals: [{
    id: SIGNAL_ID,
    name: longWord("UpstreamChamberAbsolutePressure", 120),
    type: "double" as const,
    unit: UNIT,
    pollHintHz: 10,
    staleAfterMs: 0,
    read: () => 101.3,
  }],
  functions: [{
    id: 1,
    name: longWord("set_upstream_chamber_pressure_setpoint", 110),
    description: longWord("Sets_the_setpoint", 160),
    category: "ACTUATE" as const,
    args: [{
      name: longWord("setpoint_in_kilopascal_absolute", 90),
      type: "double" as const,
      required: true,
      unit: UNIT,
      min: 0,
      max: 200,
    }],
    handler: () => {},
  }],
}]);

if (import.meta.main) await runStdioProvider(provider);
