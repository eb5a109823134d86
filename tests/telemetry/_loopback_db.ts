/**
 * A database on loopback for the tests of the InfluxDB client's real transport
 * (telemetry_answer_body_test.ts, telemetry_retry_after_date_test.ts): a real HTTP server that
 * answers every request as the test says, and a TelemetryWriter that writes each update at once
 * (batch size 1) to it and retries only after a minute (one refusal per test).
 */
import type { Clock, Logger } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { TelemetryWriter } from "../../src/telemetry/mod.ts";

/** A database on loopback; `close()` shuts its server down. */
export interface LoopbackDb {
  readonly url: string;
  close(): Promise<void>;
}

/**
 * A loopback server answering every request (its body cancelled unread) with `answer()`.
 */
export function loopbackDatabase(answer: () => Response): LoopbackDb {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.body?.cancel();
    return answer();
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

/**
 * A TelemetryWriter of runtime "lab1" writing to `url` (bucket "telemetry" of org "lab"), each
 * update at once, retrying after 60 s, a write's timeout 5 s; `writeOne()` starts it and publishes
 * one update (sim0/tempctl0/temp = 1), which it writes at once.
 */
export function loopbackWriter(
  url: string,
  o: { readonly clock: Clock; readonly logger: Logger },
): { readonly writer: TelemetryWriter; writeOne(): void } {
  const bus = new EventBus();
  const writer = new TelemetryWriter({
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock: o.clock,
    logger: o.logger,
    tuning: { retryInitialMs: 60_000, retryMaxMs: 60_000, writeTimeoutMs: 5000 },
    influx: {
      url,
      org: "lab",
      bucket: "telemetry",
      token: "t",
      batchSize: 1,
      flushIntervalMs: 50,
      maxRetryBufferSize: 1000,
      queueSize: 10000,
    },
  });
  return {
    writer,
    writeOne() {
      writer.start(bus);
      bus.publish({
        kind: "state_update",
        provider_id: "sim0",
        device_id: "tempctl0",
        signal_id: "temp",
        value: { type: "double", double: 1 },
        quality: "OK",
        timestamp_ms: 1_700_000_000_000,
      });
    },
  };
}
