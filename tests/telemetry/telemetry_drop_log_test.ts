/**
 * What an outage costs is logged, once per stretch and not per row: the rows evicted from the
 * full retry buffer while the database is down, and the events evicted from the full queue.
 * Against an injected transport on one manual clock (_scripted_db.ts).
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { scriptedRig } from "./_scripted_db.ts";

Deno.test("TelemetryWriter logs the retry buffer's evictions once per outage, and their count when writes succeed again", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish } = scriptedRig({
    logger: log,
    influx: { maxRetryBufferSize: 8 },
  });
  try {
    db.otherwise = 503;
    for (let i = 0; i < 10; i++) {
      publish(i * 4, 4);
      await clock.advanceAsync(500);
    }
    assert.equal(writer.status().dropped_retry, 32);
    const full = lines.filter((l) => l.includes("retry buffer full"));
    assert.equal(full.length, 1, lines.join("\n"));
    assert.match(full[0]!, /^WARN\b.*max_retry_buffer_size 8/);
    db.otherwise = "ok";
    for (let t = 0; t < 2000 && writer.status().retry_buffer_depth > 0; t += 100) {
      await clock.advanceAsync(100);
    }
    assert.equal(writer.status().retry_buffer_depth, 0);
    const again = lines.filter((l) => l.includes("write succeeded again"));
    assert.equal(again.length, 1, lines.join("\n"));
    assert.match(again[0]!, /32 rows dropped from the full retry buffer/);
    // A second outage is a second stretch: logged again.
    db.otherwise = 503;
    for (let i = 10; i < 14; i++) {
      publish(i * 4, 4);
      await clock.advanceAsync(500);
    }
    assert.equal(lines.filter((l) => l.includes("retry buffer full")).length, 2, lines.join("\n"));
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter logs the queue's evictions once until it drains, then how many", async () => {
  const { log, lines } = capturingLogger();
  const { clock, writer, publish } = scriptedRig({ logger: log, influx: { queueSize: 5 } });
  try {
    publish(0, 20);
    publish(20, 20);
    assert.equal(writer.status().dropped_events, 35);
    const full = lines.filter((l) => l.includes("queue full"));
    assert.equal(full.length, 1, lines.join("\n"));
    assert.match(full[0]!, /^WARN\b.*queue_size 5/);
    for (let t = 0; t < 1000 && writer.status().queue_depth > 0; t += 10) {
      await clock.advanceAsync(10);
    }
    const drained = lines.filter((l) => l.includes("queue drained"));
    assert.equal(drained.length, 1, lines.join("\n"));
    assert.match(drained[0]!, /35 events dropped/);
    publish(40, 20);
    assert.equal(lines.filter((l) => l.includes("queue full")).length, 2, lines.join("\n"));
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter says a second database's retry-buffer evictions once more, counting only its own, after a reload moved away from a first that never came back", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, options, publish } = scriptedRig({
    logger: log,
    influx: { maxRetryBufferSize: 8 },
  });
  try {
    // The first database is down: its retry buffer fills and drops 32 rows (said once).
    db.otherwise = 503;
    for (let i = 0; i < 10; i++) {
      publish(i * 4, 4);
      await clock.advanceAsync(500);
    }
    assert.equal(writer.status().dropped_retry, 32);
    // The operator moves telemetry to another bucket; the first database never answers again,
    // so the reload's flush to it fails and its rows are said lost.
    const reloading = writer.retarget(
      { ...options, influx: { ...options.influx, bucket: "standby" } },
      200,
    );
    await clock.advanceAsync(200);
    await reloading;
    const saidAtReload = lines.length;
    // The second database is down too: its own retry buffer fills, which is a stretch of its own.
    for (let i = 10; i < 14; i++) {
      publish(i * 4, 4);
      await clock.advanceAsync(500);
    }
    assert.equal(writer.status().dropped_retry, 32 + 8);
    const full = lines.filter((l) => l.includes("retry buffer full"));
    assert.equal(full.length, 2, `the second database's evictions are said:\n${lines.join("\n")}`);
    // It comes back: the count said is its own stretch's, not the first database's too.
    db.otherwise = "ok";
    for (let t = 0; t < 2000 && writer.status().retry_buffer_depth > 0; t += 100) {
      await clock.advanceAsync(100);
    }
    const again = lines.filter((l) => l.includes("write succeeded"));
    assert.equal(again.length, 1, lines.join("\n"));
    assert.match(again[0]!, /; 8 rows dropped from the full retry buffer before it/);
    // The first database's stretch ended with the reload: its count was said then, naming it.
    const said = lines.slice(0, saidAtReload).filter((l) =>
      l.includes("dropped from the full retry buffer")
    );
    assert.equal(said.length, 1, lines.join("\n"));
    assert.match(
      said[0]!,
      /^WARN\b.* reload: 32 telemetry rows were dropped from the full retry buffer for the old database \S+ org=lab bucket=telemetry since its last successful write \(dropped_retry\)$/,
    );
  } finally {
    await writer.stop(0);
  }
});
