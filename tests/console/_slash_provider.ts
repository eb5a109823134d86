/**
 * A provider whose device ids contain `/` for the console's key tests, run as a real child
 * process: `deno run --allow-env tests/console/_slash_provider.ts`. Joined with `/`, device `m`
 * signal `x/speed` and device `m/x` signal `speed` are the same text (`s0/m/x/speed`), and the
 * DOM ids the console derives from device `m/x` and device `m_2fx` used to be equal too. `m`'s
 * signal counts up on every read (a stream of state updates), the others hold a constant.
 */
import { DeviceProvider, runStdioProvider, type ScalarValue } from "../../src/provider_sdk/mod.ts";

/** The constant values (the page must show each on its own row). */
export const MX_SPEED = 222.5;
export const M_2FX_SPEED = 333.5;

let reads = 0;

const signal = (id: string, read: () => ScalarValue) => ({
  id,
  name: id,
  type: "double" as const,
  pollHintHz: 10,
  staleAfterMs: 0,
  read,
});

/** A read-only function with one argument: its form's field ids come from the device id. */
const level = {
  id: 1,
  name: "probe",
  description: "Does nothing",
  category: "READ" as const,
  args: [{ name: "level", type: "double" as const, required: false }],
  handler: () => {},
};

const device = (deviceId: string, signals: ReturnType<typeof signal>[]) => ({
  deviceId,
  typeId: "test.slash",
  typeVersion: "1.0",
  label: `Device ${deviceId}`,
  signals,
  functions: [level],
});

const provider = new DeviceProvider({ name: "slash-provider", version: "1.0.0" }, [
  device("m", [signal("x/speed", () => ++reads)]),
  device("m/x", [signal("speed", () => MX_SPEED)]),
  device("m_2fx", [signal("speed", () => M_2FX_SPEED)]),
]);

if (import.meta.main) await runStdioProvider(provider);
