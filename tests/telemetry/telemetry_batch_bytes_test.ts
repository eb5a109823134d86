/**
 * The batch's bytes (`pending_batch_bytes`, what #batchFull compares with MAX_WRITE_BYTES) are a
 * running total, added when a row joins the batch and subtracted when rows leave it: written,
 * taken in part by a write that MAX_WRITE_BYTES cuts, parked in the retry buffer while the writer
 * backs off, dropped past the batch's cap. Each test checks it against the UTF-8 bytes of the very
 * rows the database receives afterwards. Against an injected transport on one manual clock
 * (_scripted_db.ts).
 */
import assert from "node:assert/strict";
import type { ProviderHealthView } from "../../src/common/mod.ts";
import { type EventBus, EventBus as Bus } from "../../src/events/mod.ts";
import {
  BATCH_HEALTH_ALLOWANCE,
  MAX_WRITE_BYTES,
  TelemetryWriter,
} from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  deviceHealthView,
  providerHealthView,
  ScriptedDb,
  scriptedRig,
  SETTINGS,
} from "./_scripted_db.ts";

const encoder = new TextEncoder();

/** The body bytes of `rows` in a write: their UTF-8 bytes and a newline each. */
function bodyBytes(rows: readonly string[]): number {
  return rows.reduce((n, row) => n + encoder.encode(row).length + 1, 0);
}

/** Publishes string values `texts` of a signal with a non-ASCII id, at timestamps from `from`. */
function publishTexts(bus: EventBus, from: number, texts: readonly string[]): void {
  texts.forEach((text, i) =>
    bus.publish({
      kind: "state_update",
      provider_id: "sim0",
      device_id: "K\u00fchlraum",
      signal_id: "\u6e29\u5ea6",
      value: { type: "string", string: text },
      quality: "OK",
      timestamp_ms: 1_760_000_000_000 + from + i,
    })
  );
}

