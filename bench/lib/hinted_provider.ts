/**
 * deno run bench/lib/hinted_provider.ts --hz <poll hint> [--devices 4] [--signals 4]
 *
 * A provider on the provider SDK for bench/poll_hints.ts: `--devices` devices of `--signals` double
 * signals each, every signal declaring poll_hint_hz `--hz` and no stale_after_ms. Each read returns
 * a fresh value (a counter), so every poll the runtime makes produces value changes.
 */
import { parseArgs } from "node:util";
import {
  type DeviceDefinition,
  DeviceProvider,
  runStdioProvider,
} from "../../src/provider_sdk/mod.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    hz: { type: "string" },
    devices: { type: "string", default: "4" },
    signals: { type: "string", default: "4" },
  },
});
const hz = Number(values.hz);
if (!(hz > 0)) throw new RangeError(`--hz must be > 0, got ${values.hz}`);
let tick = 0;
const devices: DeviceDefinition[] = Array.from({ length: Number(values.devices) }, (_, d) => ({
  deviceId: `dev${d}`,
  typeId: "bench.hinted",
  typeVersion: "1.0",
  label: `dev${d}`,
  signals: Array.from({ length: Number(values.signals) }, (_, s) => ({
    id: `s${s}`,
    name: `s${s}`,
    type: "double" as const,
    pollHintHz: hz,
    staleAfterMs: 0,
    read: () => ++tick,
  })),
  functions: [],
}));
await runStdioProvider(new DeviceProvider({ name: "hinted", version: "1.0.0" }, devices));
