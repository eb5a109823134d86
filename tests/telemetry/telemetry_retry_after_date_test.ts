/**
 * A database's `Retry-After` given as an HTTP-date is measured against the answer's own `Date`
 * (RFC 9110 10.2.3), not against the runtime's wall clock: a Raspberry Pi without a real-time
 * clock, hours behind before NTP has set it, must wait the 10 s the database asked for, not
 * MAX_RETRY_AFTER_MS. The InfluxDB client's real transport against a real HTTP server on
 * loopback; the writer's clock (the runtime's) reads hours behind the server's, its timers real.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { loadInfluxClient, TelemetryWriter } from "../../src/telemetry/mod.ts";
import { withRealTimers } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

await loadInfluxClient(); // as the service does when telemetry is enabled

/** How far behind the server's the runtime's wall clock is (no RTC, NTP not yet synchronised). */
const BEHIND_MS = 3 * 3_600_000;

/**
 * A loopback database answering every write with `status`, its `Date` the server's time (whole
 * seconds, as an HTTP-date is) and `Retry-After` the date 10 s after it.
 */
function busyDatabase(status: number) {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    await req.body?.cancel();
    const now = Math.floor(Date.now() / 1000) * 1000;
    return new Response("busy", {
      status,
      headers: {
        "content-type": "text/plain",
        date: new Date(now).toUTCString(),
        "retry-after": new Date(now + 10_000).toUTCString(),
      },
    });
  });
  return { url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

for (const status of [503, 429]) {
  Deno.test(`TelemetryWriter measures an HTTP-date Retry-After of a ${status} against the answer's Date, not a wall clock hours behind it`, async () => {
    const db = busyDatabase(status);
    const { log, lines } = capturingLogger();
    const bus = new EventBus();
    const w = new TelemetryWriter({
      enabled: true,
      runtimeName: "lab1",
      healthIntervalMs: 0,
      clock: withRealTimers({
        nowMs: () => Date.now() - BEHIND_MS,
        monoMs: () => performance.now(),
      }),
      logger: log,
      tuning: { retryInitialMs: 60_000, retryMaxMs: 60_000, writeTimeoutMs: 5000 },
      influx: {
        url: db.url,
        org: "lab",
        bucket: "telemetry",
        token: "t",
        batchSize: 1,
        flushIntervalMs: 50,
        maxRetryBufferSize: 1000,
        queueSize: 10000,
      },
    });
    try {
      w.start(bus);
      bus.publish({
        kind: "state_update",
        provider_id: "sim0",
        device_id: "tempctl0",
        signal_id: "temp",
        value: { type: "double", double: 1 },
        quality: "OK",
        timestamp_ms: 1_700_000_000_000,
      });
      await waitFor("the write refused", () => w.status().write_failures === 1);
      assert.equal(
        w.status().last_error,
        `write failed, will retry: HTTP ${status}: busy (Retry-After: 10000 ms)`,
        lines.join("\n"),
      );
    } finally {
      await w.stop(0);
      await db.close();
    }
  });
}
