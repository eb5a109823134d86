/**
 * A database's `Retry-After` given as an HTTP-date is measured against the answer's own `Date`
 * (RFC 9110 10.2.3), not against the runtime's wall clock: a Raspberry Pi without a real-time
 * clock, hours behind before NTP has set it, must wait the 10 s the database asked for, not
 * MAX_RETRY_AFTER_MS. The InfluxDB client's real transport against a real HTTP server on
 * loopback; the writer's clock (the runtime's) reads hours behind the server's, its timers real.
 */
import assert from "node:assert/strict";
import { loadInfluxClient } from "../../src/telemetry/mod.ts";
import { withRealTimers } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { loopbackDatabase, loopbackWriter } from "./_loopback_db.ts";

await loadInfluxClient(); // as the service does when telemetry is enabled

/** How far behind the server's the runtime's wall clock is (no RTC, NTP not yet synchronised). */
const BEHIND_MS = 3 * 3_600_000;

/**
 * A loopback database answering every write with `status`, its `Date` the server's time (whole
 * seconds, as an HTTP-date is) and `Retry-After` the date 10 s after it.
 */
function busyDatabase(status: number) {
  return loopbackDatabase(() => {
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
}

for (const status of [503, 429]) {
  Deno.test(`TelemetryWriter measures an HTTP-date Retry-After of a ${status} against the answer's Date, not a wall clock hours behind it`, async () => {
    const db = busyDatabase(status);
    const { log, lines } = capturingLogger();
    const { writer: w, writeOne } = loopbackWriter(db.url, {
      clock: withRealTimers({
        nowMs: () => Date.now() - BEHIND_MS,
        monoMs: () => performance.now(),
      }),
      logger: log,
    });
    try {
      writeOne();
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
