/**
 * TelemetryWriter.retarget (a reload that changes the `telemetry` section) while rows are
 * buffered: against an injected transport and one manual clock, as telemetry_transport_test.ts.
 */
import assert from "node:assert/strict";
import { TelemetryWriter, type TelemetryWriterOptions } from "../../src/telemetry/mod.ts";
import { ScriptedDb, scriptedRig, SETTINGS } from "./_scripted_db.ts";

Deno.test("TelemetryWriter.retarget to the same database keeps the rows waiting for a retry while it is down", async () => {
  const { clock, db, writer, options, publish } = scriptedRig();
  try {
    db.otherwise = 503; // the database is down
    publish(0, 8);
    await clock.advanceAsync(10);
    assert.equal(writer.status().retry_buffer_depth, 8);
    // A reload that changes the batch size only: same url, org, bucket and token.
    const reloaded = writer.retarget(
      { ...options, influx: { ...SETTINGS, batchSize: 2 } },
      200,
    );
    await clock.advanceAsync(200);
    await reloaded;
    db.otherwise = "ok"; // the database is back
    await clock.advanceAsync(1000);
    const s = writer.status();
    assert.equal(s.total_failed, 0, "no row given up");
    assert.equal(s.total_written, 8);
    assert.equal(s.retry_buffer_depth, 0);
    assert.deepEqual(db.values(), [0, 1, 2, 3, 4, 5, 6, 7]);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget to the same database with a smaller retry buffer drops and counts the oldest rows", async () => {
  const { clock, db, writer, options, publish } = scriptedRig();
  try {
    db.otherwise = 503;
    publish(0, 8);
    await clock.advanceAsync(10);
    await writer.retarget({ ...options, influx: { ...SETTINGS, maxRetryBufferSize: 5 } }, 200);
    db.otherwise = "ok";
    await clock.advanceAsync(1000);
    const s = writer.status();
    assert.equal(s.dropped_retry, 3);
    assert.equal(s.total_failed, 3);
    assert.equal(s.total_written, 5);
    assert.deepEqual(db.values(), [0, 1, 2, 3, 4, 5, 6, 7], "all were tried before the reload");
    assert.deepEqual(
      db.requests.at(-1)!.map((l) => Number(/value_double=([0-9]+)/.exec(l)![1])),
      [3, 4, 5, 6, 7],
    );
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget with a new token for the same database writes the rows the old token could not", async () => {
  const { clock, db, writer, options, publish } = scriptedRig();
  try {
    db.otherwise = 401; // the old token was revoked
    publish(0, 4);
    await clock.advanceAsync(10);
    assert.equal(writer.status().retry_buffer_depth, 4);
    const reloaded = writer.retarget({ ...options, influx: { ...SETTINGS, token: "new" } }, 200);
    db.otherwise = "ok"; // the new token is accepted
    await clock.advanceAsync(200);
    await reloaded;
    await clock.advanceAsync(1000);
    const s = writer.status();
    assert.equal(s.total_failed, 0, "no row given up");
    assert.equal(s.total_written, 4);
    assert.deepEqual(db.values(), [0, 1, 2, 3]);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget to the same database writes a partial batch when it was due: reloads more frequent than flush_interval_ms do not hold it back", async () => {
  const { clock, db, writer, options, publish } = scriptedRig(); // batch_size 4, flush every 50 ms
  try {
    publish(0, 1); // at 1000: one row, less than a batch, due at 1050
    for (let i = 1; i <= 10; i++) {
      await clock.advanceAsync(30); // a reload at 1030, 1060, ..., 1300
      await writer.retarget({ ...options, influx: { ...SETTINGS, token: `token${i}` } }, 200);
      if (i === 2) assert.equal(db.requests.length, 1, "written at 1050, not held back");
    }
    assert.equal(db.requests.length, 1);
    assert.deepEqual(db.values(), [0]);
    assert.equal(writer.status().total_written, 1);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget to a new database writes the rows published while the old one was flushed there", async () => {
  const { clock, db, writer, options, publish } = scriptedRig();
  const second = new ScriptedDb();
  try {
    db.script("hang"); // the old database is slow: the flush takes the reload's budget
    publish(0, 4);
    await clock.advanceAsync(10);
    assert.equal(db.requests.length, 1);
    const reloaded = writer.retarget(
      { ...options, influx: { ...SETTINGS, url: "http://db2.invalid:8086" }, transport: second },
      200,
    );
    await clock.advanceAsync(50);
    publish(4, 4); // during the reload
    writer.recordRunEvent({
      run_id: "r1",
      sequence: 1,
      category: "run_opened",
      type: "",
      occurred_at_epoch_ms: 1_760_000_000_100,
      payload: {},
    });
    await clock.advanceAsync(150);
    await reloaded;
    await clock.advanceAsync(100);
    assert.deepEqual(second.values(), [4, 5, 6, 7], "the rows published during the reload");
    assert.ok(
      second.requests.flat().some((l) => l.startsWith("runtime_run_event,")),
      "the run event recorded during the reload",
    );
    const s = writer.status();
    assert.equal(s.total_written, 5);
    assert.equal(s.total_failed, 4, "the rows the old database never took");
    assert.equal(s.dropped_events, 0);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.stop during a retarget waits for it, then stops the writer and flushes what came meanwhile", async () => {
  const { clock, db, writer, options, publish } = scriptedRig();
  const second = new ScriptedDb();
  db.script("hang"); // the old database is slow: the reload's flush takes its budget
  publish(0, 4);
  await clock.advanceAsync(10);
  const reloaded = writer.retarget(
    { ...options, influx: { ...SETTINGS, url: "http://db2.invalid:8086" }, transport: second },
    200,
  );
  await clock.advanceAsync(50);
  publish(4, 4); // during the reload: for the new target
  const stopped = writer.stop(500); // SIGTERM during the reload
  await clock.advanceAsync(150);
  await reloaded;
  await clock.advanceAsync(500);
  await stopped;
  const s = writer.status();
  assert.equal(s.running, false, "stopped");
  assert.deepEqual(second.values(), [4, 5, 6, 7], "the stop flushed the new target's rows");
  assert.equal(s.total_written + s.total_failed, 8, "every row written or counted");
  assert.equal(clock.pendingTimers, 0, "stop() leaves no timer behind");
});

Deno.test("TelemetryWriter.retarget to other measurement names writes a quality-only row polled meanwhile under the new names", async () => {
  const { clock, db, bus, options, writer: unused } = scriptedRig();
  await unused.stop(0);
  type Listener = Parameters<NonNullable<TelemetryWriterOptions["polls"]>["onDevicePolled"]>[0];
  let polled: Listener = () => {};
  const polls = {
    onDevicePolled(l: Listener) {
      polled = l;
      return () => {};
    },
  };
  const writer = new TelemetryWriter({ ...options, polls });
  writer.start(bus);
  const device = (quality: "UNAVAILABLE" | "FAULT") =>
    ({
      providerId: "sim0",
      deviceId: "probe",
      pollable: ["absent"],
      signals: new Map([["absent", { value: null, quality, timestampMs: 0, receivedMono: 0 }]]),
      lastPollMs: 0,
      lastPollMono: 0,
      available: true,
    }) as unknown as Parameters<Listener>[0];
  try {
    db.script("hang"); // the write in flight when the reload comes never answers
    bus.publish({
      kind: "mode_change",
      previous_mode: "IDLE",
      new_mode: "MANUAL",
      timestamp_ms: 1_760_000_000_000,
    });
    await clock.advanceAsync(60);
    assert.equal(db.requests.length, 1, "a write in flight");
    // Same database, anolis names: the reload waits for the write in flight.
    const reloaded = writer.retarget({ ...options, polls, measurementNames: "anolis" }, 200);
    polled(device("FAULT")); // a poll during the reload
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "AUTO",
      timestamp_ms: 1_760_000_000_001,
    });
    await clock.advanceAsync(200);
    await reloaded;
    await clock.advanceAsync(1000);
    const lines = db.requests.slice(1).flat();
    assert.ok(lines.some((l) => l.startsWith("mode_change ")), lines.join("\n"));
    const row = lines.find((l) => l.includes("signal_id=absent"));
    assert.match(row ?? "", /^anolis_signal,/, lines.join("\n"));
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget to a new runtime name writes a run event recorded during the reload under the new name, as the other rows", async () => {
  const { clock, db, writer, options, publish } = scriptedRig();
  const second = new ScriptedDb();
  try {
    db.script("hang"); // the old database is slow: the flush takes the reload's budget
    publish(0, 4);
    await clock.advanceAsync(10);
    const reloaded = writer.retarget(
      {
        ...options,
        runtimeName: "lab2",
        influx: { ...SETTINGS, url: "http://db2.invalid:8086" },
        transport: second,
      },
      200,
    );
    await clock.advanceAsync(50);
    publish(4, 1); // during the reload
    writer.recordRunEvent({
      run_id: "r1",
      sequence: 1,
      category: "run_opened",
      type: "",
      occurred_at_epoch_ms: 1_760_000_000_100,
      payload: {},
    });
    await clock.advanceAsync(150);
    await reloaded;
    await clock.advanceAsync(100);
    const lines = second.requests.flat();
    const signal = lines.find((l) => l.startsWith("runtime_signal,"));
    const run = lines.find((l) => l.startsWith("runtime_run_event,"));
    assert.match(signal ?? "", /runtime_name=lab2[, ]/, lines.join("\n"));
    assert.match(run ?? "", /runtime_name=lab2[, ]/, lines.join("\n"));
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget after stop() is refused: the stopped writer writes nothing more", async () => {
  const { clock, db, writer, options, publish } = scriptedRig();
  try {
    await writer.stop(0);
    // A reload's telemetry section that reaches the writer only after the runtime stopped it.
    await assert.rejects(
      writer.retarget({ ...options, influx: { ...SETTINGS, batchSize: 2 } }, 200),
      /telemetry writer has stopped/,
    );
    assert.equal(writer.running, false, "running again after stop()");
    publish(0, 4);
    await clock.advanceAsync(1000);
    assert.deepEqual(db.values(), [], "rows written after stop()");
  } finally {
    await writer.stop(0);
  }
});
