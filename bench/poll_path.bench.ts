/**
 * Micro-benchmark of the poll path inside the runtime: a ReadSignals answer as bytes ->
 * decodeResponse -> StateCache sample application (type checks, change detection, events).
 * Run: `deno bench --allow-all bench/poll_path.bench.ts`. Not a test; no timing is asserted.
 *
 * The provider is a stand-in object (no process, no pipe) so the figure is the runtime's own
 * work per poll answer; the answers alternate between two encodings whose values differ, so
 * every poll publishes state updates as it does with noisy sensors ("unchanged": one encoding,
 * nothing is published).
 *
 * History: the same devices with the history subscribed (history/: the full-rate ring in typed
 * arrays, bucket accumulation and a disk row per device every 10 s of the clock, which moves
 * 100 ms per poll), at the defaults of `history:`.
 *
 * Alarms: the same 100-signal device with 100 alarms (one per signal) and 20 interlocks (each
 * comparing 5 of its signals and one bad()) evaluated after every poll, none of them raised; and
 * the engine's evaluation alone (evaluateAll: the work one poll of that device causes). Cost per
 * polled signal = figure / 100. bench/README.md has the figures.
 *
 * The resume ring: the 100-signal poll with an EventRing on the bus, as the SseHub keeps one for
 * streams that resume (every poll publishes 100 state updates into it).
 */
import {
  decodeResponse,
  encodeResponse,
  type WireSignalValue,
  WireValueType,
} from "../src/adpp/mod.ts";
import type {
  Clock,
  DeviceCapabilities,
  Logger,
  SignalSpec,
  ValueType,
} from "../src/common/mod.ts";
import { systemClock } from "../src/host/mod.ts";
import { AlarmEngine } from "../src/alarms/mod.ts";
import {
  type AlarmConfig,
  conditionSignals,
  type InterlockConfig,
  parseCondition,
} from "../src/config/mod.ts";
import { EventBus } from "../src/events/mod.ts";
import { EventRing } from "../src/http/mod.ts";
import type { ProviderRegistry } from "../src/providers/mod.ts";
import { DeviceOutages, Inventory, StateCache } from "../src/state/mod.ts";
import { History } from "../src/history/mod.ts";
import { journalFiles } from "../src/host/mod.ts";

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
function setup(
  deviceId: string,
  defs: SignalDef[],
  o: { unchanged?: boolean; alarms?: boolean; ring?: boolean; history?: boolean } = {},
) {
  const frames = o.unchanged ? [answer(defs, 0)] : [answer(defs, 0), answer(defs, 1)];
  let n = 0;
  const capabilities = caps(deviceId, defs);
  const host = {
    id: "p",
    available: true,
    lifecycle: "RUNNING",
    devices: [capabilities],
    session: null,
    onInventory() {},
    onAvailability() {},
    noteLiveness() {},
    request() {
      return Promise.resolve(decodeResponse((frames[n++ % frames.length])!).read_signals!);
    },
  };
  const registry = {
    hosts: [host],
    host: () => host,
    capabilities: () => capabilities,
    eachHost: (listener: (h: typeof host) => void) => listener(host),
    onHostRemoved() {},
  } as unknown as ProviderRegistry;
  // The wall clock moves 100 ms per poll (as at 10 Hz): the ring drops what is older than
  // memory_seconds and the disk buckets close every step_ms, as in the runtime.
  let wall = 1_760_000_000_000;
  const clock: Clock = { ...systemClock, nowMs: () => (wall += 100) };
  const bus = new EventBus();
  // As the SseHub keeps every event for streams that resume (Last-Event-ID).
  if (o.ring) {
    const ring = new EventRing();
    bus.subscribe((p) => ring.push(p));
  }
  const cache = new StateCache({ registry, bus, clock, log: silent, intervalMs: 100 });
  let engine: AlarmEngine | null = null;
  if (o.alarms) {
    // As the runtime runs them: every poll also updates the device's condition (device down),
    // and every usable input asks it.
    const outages = new DeviceOutages({ registry, cache, clock, downAfterMs: 500 });
    engine = new AlarmEngine({
      outages,
      alarms: benchAlarms(deviceId, defs),
      interlocks: benchInterlocks(deviceId, defs),
      cache,
      inventory: new Inventory(registry),
      bus,
      clock,
      log: silent,
      actions: { fault: () => Promise.resolve(), estop: () => Promise.resolve() },
    });
  }
  let history: History | null = null;
  if (o.history) {
    // Defaults of history: (docs/history.md); the disk tier writes to a temporary folder.
    history = new History({
      config: {
        enabled: true,
        memorySeconds: 120,
        memoryMaxBytes: 8 * 1024 * 1024,
        stepMs: 10000,
        diskMaxBytes: 256 * 1024 * 1024,
        incidentBeforeS: 10,
        incidentAfterS: 5,
        incidentMaxCount: 100,
        incidentMaxBytes: 64 * 1024 * 1024,
      },
      dataDir: Deno.makeTempDirSync({ prefix: "bench-history-" }),
      files: journalFiles,
      clock,
      log: silent,
      cache,
    });
    void history.start();
  }
  return { poll: () => cache.pollDevice("p", deviceId), engine, history };
}

