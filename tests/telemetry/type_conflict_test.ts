/**
 * A signal retyped by a rediscovery, against a database that enforces field types as InfluxDB
 * does (one type per field of a measurement; a write with conflicting lines stores the others and
 * answers 422 "partial write: field type conflict ... dropped=N", InfluxDB 2.x; 400 in 1.x).
 * VictoriaMetrics, the end-to-end database of the other tests, accepts mixed types, so this
 * database is a transport double that keeps InfluxDB's rule.
 *
 * The writer names the value field by its type (value_double, value_string, ...), so a retype
 * writes another field and never conflicts; a conflict that does happen (a field typed otherwise
 * by another writer of the bucket) costs only the conflicting rows, settles (no retry loop) and
 * stores every other row.
 */
import assert from "node:assert/strict";
import type { Logger } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import {
  MAX_ISOLATION_REQUESTS,
  partialWriteDropped,
  type TelemetryTransport,
  TelemetryWriter,
} from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { SETTINGS } from "./_scripted_db.ts";

const SILENT: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => SILENT,
};

/** The type of a line protocol field value as InfluxDB infers it. */
function fieldType(v: string): string {
  if (v.startsWith('"')) return "string";
  if (/^-?\d+i$/.test(v)) return "integer";
  if (/^\d+u$/.test(v)) return "unsigned";
  if (/^(t|f|true|false)$/i.test(v)) return "boolean";
  return "float";
}

/**
 * Stores lines per InfluxDB's field type rule (value_* fields are enough for signal rows). A line
 * sent again is the same point (same series and timestamp): stored once, as InfluxDB overwrites.
 */
class TypedDb implements TelemetryTransport {
  readonly schema = new Map<string, string>();
  readonly stored = new Set<string>();
  requests = 0;
  refusals = 0;
  request(_path: string, body: string): Promise<unknown> {
    this.requests++;
    let dropped = 0;
    let first = "";
    for (const line of body.trimEnd().split("\n")) {
      const measurement = line.slice(0, line.search(/[, ]/));
      const m = /[ ,](value_[a-z]+)=("(?:[^"\\]|\\.)*"|[^ ,]+)/.exec(line);
      if (m !== null) {
        const key = `${measurement}.${m[1]}`;
        const type = fieldType(m[2]!);
        const had = this.schema.get(key);
        if (had !== undefined && had !== type) {
          dropped++;
          first ||= `input field "${
            m[1]
          }" on measurement "${measurement}" is type ${type}, already exists as type ${had}`;
          continue;
        }
        this.schema.set(key, type);
      }
      this.stored.add(line);
    }
    if (dropped === 0) return Promise.resolve(undefined);
    this.refusals++;
    return Promise.reject({
      statusCode: 422,
      body: `{"code":"unprocessable entity","message":"partial write: field type conflict: ${
        first.replaceAll('"', '\\"')
      } dropped=${dropped}"}`,
    });
  }
}

function rig(db: TypedDb, batchSize = 8) {
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const bus = new EventBus();
  const writer = new TelemetryWriter({
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock,
    logger: SILENT,
    influx: { ...SETTINGS, batchSize },
    transport: db,
    tuning: { retryInitialMs: 100, retryMaxMs: 400, writeTimeoutMs: 2000, tickMs: 10 },
  });
  writer.start(bus);
  let t = 0;
  /** One poll: temp of probe0 (its value as given), and count of other0. */
  const poll = (temp: { type: "double"; double: number } | { type: "string"; string: string }) => {
    t++;
    bus.publish({
      kind: "state_update",
      provider_id: "p0",
      device_id: "probe0",
      signal_id: "temp",
      value: temp,
      quality: "OK",
      timestamp_ms: 1_760_000_000_000 + t,
    });
    bus.publish({
      kind: "state_update",
      provider_id: "p0",
      device_id: "other0",
      signal_id: "count",
      value: { type: "int64", int64: t },
      quality: "OK",
      timestamp_ms: 1_760_000_000_000 + t,
    });
  };
  return { clock, writer, poll };
}

