/**
 * A TelemetryWriter against an injected transport whose answers a test scripts, on one manual
 * clock: no database, no sockets, no sleeping (telemetry_transport_test.ts,
 * telemetry_retarget_test.ts). The end-to-end tests against VictoriaMetrics keep the real one.
 */
import type { Logger } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import {
  type InfluxSettings,
  type TelemetryTransport,
  TelemetryWriter,
  type TelemetryWriterOptions,
} from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import type { ProviderHealthView } from "../../src/common/mod.ts";

const SILENT: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => SILENT,
};

export const SETTINGS: InfluxSettings = {
  url: "http://db.invalid:8086",
  org: "lab",
  bucket: "telemetry",
  token: "secret-token",
  batchSize: 4,
  flushIntervalMs: 50,
  maxRetryBufferSize: 1000,
  queueSize: 10000,
};

/**
 * What the scripted database answers a request: accept, fail with a status, never answer, or
 * reject with the given error (e.g. the InfluxDB client's own HttpError, headers included).
 */
export type Answer = "ok" | number | "hang" | { readonly reject: unknown };

/** A database whose answers the test scripts; it keeps every request's rows. */
export class ScriptedDb implements TelemetryTransport {
  readonly requests: string[][] = [];
  readonly #answers: Answer[] = [];
  /** Answer for requests past the script. */
  otherwise: Answer = "ok";
  /** Answers for the requests to come, in order; past the script, `otherwise`. */
  script(...answers: Answer[]): void {
    this.#answers.push(...answers);
  }
  request(_path: string, body: string, o: { signal?: AbortSignal }): Promise<unknown> {
    this.requests.push(body.trimEnd().split("\n"));
    const answer = this.#answers.shift() ?? this.otherwise;
    if (answer === "ok") return Promise.resolve(undefined);
    if (answer === "hang") {
      return new Promise((_, reject) =>
        o.signal?.addEventListener("abort", () => reject(new Error("aborted")))
      );
    }
    if (typeof answer === "object") return Promise.reject(answer.reject);
    return Promise.reject({ statusCode: answer, body: `status ${answer}` });
  }
  /** The `value_double` of each row of one request, as sent. */
  valuesOf(request: number): number[] {
    return this.requests[request]!.map((l) => Number(/value_double=([0-9.e+-]+)/.exec(l)?.[1]));
  }
  /** The `value_double` of every signal row sent, deduplicated, ascending. */
  values(): number[] {
    const seen = new Set<number>();
    for (const r of this.requests) {
      for (const l of r) {
        const v = /value_double=([0-9.e+-]+)/.exec(l)?.[1];
        if (v !== undefined) seen.add(Number(v));
      }
    }
    return [...seen].sort((a, b) => a - b);
  }
}

/**
 * A started writer on a ScriptedDb, its bus and clock; `publish(from, count)` publishes `count`
 * state updates of one double signal with the values from `from` on.
 */
export function scriptedRig(
  o: {
    retryInitialMs?: number;
    retryMaxMs?: number;
    influx?: Partial<InfluxSettings>;
    logger?: Logger;
  } = {},
) {
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const db = new ScriptedDb();
  const bus = new EventBus();
  const options: TelemetryWriterOptions = {
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock,
    logger: o.logger ?? SILENT,
    influx: { ...SETTINGS, ...o.influx },
    transport: db,
    tuning: {
      retryInitialMs: o.retryInitialMs ?? 100,
      retryMaxMs: o.retryMaxMs ?? 400,
      writeTimeoutMs: 2000,
      tickMs: 10,
    },
  };
  const writer = new TelemetryWriter(options);
  writer.start(bus);
  const publish = (from: number, count: number) => publishUpdates(bus, from, count);
  return { clock, db, bus, writer, options, publish };
}

/**
 * Publishes `count` state updates of one double signal (sim0/tempctl0/temp) on `bus`, with the
 * values (and timestamps, ms after 1_760_000_000_000) from `from` on.
 */
export function publishUpdates(bus: EventBus, from: number, count: number): void {
  for (let i = from; i < from + count; i++) {
    bus.publish({
      kind: "state_update",
      provider_id: "sim0",
      device_id: "tempctl0",
      signal_id: "temp",
      value: { type: "double", double: i },
      quality: "OK",
      timestamp_ms: 1_760_000_000_000 + i,
    });
  }
}

/** Signal rows (`runtime_signal` lines) in what a database received. */
export function signalRowsOf(received: string): number {
  return received.split(/\r?\n/).filter((l) => l.startsWith("runtime_signal,")).length;
}

/**
 * A provider's health as a snapshot gives it to the writer: sim0 AVAILABLE, unsupervised, no
 * devices, nothing reported; `over` replaces members.
 */
export function providerHealthView(over: Partial<ProviderHealthView> = {}): ProviderHealthView {
  return {
    provider_id: "sim0",
    state: "AVAILABLE",
    lifecycle_state: "RUNNING",
    last_seen_ago_ms: 10,
    uptime_seconds: 12,
    device_count: 0,
    degraded: false,
    failed_device_count: 0,
    reported: null,
    supervision: {
      enabled: false,
      attempt_count: 0,
      max_attempts: 0,
      crash_detected: false,
      circuit_open: false,
      next_restart_in_ms: null,
    },
    discovery_warnings: [],
    held_claims: [],
    host_check: null,
    start_error: null,
    data_faults: { type_mismatch: 0, non_finite: 0, undeclared_signal: 0 },
    timestamp_skew: { samples_total: 0, last_skew_ms: null, last_at_epoch_ms: null },
    devices: [],
    ...over,
  };
}

/** A device of a providerHealthView: `deviceId`, OK, polled at 1760000000000, nothing reported. */
export function deviceHealthView(deviceId: string): ProviderHealthView["devices"][number] {
  return {
    device_id: deviceId,
    health: "OK",
    last_poll_ms: 1760000000000,
    staleness_ms: 40,
    registered: true,
    stale_signal_count: 0,
    fault_signal_count: 0,
    type_version: "",
    descriptor_tags: {},
    claims: [],
    reported: null,
  };
}
