/**
 * TelemetryWriter's write, retry, back-off and isolation logic against an injected transport and
 * one manual clock: no database, no sockets, no sleeping. What the database does is scripted per
 * request; the end-to-end tests against VictoriaMetrics (telemetry_writer_test.ts) keep the real
 * one.
 */
import assert from "node:assert/strict";
import type { Logger } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import {
  type InfluxSettings,
  type TelemetryTransport,
  TelemetryWriter,
} from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";

const SILENT: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => SILENT,
};

const SETTINGS: InfluxSettings = {
  url: "http://db.invalid:8086",
  org: "lab",
  bucket: "telemetry",
  token: "secret-token",
  batchSize: 4,
  flushIntervalMs: 50,
  maxRetryBufferSize: 1000,
  queueSize: 10000,
};

/** What the scripted database answers a request: accept, fail with a status, or never answer. */
type Answer = "ok" | number | "hang";

/** A database whose answers the test scripts; it keeps every request's rows. */
class ScriptedDb implements TelemetryTransport {
  readonly requests: string[][] = [];
  readonly #answers: Answer[] = [];
  /** Answers for the requests to come, in order; past the script, "ok". */
  script(...answers: Answer[]): void {
    this.#answers.push(...answers);
  }
  request(_path: string, body: string, o: { signal?: AbortSignal }): Promise<unknown> {
    this.requests.push(body.trimEnd().split("\n"));
    const answer = this.#answers.shift() ?? "ok";
    if (answer === "ok") return Promise.resolve(undefined);
    if (answer === "hang") {
      return new Promise((_, reject) =>
        o.signal?.addEventListener("abort", () => reject(new Error("aborted")))
      );
    }
    return Promise.reject({ statusCode: answer, body: `status ${answer}` });
  }
  /** The `value_double` of each row of one request, as sent. */
  valuesOf(request: number): number[] {
    return this.requests[request]!.map((l) => Number(/value_double=([0-9.e+-]+)/.exec(l)?.[1]));
  }
}

function rig(o: { retryInitialMs?: number; retryMaxMs?: number } = {}) {
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const db = new ScriptedDb();
  const bus = new EventBus();
  const writer = new TelemetryWriter({
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock,
    logger: SILENT,
    influx: SETTINGS,
    transport: db,
    tuning: {
      retryInitialMs: o.retryInitialMs ?? 100,
      retryMaxMs: o.retryMaxMs ?? 400,
      writeTimeoutMs: 2000,
      tickMs: 10,
    },
  });
  writer.start(bus);
  const publish = (from: number, count: number) => {
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
  };
  return { clock, db, writer, publish };
}

Deno.test("TelemetryWriter (injected transport) writes a full batch at the next tick, one request", async () => {
  const { clock, db, writer, publish } = rig();
  try {
    publish(0, 4);
    await clock.advanceAsync(10);
    assert.equal(db.requests.length, 1);
    assert.deepEqual(db.valuesOf(0), [0, 1, 2, 3]);
    assert.equal(writer.status().total_written, 4);
    assert.equal(writer.status().connected, true);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter (injected transport) keeps failed rows, backs off doubling to retryMaxMs, then writes them first, in order", async () => {
  const { clock, db, writer, publish } = rig();
  try {
    db.script(503, 503, 503, 503);
    publish(0, 4);
    await clock.advanceAsync(10);
    assert.equal(db.requests.length, 1, "first attempt");
    assert.equal(writer.status().retry_buffer_depth, 4);
    assert.equal(writer.status().write_failures, 1);
    // Back-off: 100, 200, 400, 400 ms between attempts (retryInitialMs doubling to retryMaxMs).
    const attemptsAt: number[] = [];
    let seen = db.requests.length;
    for (let t = 0; t < 1200; t += 10) {
      await clock.advanceAsync(10);
      if (db.requests.length > seen) {
        attemptsAt.push(t + 10);
        seen = db.requests.length;
      }
    }
    assert.ok(attemptsAt.length >= 4, `attempts at ${attemptsAt}`);
    // Measured from the first failure (the tick before the loop): each gap is the back-off, on
    // the 10 ms tick grid.
    const gaps = attemptsAt.slice(0, 4).map((t, i) => t - (i === 0 ? 0 : attemptsAt[i - 1])!);
    assert.ok(gaps[0]! >= 90 && gaps[0]! <= 110, `first retry after ${gaps[0]} ms`);
    assert.deepEqual(gaps.slice(1), [200, 400, 400]);
    // The fourth retry was accepted (the script ran out): everything written, oldest first.
    assert.equal(writer.status().retry_buffer_depth, 0);
    assert.equal(writer.status().total_written, 4);
    assert.equal(writer.status().total_failed, 0);
    assert.deepEqual(db.valuesOf(db.requests.length - 1), [0, 1, 2, 3]);
    // Rows published during the outage follow the retried ones.
    publish(4, 4);
    await clock.advanceAsync(10);
    assert.deepEqual(db.valuesOf(db.requests.length - 1), [4, 5, 6, 7]);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter (injected transport) isolates a refused row: the others are written, the one dropped and counted", async () => {
  const { clock, db, writer, publish } = rig();
  try {
    // The write of 4 is refused; its halves: [0,1] accepted, [2,3] refused; then 2 ok, 3 refused.
    db.script(400, "ok", 400, "ok", 400);
    publish(0, 4);
    await clock.advanceAsync(10);
    assert.deepEqual(db.requests.map((_, i) => db.valuesOf(i)), [[0, 1, 2, 3], [0, 1], [2, 3], [
      2,
    ], [3]]);
    const s = writer.status();
    assert.equal(s.total_written, 3);
    assert.equal(s.dropped_rejected, 1);
    assert.equal(s.total_failed, 1);
    assert.equal(s.retry_buffer_depth, 0);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter (injected transport) aborts a write that never answers at the stop budget and counts its rows failed", async () => {
  const { clock, db, writer, publish } = rig();
  db.script("hang");
  publish(0, 4);
  await clock.advanceAsync(10);
  assert.equal(db.requests.length, 1);
  const stopping = writer.stop(200);
  await clock.advanceAsync(200);
  await stopping;
  const s = writer.status();
  assert.equal(s.total_written, 0);
  assert.equal(s.total_failed, 4);
  assert.equal(s.retry_buffer_depth, 0);
  assert.equal(clock.pendingTimers, 0, "stop() leaves no timer behind");
});