const stored = (db: TypedDb, device: string) =>
  [...db.stored].filter((l) => l.includes(`device_id=${device}`));

Deno.test("a retyped signal writes another value field: InfluxDB's field type rule refuses nothing", async () => {
  const db = new TypedDb();
  const { clock, writer, poll } = rig(db);
  try {
    for (let i = 0; i < 6; i++) poll({ type: "double", double: 20 + i });
    await clock.advanceAsync(100);
    for (let i = 0; i < 6; i++) poll({ type: "string", string: `hot ${i}` });
    await clock.advanceAsync(100);
    assert.equal(db.refusals, 0, "no write refused");
    assert.equal(stored(db, "probe0").length, 12);
    assert.equal(stored(db, "other0").length, 12);
    assert.deepEqual(
      [...db.schema].filter(([k]) => k.endsWith("value_double") || k.endsWith("value_string")),
      [["runtime_signal.value_double", "float"], ["runtime_signal.value_string", "string"]],
    );
    const s = writer.status();
    assert.equal(s.total_written, 24);
    assert.equal(s.dropped_rejected, 0);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("a field typed otherwise by another writer: only its rows are dropped, the others stored, no retry loop", async () => {
  const db = new TypedDb();
  // Another writer of the bucket made value_string a float.
  db.schema.set("runtime_signal.value_string", "float");
  const { clock, writer, poll } = rig(db);
  try {
    for (let i = 0; i < 6; i++) poll({ type: "string", string: `hot ${i}` });
    await clock.advanceAsync(100);
    const requests = db.requests;
    assert.ok(db.refusals > 0, "the conflict was met");
    // Nothing more is sent once the rows are settled: no retry of the refused rows.
    await clock.advanceAsync(5_000);
    assert.equal(db.requests, requests, "the refused rows are not retried");
    assert.equal(stored(db, "probe0").length, 0);
    assert.equal(stored(db, "other0").length, 6, "every other row stored");
    const s = writer.status();
    assert.equal(s.dropped_rejected, 6);
    assert.equal(s.total_written, 6);
    assert.equal(s.retry_buffer_depth, 0);
    assert.ok(requests <= 2 * (1 + MAX_ISOLATION_REQUESTS), `${requests} requests`);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("a partial write's refused rows are counted as the database answers: the rows it stored count as written", async () => {
  const db = new TypedDb();
  db.schema.set("runtime_signal.value_string", "float");
  // One write of 200 rows, every other one conflicting: more than MAX_ISOLATION_REQUESTS can split.
  const { clock, writer, poll } = rig(db, 200);
  try {
    for (let i = 0; i < 100; i++) poll({ type: "string", string: `hot ${i}` });
    await clock.advanceAsync(100);
    await clock.advanceAsync(5_000);
    assert.equal(stored(db, "other0").length, 100, "InfluxDB stored every other row");
    const s = writer.status();
    assert.deepEqual(
      { written: s.total_written, rejected: s.dropped_rejected, retry: s.retry_buffer_depth },
      { written: 100, rejected: 100, retry: 0 },
      `the writer's counts (${db.requests} requests)`,
    );
  } finally {
    await writer.stop(0);
  }
});

Deno.test("partialWriteDropped reads InfluxDB 1.x and 2.x partial writes, nothing else", () => {
  assert.equal(
    partialWriteDropped(
      '{"error":"partial write: field type conflict: input field \\"v\\" on measurement \\"m\\" is type integer, already exists as type float dropped=1"}',
    ),
    1,
  );
  assert.equal(
    partialWriteDropped(
      '{"code":"unprocessable entity","message":"failure writing points to database: partial write: points beyond retention policy dropped=1224"}',
    ),
    1224,
  );
  assert.equal(
    partialWriteDropped('{"error":"unable to parse \'m v=\': missing field value"}'),
    null,
  );
  assert.equal(partialWriteDropped("status 400"), null);
});
