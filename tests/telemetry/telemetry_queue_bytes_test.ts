/**
 * The event queue and the retry buffer are bounded in bytes as well as in entries: a flood of
 * large string values (a 64 KiB string signal changing often) while the database is down or slow
 * holds at most MAX_QUEUE_BYTES in the queue and MAX_RETRY_BUFFER_BYTES in the retry buffer,
 * whatever `queue_size` and `max_retry_buffer_size` allow; every row dropped is counted and each
 * stretch of drops is said once. Ordinary rows still fill `queue_size` exactly. Against an
 * injected transport on one manual clock (_scripted_db.ts).
 */
import assert from "node:assert/strict";
import type { EventBus } from "../../src/events/mod.ts";
import {
  MAX_QUEUE_BYTES,
  MAX_RETRY_BUFFER_BYTES,
  QUEUE_EVENT_OVERHEAD_BYTES,
} from "../../src/telemetry/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { scriptedRig } from "./_scripted_db.ts";

const BIG = "x".repeat(64 * 1024);

/** Publishes `count` updates of a 64 KiB string signal (one string object, shared). */
function publishBig(bus: EventBus, from: number, count: number): void {
  for (let i = from; i < from + count; i++) {
    bus.publish({
      kind: "state_update",
      provider_id: "sim0",
      device_id: "blob0",
      signal_id: "text",
      value: { type: "string", string: BIG },
      quality: "OK",
      timestamp_ms: 1_760_000_000_000 + i,
    });
  }
}