Deno.test("TelemetryWriter keeps pending_batch_bytes equal to the bytes of the batch's rows through pushes, writes, failed writes and parking while it backs off", async () => {
  // One write per flush interval (50 ms), not per row count; a failed write backs off 100 ms.
  const { clock, db, bus, writer } = scriptedRig({
    influx: { batchSize: 1000 },
    retryInitialMs: 100,
    retryMaxMs: 100,
  });
  try {
    assert.equal(writer.status().pending_batch_bytes, 0);
    // Pushes: three rows of 1-, 2- and 3-byte characters join the batch.
    publishTexts(bus, 0, ["plain", "\u00e9t\u00e9".repeat(50), "\u20ac".repeat(300)]);
    await clock.advanceAsync(10);
    let s = writer.status();
    assert.equal(s.pending_batch, 3);
    const pushed = s.pending_batch_bytes;
    await clock.advanceAsync(50); // the flush interval: written
    assert.equal(db.requests.length, 1);
    assert.equal(pushed, bodyBytes(db.requests[0]!));
    assert.equal(writer.status().pending_batch_bytes, 0);

    // A failed write: its rows leave the batch for the retry buffer.
    db.script(503);
    publishTexts(bus, 3, ["\u20ac".repeat(7), "x"]);
    await clock.advanceAsync(10);
    const failing = writer.status().pending_batch_bytes;
    await clock.advanceAsync(50);
    assert.equal(db.requests.length, 2);
    assert.equal(failing, bodyBytes(db.requests[1]!));
    s = writer.status();
    assert.equal(s.retry_buffer_depth, 2);
    assert.equal(s.pending_batch_bytes, 0);

    // Backing off: rows join the batch, then the due batch is parked without a write.
    publishTexts(bus, 5, ["\u00fc".repeat(11), "\u{1f600}".repeat(5)]);
    await clock.advanceAsync(10);
    s = writer.status();
    assert.equal(s.pending_batch, 2);
    const parked = s.pending_batch_bytes;
    await clock.advanceAsync(50);
    s = writer.status();
    assert.equal(db.requests.length, 2, "no write while backing off");
    assert.equal(s.retry_buffer_depth, 4);
    assert.equal(s.pending_batch_bytes, 0);
    // The back-off over: the retry, the failed rows first, then the parked ones.
    await clock.advanceAsync(50);
    assert.equal(db.requests.length, 3);
    assert.equal(db.requests[2]!.length, 4);
    assert.equal(failing, bodyBytes(db.requests[2]!.slice(0, 2)));
    assert.equal(parked, bodyBytes(db.requests[2]!.slice(2)));
    s = writer.status();
    assert.equal(s.total_written, 7);
    assert.equal(s.pending_batch_bytes, 0);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter keeps pending_batch_bytes equal to the bytes of the rows left when MAX_WRITE_BYTES takes part of the batch", async () => {
  const { clock, db, bus, writer } = scriptedRig({ influx: { batchSize: 1000 } });
  try {
    // Rows of about 60 KB (3-byte characters): 17 fit in one write's 1 MiB, not 18.
    const texts = Array.from({ length: 20 }, (_, i) => "\u20ac".repeat(20_000) + "a".repeat(i));
    publishTexts(bus, 0, texts);
    await clock.advanceAsync(10); // 18 rows fill the batch (bytes): written at once, as far as they fit
    assert.equal(db.requests.length, 1);
    assert.equal(db.requests[0]!.length, 17);
    assert.ok(bodyBytes(db.requests[0]!) <= MAX_WRITE_BYTES);
    let s = writer.status();
    assert.equal(s.pending_batch, 1);
    const left = s.pending_batch_bytes;
    await clock.advanceAsync(10); // the next tick: the last two join it
    s = writer.status();
    assert.equal(s.pending_batch, 3);
    const grown = s.pending_batch_bytes;
    await clock.advanceAsync(50); // the flush interval: the rest
    assert.equal(db.requests.length, 2);
    assert.equal(left, bodyBytes(db.requests[1]!.slice(0, 1)));
    assert.equal(grown, bodyBytes(db.requests[1]!));
    assert.equal(writer.status().pending_batch_bytes, 0);
    assert.equal(writer.status().total_written, 20);
  } finally {
    await writer.stop(0);
  }
});

/** Devices of the one provider of each health snapshot: a snapshot is this + 1 rows. */
const DEVICES = 6000;

Deno.test("TelemetryWriter keeps pending_batch_bytes equal to the bytes of the rows left after the batch drops its oldest rows past its cap", async () => {
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const db = new ScriptedDb();
  db.otherwise = "hang"; // the first write hangs until its timeout: the batch only grows
  let snapshots = 0;
  const snapshot = (): Promise<ProviderHealthView[]> =>
    ++snapshots > 3 ? Promise.reject(new Error("no more snapshots")) : Promise.resolve([
      providerHealthView({
        device_count: DEVICES,
        devices: Array.from({ length: DEVICES }, (_, i) => deviceHealthView(`d\u00e9v${i}`)),
      }),
    ]);
  const writer = new TelemetryWriter({
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 100,
    healthSnapshot: snapshot,
    clock,
    logger: capturingLogger().log,
    // batch_size 4; a retry buffer that takes the whole batch when it is parked, backing off
    influx: { ...SETTINGS, maxRetryBufferSize: 100_000 },
    transport: db,
    tuning: { writeTimeoutMs: 1000, retryInitialMs: 100, retryMaxMs: 100, tickMs: 10 },
  });
  writer.start(new Bus());
  try {
    await clock.advanceAsync(300); // three snapshots: the first write hangs, the batch passes its cap
    let s = writer.status();
    assert.ok(s.dropped_overflow > 0, JSON.stringify(s));
    assert.equal(s.pending_batch, SETTINGS.batchSize + BATCH_HEALTH_ALLOWANCE);
    const left = s.pending_batch_bytes;
    const sent = db.requests[0]!.length;
    db.otherwise = "ok";
    await clock.advanceAsync(2000); // the hung write times out; its rows, then the batch's, written
    s = writer.status();
    assert.equal(s.pending_batch, 0);
    assert.equal(s.pending_batch_bytes, 0);
    assert.equal(s.retry_buffer_depth, 0);
    const after = db.requests.slice(1).flat();
    assert.equal(after.length, sent + SETTINGS.batchSize + BATCH_HEALTH_ALLOWANCE);
    assert.equal(left, bodyBytes(after.slice(sent)));
  } finally {
    await writer.stop(0);
  }
});
