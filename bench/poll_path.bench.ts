/**
 * Micro-benchmark of the poll path inside the runtime: a ReadSignals answer as bytes ->
 * decodeResponse -> StateCache sample application (type checks, change detection, events).
 * Run: `deno bench --allow-all bench/poll_path.bench.ts`. Not a test; no timing is asserted.
 *
 * The provider is a stand-in object (no process, no pipe) so the figure is the runtime's own
 * work per poll answer; the answers alternate between two encodings whose values differ, so
 * every poll publishes state updates as it does with noisy sensors.
 */
import {
  decodeResponse,
  encodeResponse,
  type WireSignalValue,
  WireValueType,
} from "../src/adpp/mod.ts";
import type { DeviceCapabilities, Logger, SignalSpec, ValueType } from "../src/common/mod.ts";
import { EventBus } from "../src/events/mod.ts";
import type { ProviderRegistry } from "../src/providers/mod.ts";
import { StateCache } from "../src/state/mod.ts";

const silent: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silent,
};

interface SignalDef {
  id: string;
  type: ValueType;
  value: (i: number) => Record<string, unknown>;
}

const WIRE_TYPE: Record<ValueType, number> = {
  bool: WireValueType.BOOL,
  int64: WireValueType.INT64,
  uint64: WireValueType.UINT64,
  double: WireValueType.DOUBLE,
  string: WireValueType.STRING,
  bytes: WireValueType.BYTES,
};

/** A temperature controller like the sim's, plus two counters (8 signals). */
const TEMPCTL: SignalDef[] = [
  { id: "tc1_temp", type: "double", value: (i) => ({ double_value: 24.5 + i * 0.01 }) },
  { id: "tc2_temp", type: "double", value: (i) => ({ double_value: 23.1 + i * 0.01 }) },
  { id: "setpoint", type: "double", value: () => ({ double_value: 60 }) },
  { id: "heater_duty", type: "double", value: (i) => ({ double_value: 0.25 + i * 0.01 }) },
  { id: "relay1_state", type: "bool", value: () => ({ bool_value: true }) },
  { id: "relay2_state", type: "bool", value: () => ({ bool_value: false }) },
  { id: "control_mode", type: "string", value: () => ({ string_value: "closed" }) },
  { id: "cycle_count", type: "int64", value: (i) => ({ int64_value: 100_000 + i }) },
];

/** A wide analog device: 100 noisy doubles. */
const WIDE: SignalDef[] = Array.from({ length: 100 }, (_, k) => ({
  id: `ch${k}`,
  type: "double" as const,
  value: (i: number) => ({ double_value: k + i * 0.001 }),
}));

function answer(defs: SignalDef[], i: number): Uint8Array {
  const values: WireSignalValue[] = defs.map((d) => ({
    signal_id: d.id,
    value: { type: WIRE_TYPE[d.type], ...d.value(i) },
    timestamp: { seconds: 1_760_000_000 + i, nanos: 500_000_000 },
    quality: 1,
  }));
  return encodeResponse({ request_id: 1, status: { code: 1 }, read_signals: { values } });
}

function caps(deviceId: string, defs: SignalDef[]): DeviceCapabilities {
  const signals: SignalSpec[] = defs.map((d) => ({
    signalId: d.id,
    name: d.id,
    description: "",
    valueType: d.type,
    unit: "",
    pollHintHz: 10,
    staleAfterMs: 2000,
  }));
  return {
    device: {
      providerId: "p",
      deviceId,
      providerName: "bench",
      typeId: "bench",
      typeVersion: "1",
      label: deviceId,
      address: "",
      tags: {},
    },
    functions: [],
    signals,
  };
}

/** A cache over one stand-in provider whose ReadSignals answers decode the given frames. */
function setup(deviceId: string, defs: SignalDef[]) {
  const frames = [answer(defs, 0), answer(defs, 1)];
  let n = 0;
  const host = {
    id: "p",
    available: true,
    devices: [caps(deviceId, defs)],
    session: null,
    onInventory() {},
    onAvailability() {},
    noteLiveness() {},
    request() {
      return Promise.resolve(decodeResponse(frames[n++ & 1]).read_signals!);
    },
  };
  const registry = { hosts: [host], host: () => host } as unknown as ProviderRegistry;
  const cache = new StateCache({
    registry,
    bus: new EventBus(),
    clock: { nowMs: () => 1_760_000_000_000, monoMs: () => performance.now() },
    log: silent,
    intervalMs: 100,
  });
  return () => cache.pollDevice("p", deviceId);
}

const tempctl = setup("tempctl0", TEMPCTL);
const wide = setup("wide0", WIDE);

Deno.bench("poll path: decode + apply, 8 signals", { group: "poll" }, async () => {
  await tempctl();
});

Deno.bench("poll path: decode + apply, 100 signals", { group: "poll" }, async () => {
  await wide();
});