Deno.test("TelemetryWriter holds at most MAX_QUEUE_BYTES of large string events in its queue, counting and saying the drops once", async () => {
  const { log, lines } = capturingLogger();
  const { bus, writer } = scriptedRig({ logger: log, influx: { queueSize: 10000 } });
  try {
    publishBig(bus, 0, 1000); // 64 MiB of strings, far below queue_size in events
    const s = writer.status();
    assert.ok(
      s.queue_depth * BIG.length <= MAX_QUEUE_BYTES,
      `queue holds ${s.queue_depth} events of 64 KiB, more than ${MAX_QUEUE_BYTES} bytes`,
    );
    // The byte bound, not a much smaller one: at least 99% of what fits.
    assert.ok(
      s.queue_depth >= Math.floor((MAX_QUEUE_BYTES / BIG.length) * 0.99),
      `${s.queue_depth}`,
    );
    assert.equal(s.dropped_events, 1000 - s.queue_depth);
    const full = lines.filter((l) => l.includes("queue full"));
    assert.equal(full.length, 1, lines.join("\n"));
    assert.match(full[0]!, /^WARN\b.*MAX_QUEUE_BYTES/);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter counts MAX_QUEUE_BYTES in UTF-8 bytes: events with non-ASCII tag and field values fill it at the bytes they are written as", async () => {
  const { writer, bus } = scriptedRig({ influx: { queueSize: 10000 } });
  const utf8 = (s: string) => new TextEncoder().encode(s).length;
  const DEVICE = "K\u00fchlraum-\u00c4\u00d6\u00dc"; // 2-byte characters in a tag value
  const SIGNAL = "\u6e29\u5ea6"; // 3-byte characters in a tag value
  const EUROS = "\u20ac".repeat(20_000); // a field value of 20,000 characters, 60,000 UTF-8 bytes
  const event = (i: number) => ({
    kind: "state_update" as const,
    provider_id: "sim0",
    device_id: DEVICE,
    signal_id: SIGNAL,
    value: { type: "string" as const, string: EUROS },
    quality: "OK" as const,
    timestamp_ms: 1_760_000_000_000 + i,
  });
  // What one event counts: the overhead and the UTF-8 bytes of its strings.
  const strings = ["state_update", "sim0", DEVICE, SIGNAL, "string", EUROS, "OK"];
  const perEvent = QUEUE_EVENT_OVERHEAD_BYTES + strings.reduce((n, s) => n + utf8(s), 0);
  assert.ok(perEvent > 60_000);
  const fit = Math.floor(MAX_QUEUE_BYTES / perEvent); // 278 events of about 60 KB
  try {
    for (let i = 0; i < 1000; i++) bus.publish(event(i)); // 60 MB: far below queue_size
    const s = writer.status();
    // The bound holds in bytes, exactly: one event more would pass it.
    assert.equal(s.queue_depth, fit, `queue holds ${s.queue_depth} events of ${perEvent} bytes`);
    assert.ok(s.queue_depth * perEvent <= MAX_QUEUE_BYTES);
    assert.ok((s.queue_depth + 1) * perEvent > MAX_QUEUE_BYTES);
    assert.equal(s.dropped_events, 1000 - fit);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter keeps queue_size ordinary events exactly: the byte bound changes nothing for them", async () => {
  const { writer, publish } = scriptedRig({ influx: { queueSize: 10000 } });
  try {
    publish(0, 10000);
    assert.equal(writer.status().queue_depth, 10000);
    assert.equal(writer.status().dropped_events, 0);
    publish(10000, 1);
    assert.equal(writer.status().queue_depth, 10000);
    assert.equal(writer.status().dropped_events, 1);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter holds at most MAX_RETRY_BUFFER_BYTES of large string rows in its retry buffer while the database is down", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, bus, writer } = scriptedRig({
    logger: log,
    influx: { maxRetryBufferSize: 100000, batchSize: 4 },
  });
  try {
    db.otherwise = 503;
    let published = 0;
    for (let i = 0; i < 50; i++) { // 400 rows of 64 KiB: 25 MiB
      publishBig(bus, published, 8);
      published += 8;
      await clock.advanceAsync(100);
    }
    const s = writer.status();
    assert.ok(
      s.retry_buffer_depth * BIG.length <= MAX_RETRY_BUFFER_BYTES,
      `retry buffer holds ${s.retry_buffer_depth} rows of 64 KiB, more than ${MAX_RETRY_BUFFER_BYTES} bytes`,
    );
    assert.ok(s.dropped_retry > 0, JSON.stringify(s));
    assert.equal(s.total_written, 0);
    assert.ok(s.total_failed >= s.dropped_retry, JSON.stringify(s));
    const full = lines.filter((l) => l.includes("retry buffer full"));
    assert.equal(full.length, 1, lines.join("\n"));
    assert.match(full[0]!, /^WARN\b.*MAX_RETRY_BUFFER_BYTES/);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter counts MAX_RETRY_BUFFER_BYTES in UTF-8 bytes: rows of 3-byte characters fill it at a third of the rows", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, bus, writer } = scriptedRig({
    logger: log,
    influx: { maxRetryBufferSize: 100000, batchSize: 4 },
  });
  const EUROS = "\u20ac".repeat(20_000); // 20,000 characters, 60,000 UTF-8 bytes
  try {
    db.otherwise = 503;
    for (let i = 0; i < 50; i++) { // 400 rows of about 60 KB: 24 MB, 8 M characters
      for (let j = 0; j < 8; j++) {
        bus.publish({
          kind: "state_update",
          provider_id: "sim0",
          device_id: "blob0",
          signal_id: "text",
          value: { type: "string", string: EUROS },
          quality: "OK",
          timestamp_ms: 1_760_000_000_000 + i * 8 + j,
        });
      }
      await clock.advanceAsync(100);
    }
    const s = writer.status();
    const utf8 = new TextEncoder().encode(EUROS).length;
    assert.equal(utf8, 60_000);
    assert.ok(
      s.retry_buffer_depth * utf8 <= MAX_RETRY_BUFFER_BYTES,
      `retry buffer holds ${s.retry_buffer_depth} rows of ${utf8} bytes, more than ${MAX_RETRY_BUFFER_BYTES}`,
    );
    // The byte bound, not a smaller one: rows of about 60,100 bytes, at least 99% of what fits.
    assert.ok(
      s.retry_buffer_depth >= Math.floor((MAX_RETRY_BUFFER_BYTES / 60_200) * 0.99),
      `${s.retry_buffer_depth}`,
    );
    assert.equal(s.dropped_retry, 400 - s.retry_buffer_depth - s.pending_batch);
    const full = lines.filter((l) => l.includes("retry buffer full"));
    assert.equal(full.length, 1, lines.join("\n"));
  } finally {
    await writer.stop(0);
  }
});
