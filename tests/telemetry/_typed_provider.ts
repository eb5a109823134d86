/**
 * A small ADPP provider for telemetry tests, run as a real child process. It fills the gaps the
 * simulated provider leaves in what telemetry writes:
 * - device `counter0` has the value types no sim device has: `ticks` (int64), `total` (uint64)
 *   and `frame` (bytes), all changing on every read, plus `label` (string, constant);
 * - its GetHealth reports the provider and device metrics telemetry health rows carry when a
 *   provider reports them (startup_* counters, io_* and watchdog_* metrics, firmware_version).
 */
import {
  DeviceProvider,
  type RequestPayloads,
  type ResponsePayloads,
  runStdioProvider,
} from "../../src/provider_sdk/mod.ts";

let reads = 0;

class TypedProvider extends DeviceProvider {
  override async getHealth(
    req: RequestPayloads["get_health"],
  ): Promise<ResponsePayloads["get_health"]> {
    const base = await super.getHealth(req);
    return {
      provider: {
        ...base.provider,
        metrics: {
          startup_configured_devices: "1",
          startup_initialized_devices: "1",
          startup_failed_devices: "0",
        },
      },
      devices: (base.devices ?? []).map((d) => ({
        ...d,
        metrics: {
          io_ok: String(reads),
          io_failed: "0",
          io_retried_attempts: "0",
          watchdog_armed: "true",
          watchdog_tripped: "false",
          watchdog_trip_count: "0",
          watchdog_timeout_ms: "500",
          firmware_version: "1.2.3",
        },
      })),
    };
  }
}

const provider = new TypedProvider({ name: "typed-test", version: "0.0.1" }, [{
  deviceId: "counter0",
  typeId: "test.counter",
  typeVersion: "2.1",
  label: "Counter with 64-bit and bytes signals",
  signals: [
    {
      id: "ticks",
      name: "Ticks",
      type: "int64",
      pollHintHz: 10,
      staleAfterMs: 2000,
      read: () => ++reads - 5, // negative at first: a signed value
    },
    {
      id: "total",
      name: "Total",
      type: "uint64",
      pollHintHz: 10,
      staleAfterMs: 2000,
      read: () => reads * 1000,
    },
    {
      id: "frame",
      name: "Frame",
      type: "bytes",
      pollHintHz: 10,
      staleAfterMs: 2000,
      read: () => new Uint8Array([0, 0xff, reads & 0xff]),
    },
    {
      id: "label",
      name: "Label",
      type: "string",
      pollHintHz: 1,
      staleAfterMs: 5000,
      read: () => "bench A",
    },
  ],
  functions: [],
}]);

await runStdioProvider(provider);
