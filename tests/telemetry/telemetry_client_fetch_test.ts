/**
 * A pinned InfluxDB client whose transport lacks the `fetch` method the answer-body bound sits on
 * (MAX_ANSWER_BODY_BYTES) is refused with an error naming that, not the configured url (which is
 * fine). The client's real transport class, its `fetch` taken away for the test and put back.
 */
import assert from "node:assert/strict";
import { InfluxDB } from "@influxdata/influxdb-client";
import type { RuntimeError } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { influxTransport, loadInfluxClient, TelemetryWriter } from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { publishUpdates, ScriptedDb, SETTINGS } from "./_scripted_db.ts";

await loadInfluxClient(); // as the service does when telemetry is enabled

const URL_OK = "http://127.0.0.1:8086";
const NO_FETCH =
  "the pinned InfluxDB client (@influxdata/influxdb-client in deno.json) lacks its transport's " +
  "fetch method: its answers cannot be bounded (MAX_ANSWER_BODY_BYTES)";

/** Runs `body` with the client's transport class lacking `fetch`. */
async function withoutFetch(body: () => void | Promise<void>): Promise<void> {
  const proto = Object.getPrototypeOf(new InfluxDB({ url: URL_OK }).transport) as Record<
    string,
    unknown
  >;
  const fetch = proto.fetch;
  assert.equal(typeof fetch, "function", "the pinned client's transport has fetch");
  delete proto.fetch;
  try {
    await body();
  } finally {
    proto.fetch = fetch;
  }
}

Deno.test("influxTransport refuses a client without its transport's fetch with INTERNAL naming the pinned client, not the url", async () => {
  await withoutFetch(() => {
    assert.throws(() => influxTransport(URL_OK, "t"), (err: RuntimeError) => {
      assert.equal(err.code, "INTERNAL");
      assert.equal(err.message, NO_FETCH);
      return true;
    });
  });
});

Deno.test("TelemetryWriter.start with a client without its transport's fetch says that in one ERROR line and last_error, not telemetry.influxdb.url", async () => {
  const { log, lines } = capturingLogger();
  const writer = new TelemetryWriter({
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock: new ManualClock(1_000, 1_760_000_000_000),
    logger: log,
    influx: {
      url: URL_OK,
      org: "lab",
      bucket: "b",
      token: "t0k3n",
      batchSize: 4,
      flushIntervalMs: 50,
      maxRetryBufferSize: 10,
      queueSize: 10,
    },
  });
  await withoutFetch(() => writer.start(new EventBus()));
  try {
    assert.equal(writer.running, false);
    const expected = `${NO_FETCH}: telemetry writer not started`;
    assert.equal(writer.status().last_error, expected);
    const errors = lines.filter((l) => l.startsWith("ERROR"));
    assert.equal(errors.length, 1, lines.join("\n"));
    assert.ok(errors[0]!.endsWith(` ${expected}`), errors[0]);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget to a target the client refuses only once the writer starts on it counts the events queued during the reload in dropped_events, in one WARN line", async () => {
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
    db.otherwise = "hang";
    publishUpdates(bus, 0, 4);
    await clock.advanceAsync(10);
    assert.equal(db.requests.length, 1, "the old database's write hangs");
    // The new target passes the checks (its transport is built then); the client is refused
    // when the writer starts on it, after the old database's flush (a client changed meanwhile).
    const next = { ...options, influx: { ...SETTINGS, url: URL_OK } };
    const reload = writer.retarget(next, 1000);
    await withoutFetch(async () => {
      publishUpdates(bus, 4, 3); // during the reload's flush: queued for the new target
      await clock.advanceAsync(1000);
      await reload;
    });
    assert.equal(writer.running, false);
    const s = writer.status();
    assert.equal(s.queue_depth, 0);
    assert.equal(s.dropped_events, 3);
    assert.equal(s.total_failed, 4, "the old database's rows, lost with the reload's flush");
    const said = lines.filter((l) => l.includes("queued events dropped"));
    assert.equal(said.length, 1, lines.join("\n"));
    assert.match(said[0]!, /^WARN\b.* 3 queued events dropped \(dropped_events\)$/);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget to a target the client refuses throws FAILED_PRECONDITION naming why and goes on writing its rows to the old database", async () => {
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
    tuning: { tickMs: 10, retryInitialMs: 100, retryMaxMs: 100 },
  };
  const writer = new TelemetryWriter({ ...options, transport: db });
  writer.start(bus);
  try {
    db.otherwise = 503; // the old database is down: its rows wait for a retry
    publishUpdates(bus, 0, 4);
    await clock.advanceAsync(10);
    assert.equal(writer.status().retry_buffer_depth, 4);
    await withoutFetch(async () => {
      const next = { ...options, influx: { ...SETTINGS, url: URL_OK } };
      await assert.rejects(writer.retarget(next, 1000), (err: RuntimeError) => {
        assert.equal(err.code, "FAILED_PRECONDITION");
        assert.equal(err.message, `${NO_FETCH}: telemetry left as it was`);
        return true;
      });
    });
    // Nothing was flushed nor given up: the writer goes on as it was, on the old database.
    assert.equal(writer.running, true);
    let s = writer.status();
    assert.equal(s.retry_buffer_depth, 4);
    assert.equal(s.total_failed, 0);
    assert.equal(s.backend?.url, SETTINGS.url);
    assert.deepEqual(lines.filter((l) => /reload|not started/.test(l)), []);
    db.otherwise = "ok"; // the old database is back
    publishUpdates(bus, 4, 1);
    await clock.advanceAsync(200);
    s = writer.status();
    assert.equal(s.total_written, 5);
    assert.equal(s.total_failed, 0);
    assert.deepEqual(db.values(), [0, 1, 2, 3, 4]);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget to a url that does not parse names it without its password", async () => {
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const options = {
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock,
    logger: capturingLogger().log,
    influx: SETTINGS,
    tuning: { tickMs: 10 },
  };
  const writer = new TelemetryWriter({ ...options, transport: new ScriptedDb() });
  writer.start(new EventBus());
  try {
    const next = { ...options, influx: { ...SETTINGS, url: "http://writer:s3cret-pw@[db" } };
    await assert.rejects(writer.retarget(next, 1000), (err: RuntimeError) => {
      assert.equal(err.code, "FAILED_PRECONDITION");
      // Before: "telemetry.influxdb.url: 'http://writer:s3cret-pw@[db' is not a URL: ...".
      assert.equal(
        err.message,
        'telemetry.influxdb.url: "http://writer:<redacted>@[db" is not a URL: telemetry left as it was',
      );
      return true;
    });
  } finally {
    await writer.stop(0);
  }
});
