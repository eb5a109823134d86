/**
 * A database that refuses the writer's credentials or target (401, 403, 404) is said with the
 * settings to check; its rows wait in the retry buffer (bounded, oldest dropped and counted) for a
 * reload that fixes them, retried at most every retryMaxMs. Against an injected transport on one
 * manual clock (_scripted_db.ts).
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { scriptedRig } from "./_scripted_db.ts";

for (
  const [status, names] of [
    [401, /check telemetry\.influxdb\.token \(or INFLUXDB_TOKEN\)/],
    [403, /check telemetry\.influxdb\.token \(or INFLUXDB_TOKEN\)/],
    [404, /check telemetry\.influxdb\.url, \.org and \.bucket/],
  ] as const
) {
  Deno.test(`TelemetryWriter names the settings to check when the database answers ${status}, and retries at most every retryMaxMs`, async () => {
    const { log, lines } = capturingLogger();
    const { clock, db, writer, publish } = scriptedRig({ logger: log });
    try {
      db.otherwise = status;
      publish(0, 4);
      await clock.advanceAsync(10);
      const failed = lines.filter((l) => l.includes(`HTTP ${status}`));
      assert.equal(failed.length, 1, lines.join("\n"));
      assert.match(failed[0]!, /^ERROR\b.*will retry/);
      assert.match(failed[0]!, names);
      // Retried, backing off to retryMaxMs (400 ms here): 10 s -> at most 10000/400 + 3 requests.
      await clock.advanceAsync(10_000);
      const requests = db.requests.length;
      assert.ok(requests >= 20 && requests <= 28, `${requests} requests`);
      assert.equal(writer.status().retry_buffer_depth, 4);
      assert.equal(writer.status().connected, false);
    } finally {
      await writer.stop(0);
    }
  });
}