/** One alarm per signal, limits far outside the values (never raised). */
function benchAlarms(deviceId: string, defs: SignalDef[]): AlarmConfig[] {
  return defs.map((d, i) => ({
    id: `a${i}`,
    signal: `p/${deviceId}/${d.id}`,
    providerId: "p",
    deviceId,
    signalId: d.id,
    limits: { lo: -1000, hi: 1000 },
    level: "MAJOR",
    hysteresis: 1,
    delayMs: 0,
    onBadQuality: "alarm",
    action: "none",
    message: "",
    path: `alarms[${i}]`,
  }));
}

/** 20 interlocks, each over 5 signals: `a > 900 or b > 900 and not bad(c) or d < -900 or e == 5`. */
function benchInterlocks(deviceId: string, defs: SignalDef[]): InterlockConfig[] {
  return Array.from({ length: 20 }, (_, k) => {
    const h = (j: number) => `p/${deviceId}/${(defs[(k * 5 + j) % defs.length])!.id}`;
    const text = `${h(0)} > 900 or ${h(1)} > 900 and not bad(${h(2)}) or ${h(3)} < -900 or ` +
      `${h(4)} == 5`;
    const parsed = parseCondition(text);
    if (!parsed.ok) throw new Error(parsed.error.message);
    return {
      id: `i${k}`,
      block: [{ handle: `p/${deviceId}/f`, providerId: "p", deviceId, functionName: "f" }],
      conditionText: text,
      condition: parsed.condition,
      signals: conditionSignals(parsed.condition),
      message: "bench",
      path: `interlocks[${k}]`,
    };
  });
}

const tempctl = setup("tempctl0", TEMPCTL).poll;
const wide = setup("wide0", WIDE).poll;
const wideUnchanged = setup("wide0", WIDE, { unchanged: true }).poll;
const wideRing = setup("wide0", WIDE, { ring: true }).poll;
const tempctlHistory = setup("tempctl0", TEMPCTL, { history: true }).poll;
const wideHistory = setup("wide0", WIDE, { history: true }).poll;
const wideHistoryUnchanged = setup("wide0", WIDE, { unchanged: true, history: true }).poll;
const alarmed = setup("wide0", WIDE, { alarms: true });
const alarmedUnchanged = setup("wide0", WIDE, { alarms: true, unchanged: true });
// Started after a first poll, as the runtime starts them after its priming poll.
for (const s of [alarmed, alarmedUnchanged]) {
  await s.poll();
  s.engine!.start();
}

Deno.bench("poll path: decode + apply, 8 signals", { group: "poll" }, async () => {
  await tempctl();
});

Deno.bench("poll path: decode + apply, 100 signals", { group: "poll" }, async () => {
  await wide();
});

Deno.bench("poll path: decode + apply, 100 signals, unchanged", { group: "poll" }, async () => {
  await wideUnchanged();
});

Deno.bench("poll path + history ring: 8 signals", { group: "history" }, async () => {
  await tempctlHistory();
});

Deno.bench("poll path + history ring: 100 signals", { group: "history" }, async () => {
  await wideHistory();
});

Deno.bench("poll path + history ring: 100 signals, unchanged", { group: "history" }, async () => {
  await wideHistoryUnchanged();
});

Deno.bench(
  "poll path: decode + apply, 100 signals, + the SSE resume ring",
  { group: "poll" },
  async () => {
    await wideRing();
  },
);

Deno.bench(
  "poll path + 100 alarms & 20 interlocks: 100 signals",
  { group: "alarms" },
  async () => {
    await alarmed.poll();
  },
);

Deno.bench(
  "poll path + 100 alarms & 20 interlocks: 100 signals, unchanged",
  { group: "alarms" },
  async () => {
    await alarmedUnchanged.poll();
  },
);

Deno.bench(
  "alarm engine alone: 100 alarms & 20 interlocks (one poll's evaluation)",
  { group: "alarms" },
  () => {
    alarmedUnchanged.engine!.evaluateAll();
  },
);
