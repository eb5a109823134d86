/**
 * A telemetry.influxdb.url that fetch cannot write to (`ftp:`, `file:`, `mailto:`, `ws:`; a
 * `data:` url answers 200 and stores nothing) is refused where it enters the writer -- start,
 * retarget, influxTransport -- with one error naming the setting and the url (its password
 * hidden), not only by the config validation: a direct caller used to get a failed write per
 * flush. The InfluxDB client is the real one; the old database of a retarget is scripted.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { influxTransport, loadInfluxClient, TelemetryWriter } from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { publishUpdates, ScriptedDb, SETTINGS } from "./_scripted_db.ts";

await loadInfluxClient(); // as the service does when telemetry is enabled

const PASSWORD = "s3cret-pw";

/** Urls fetch cannot POST a write to, and how the refusal names each. */
const NOT_HTTP: readonly (readonly [string, string])[] = [
  [
    `ftp://writer:${PASSWORD}@db.invalid:21/x`,
    'telemetry.influxdb.url: "ftp://writer:<redacted>@db.invalid:21/x" is not an http(s) URL ' +
    "(fetch cannot write to ftp:)",
  ],
  [
    "file:///var/lib/influxdb",
    'telemetry.influxdb.url: "file:///var/lib/influxdb" is not an http(s) URL ' +
    "(fetch cannot write to file:)",
  ],
  [
    "mailto:ops@example.invalid",
    'telemetry.influxdb.url: "mailto:ops@example.invalid" is not an http(s) URL ' +
    "(fetch cannot write to mailto:)",
  ],
  [
    "data:,x",
    'telemetry.influxdb.url: "data:,x" is not an http(s) URL (fetch cannot write to data:)',
  ],
  [
    "ws://db.invalid:8086",
    'telemetry.influxdb.url: "ws://db.invalid:8086" is not an http(s) URL ' +
    "(fetch cannot write to ws:)",
  ],
];

Deno.test("influxTransport refuses a url fetch cannot write to with INVALID_ARGUMENT naming the setting and the url without its password", () => {
  for (const [url, message] of NOT_HTTP) {
    assert.throws(() => influxTransport(url, "t"), (err: RuntimeError) => {
      assert.equal(err.code, "INVALID_ARGUMENT", url);
      assert.equal(err.message, message);
      assert.ok(!err.message.includes(PASSWORD));
      return true;
    });
  }
  // The two schemes fetch writes to, in any case, are taken.
  for (const url of ["http://127.0.0.1:8086", "https://db.invalid:8086/x", "HTTP://db.invalid"]) {
    assert.equal(typeof influxTransport(url, "t").request, "function", url);
  }
});

Deno.test("TelemetryWriter.start with a url fetch cannot write to does not start: one ERROR line and last_error name it without its password", async () => {
  for (const [url, message] of NOT_HTTP) {
    const { log, lines } = capturingLogger();
    const writer = new TelemetryWriter({
      enabled: true,
      runtimeName: "lab1",
      healthIntervalMs: 0,
      clock: new ManualClock(1_000, 1_760_000_000_000),
      logger: log,
      influx: { ...SETTINGS, url },
    });
    writer.start(new EventBus());
    try {
      assert.equal(writer.running, false, url);
      const expected = `${message}: telemetry writer not started`;
      assert.equal(writer.status().last_error, expected);
      assert.equal(lines.length, 1, lines.join("\n"));
      assert.ok(lines[0]!.startsWith("ERROR"), lines[0]);
      assert.ok(lines[0]!.endsWith(` ${expected}`), lines[0]);
    } finally {
      await writer.stop(0);
    }
  }
});

Deno.test("TelemetryWriter.retarget to a url fetch cannot write to throws FAILED_PRECONDITION naming it without its password and goes on writing to the old database", async () => {
  const { log, lines } = capturingLogger();
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const db = new ScriptedDb();
  const bus = new EventBus();
  const options = {
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock,
    logger: log,
    influx: SETTINGS,
    tuning: { tickMs: 10 },
  };
  const writer = new TelemetryWriter({ ...options, transport: db });
  writer.start(bus);
  try {
    publishUpdates(bus, 0, 2);
    await clock.advanceAsync(60);
    assert.deepEqual(db.values(), [0, 1]);
    for (const [url, message] of NOT_HTTP) {
      // No transport given: the writer would build the client's, as the runtime's reload does.
      const next = { ...options, influx: { ...SETTINGS, url } };
      await assert.rejects(writer.retarget(next, 1000), (err: RuntimeError) => {
        assert.equal(err.code, "FAILED_PRECONDITION", url);
        assert.equal(err.message, `${message}: telemetry left as it was`);
        return true;
      });
    }
    // The writer goes on as it was, on the old database.
    assert.equal(writer.running, true);
    assert.equal(writer.status().backend?.url, SETTINGS.url);
    publishUpdates(bus, 2, 2);
    await clock.advanceAsync(60);
    const s = writer.status();
    assert.equal(s.total_written, 4);
    assert.equal(s.total_failed, 0);
    assert.deepEqual(db.values(), [0, 1, 2, 3]);
    assert.deepEqual(lines.filter((l) => /reload|not started|ERROR|WARN/.test(l)), []);
    assert.ok(!lines.join("\n").includes(PASSWORD));
  } finally {
    await writer.stop(0);
  }
});
