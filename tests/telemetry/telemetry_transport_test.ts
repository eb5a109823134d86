/**
 * TelemetryWriter's write, retry, back-off and isolation logic against an injected transport and
 * one manual clock: no database, no sockets, no sleeping. What the database does is scripted per
 * request; the end-to-end tests against VictoriaMetrics (telemetry_writer_test.ts) keep the real
 * one.
 */
import assert from "node:assert/strict";
import { MAX_WRITE_BYTES } from "../../src/telemetry/mod.ts";
import { scriptedRig } from "./_scripted_db.ts";

Deno.test("TelemetryWriter (injected transport) writes a full batch at the next tick, one request", async () => {
  const { clock, db, writer, publish } = scriptedRig();
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
  const { clock, db, writer, publish } = scriptedRig();
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
  const { clock, db, writer, publish } = scriptedRig();
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

Deno.test("TelemetryWriter (injected transport) goes on doubling the back-off when an isolation is partly accepted and then fails", async () => {
  const { clock, db, writer, publish } = scriptedRig({ retryInitialMs: 100, retryMaxMs: 1600 });
  try {
    // A half-failing database: each refused write's first half is accepted, the rest fails (503).
    db.script(503, 400, "ok", 503, 400, "ok", 503);
    const sentAt: number[] = [];
    const request = db.request.bind(db);
    db.request = (...args) => {
      sentAt.push(clock.monoMs());
      return request(...args);
    };
    publish(0, 4);
    for (
      let t = 0;
      t < 1500 && (db.requests.length < 8 || writer.status().retry_buffer_depth);
      t += 10
    ) {
      await clock.advanceAsync(10);
    }
    assert.deepEqual(db.requests.map((_, i) => db.valuesOf(i)), [
      [0, 1, 2, 3], // 503
      [0, 1, 2, 3], // 400: isolated
      [0, 1], // accepted
      [2, 3], // 503: back to the retry buffer
      [2, 3], // 400: isolated
      [2], // accepted
      [3], // 503
      [3], // accepted
    ]);
    // The attempts that follow a failure: 100, 200, 400 ms after it (the 10 ms tick grid), not
    // the first back-off again after every partly accepted isolation.
    const gaps = [1, 4, 7].map((i) => sentAt[i]! - sentAt[i - 1]!);
    assert.deepEqual(gaps, [100, 200, 400]);
    const s = writer.status();
    assert.equal(s.total_written, 4);
    assert.equal(s.write_failures, 3);
    assert.equal(s.retry_buffer_depth, 0);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter (injected transport) writes a batch of large string rows in bodies of at most MAX_WRITE_BYTES, in order", async () => {
  const { clock, db, writer, bus } = scriptedRig({ influx: { batchSize: 100 } });
  try {
    const LIMIT = 1024 * 1024; // one write's body
    const text = (i: number) => `${i}:`.padEnd(60_000, "x");
    for (let i = 0; i < 40; i++) {
      bus.publish({
        kind: "state_update",
        provider_id: "sim0",
        device_id: "tempctl0",
        signal_id: "log",
        value: { type: "string", string: text(i) },
        quality: "OK",
        timestamp_ms: 1_760_000_000_000 + i,
      });
    }
    for (let t = 0; t < 1000 && writer.status().total_written < 40; t += 10) {
      await clock.advanceAsync(10);
    }
    assert.equal(writer.status().total_written, 40);
    const utf8 = new TextEncoder();
    const bodies = db.requests.map((r) => utf8.encode(r.join("\n") + "\n").length);
    assert.ok(bodies.every((b) => b <= LIMIT), `bodies of ${bodies} bytes`);
    // Each body as full as the bound allows: 17 rows of about 60 KiB each.
    assert.deepEqual(db.requests.map((r) => r.length), [17, 17, 6]);
    const sent = db.requests.flat().map((l) => Number(/value_string="(\d+):/.exec(l)?.[1]));
    assert.deepEqual(sent, [...Array(40).keys()]);
    assert.equal(MAX_WRITE_BYTES, LIMIT);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter (injected transport) aborts a write that never answers at the stop budget and counts its rows failed", async () => {
  const { clock, db, writer, publish } = scriptedRig();
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
