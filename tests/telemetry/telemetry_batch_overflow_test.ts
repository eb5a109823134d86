/**
 * Rows dropped from a batch past its hard cap (batch_size + BATCH_HEALTH_ALLOWANCE: health
 * snapshots are appended to the batch directly, and pile up while a write hangs) are counted in
 * their own status counter, `dropped_overflow`, as well as in `total_failed`. Against an injected
 * transport on one manual clock (_scripted_db.ts).
 */
import assert from "node:assert/strict";
import type { ProviderHealthView } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { BATCH_HEALTH_ALLOWANCE, TelemetryWriter } from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { deviceHealthView, providerHealthView, ScriptedDb, SETTINGS } from "./_scripted_db.ts";

/** Devices of the one provider of each health snapshot: a snapshot is this + 1 rows. */
const DEVICES = 6000;

function snapshot(): ProviderHealthView[] {
  return [
    providerHealthView({
      device_count: DEVICES,
      devices: Array.from({ length: DEVICES }, (_, i) => deviceHealthView(`dev${i}`)),
    }),
  ];
}

Deno.test("TelemetryWriter counts rows dropped from a batch past batch_size + BATCH_HEALTH_ALLOWANCE in dropped_overflow (and total_failed)", async () => {
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const db = new ScriptedDb();
  db.otherwise = "hang"; // no write ever ends: the batch only grows
  const { log, lines } = capturingLogger();
  const writer = new TelemetryWriter({
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 100,
    healthSnapshot: () => Promise.resolve(snapshot()),
    clock,
    logger: log,
    influx: SETTINGS, // batch_size 4
    transport: db,
    tuning: { writeTimeoutMs: 60_000, tickMs: 10 },
  });
  writer.start(new EventBus());
  try {
    const rows = DEVICES + 1;
    const cap = SETTINGS.batchSize + BATCH_HEALTH_ALLOWANCE;
    await clock.advanceAsync(100); // snapshot 1: written at once (its first MAX_WRITE_BYTES), hangs
    assert.equal(db.requests.length, 1);
    const sent = db.requests[0]!.length; // the rest of snapshot 1 stays in the batch
    assert.ok(sent > 0 && sent <= rows, `${sent} rows in the first write`);
    assert.equal(writer.status().pending_batch, rows - sent);
    await clock.advanceAsync(100); // snapshot 2: in the batch
    assert.equal(writer.status().pending_batch, 2 * rows - sent);
    assert.equal(writer.status().dropped_overflow, 0);
    await clock.advanceAsync(100); // snapshot 3: the batch passes its cap
    const s = writer.status();
    const over = 3 * rows - sent - cap;
    assert.ok(over > 0);
    assert.equal(s.pending_batch, cap);
    assert.equal(s.dropped_overflow, over);
    assert.equal(s.total_failed, over);
    const said = lines.filter((l) => l.includes("batch overflow"));
    assert.equal(said.length, 1, lines.join("\n"));
    assert.match(said[0]!, new RegExp(`^ERROR\\b.*batch overflow: ${over} oldest rows`));
    assert.match(said[0]!, /dropped_overflow/);
  } finally {
    const stopping = writer.stop(0); // the hung write is aborted at once (on the manual clock)
    await clock.advanceAsync(1);
    await stopping;
  }
});
