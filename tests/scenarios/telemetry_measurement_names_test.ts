/**
 * telemetry.measurement_names (docs/telemetry.md), driven through a whole demo session (arm, calls,
 * a parameter change, a run with a marker, AUTO, e-stop and clear, a provider killed and restarted)
 * with each setting: every row the writer sends has the tags and typed fields under that setting's
 * measurement names, and the database (VictoriaMetrics, when installed) holds every one of them
 * under those names with those tags.
 */
import assert from "node:assert/strict";
import type { MeasurementNaming } from "../../src/config/mod.ts";
import { MEASUREMENT_NAMES } from "../../src/telemetry/mod.ts";
import type { ExportedSeries } from "../helpers/victoria_metrics.ts";
import {
  fieldOf,
  recordDemoSession,
  type Recording,
  rowsOf,
  shapeProblems,
  tagOf,
} from "./telemetry_session.ts";

/** Fields the session's providers make the health rows carry (besides the ones always there). */
const REPORTED_DEVICE_FIELDS = [
  "staleness_ms",
  "stale_signal_count",
  "fault_signal_count",
  "type_version",
  "io_ok",
  "io_failed",
  "io_retried_attempts",
  "watchdog_timeout_ms",
  "watchdog_trip_count",
  "watchdog_armed",
  "watchdog_tripped",
  "firmware_version",
];

function assertRowsMatchTheContract(rec: Recording): void {
  const names = MEASUREMENT_NAMES[rec.naming];
  assert.equal(rec.totalFailed, 0, "no row was refused or lost");
  assert.equal(rec.totalWritten, rec.lines.length);

  // Every kind of row, under this setting's names and no other.
  assert.deepEqual(
    [...new Set(rec.rows.map((r) => r.measurement))].sort(),
    [...new Set(Object.values(names))].sort(),
  );
  const problems = rec.rows.flatMap((row, i) =>
    shapeProblems(rec.naming, row).map((p) => `${p}: ${rec.lines[i]}`)
  );
  assert.deepEqual(problems, []);

  // Every value type and every reported health field really occurred (the check above covered them).
  const signalFields = new Set(rowsOf(rec, names.signal).flatMap((r) => r.fields.map(([k]) => k)));
  assert.deepEqual(
    [...signalFields].sort(),
    ["quality", "value_bool", "value_double", "value_int", "value_string", "value_uint"],
  );
  const deviceFields = new Set(
    rowsOf(rec, names.deviceHealth).flatMap((r) => r.fields.map(([k]) => k)),
  );
  for (const f of REPORTED_DEVICE_FIELDS) assert.ok(deviceFields.has(f), `device field ${f}`);
  const providerRows = rowsOf(rec, names.providerHealth);
  assert.ok(providerRows.some((r) => fieldOf(r, "startup_configured_devices") !== undefined));
  assert.ok(
    providerRows.some((r) =>
      tagOf(r, "provider_id") === "sim0" && (fieldOf(r, "attempt_count")?.value as bigint) >= 1n
    ),
    "a snapshot saw the killed provider restarting or recovering",
  );
  const modes = rowsOf(rec, names.modeChange).map((r) =>
    `${fieldOf(r, "previous_mode")?.value}->${fieldOf(r, "new_mode")?.value}`
  );
  assert.deepEqual(modes, ["IDLE->MANUAL", "MANUAL->AUTO", "AUTO->FAULT", "FAULT->MANUAL"]);
  assert.equal(rowsOf(rec, names.parameterChange).length, 1);
  assert.deepEqual(
    rowsOf(rec, names.runEvent).map((r) => tagOf(r, "category")),
    ["run_opened", "annotation", "run_closed"],
  );
  // sim0 killed: its temperature alarm raised on the lost input, and cleared once sim0 was back.
  assert.deepEqual(
    rowsOf(rec, names.alarm).map((r) =>
      `${tagOf(r, "transition")} ${fieldOf(r, "cause")?.value} ${fieldOf(r, "quality")?.value}`
    ),
    ["raise bad_quality UNAVAILABLE", "clear  OK"],
  );

  // The sim's chaos_control has no signals: like later anolis, a row per snapshot that knows the
  // device, never polled, so UNKNOWN without staleness fields.
  const chaos = rowsOf(rec, names.deviceHealth).filter((r) =>
    tagOf(r, "device_id") === "chaos_control"
  );
  const sim0Snapshots = providerRows.filter((r) =>
    tagOf(r, "provider_id") === "sim0" && fieldOf(r, "device_count")?.value === 5n
  );
  assert.ok(chaos.length > 0);
  assert.equal(chaos.length, sim0Snapshots.length);
  for (const row of chaos) {
    assert.deepEqual(row.fields, [
      ["health", { type: "string", value: "UNKNOWN" }],
      ["registered", { type: "bool", value: true }],
      ["type_version", { type: "string", value: "1.0" }],
    ]);
  }

  // Bytes are written as base64 (anolis writes the raw bytes), doubles at full precision.
  const frames = rowsOf(rec, names.signal).filter((r) => tagOf(r, "signal_id") === "frame");
  assert.ok(frames.length > 0);
  for (const row of frames) {
    const text = fieldOf(row, "value_string")?.value as string;
    const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    assert.deepEqual([...bytes.slice(0, 2)], [0, 0xff], text);
    assert.equal(bytes.length, 3);
  }
  const voltages = rec.lines.filter((l) => /signal_id=voltage_ch\d value_double=/.test(l));
  assert.ok(
    voltages.some((l) => /value_double=-?\d+\.\d{7,}/.test(l)),
    "doubles carry more than 6 significant digits",
  );
}

/** Every field of every row is in the database, under `measurement_field`, with the row's tags. */
function assertDatabaseHoldsEveryRow(rec: Recording, series: readonly ExportedSeries[]): void {
  const byKey = new Map<string, ExportedSeries>();
  for (const s of series) {
    const { __name__, ...labels } = s.metric;
    byKey.set(`${__name__}${JSON.stringify(Object.entries(labels).sort())}`, s);
  }
  const problems: string[] = [];
  rec.rows.forEach((row, i) => {
    const labels = JSON.stringify([...row.tags].sort());
    for (const [key, value] of row.fields) {
      const name = `${row.measurement}_${key}`;
      const s = byKey.get(`${name}${labels}`);
      if (!s) {
        problems.push(`no series ${name} ${labels} for ${rec.lines[i]}`);
        continue;
      }
      const at = s.timestamps.indexOf(Number(row.timestamp));
      if (at < 0) {
        problems.push(`${name} ${labels} has no sample at ${row.timestamp}`);
        continue;
      }
      const expected = value.type === "bool"
        ? (value.value ? 1 : 0)
        : value.type === "string"
        ? null // VictoriaMetrics keeps a string field's series, not its text
        : Number(value.value);
      const sameInstant = rec.rows.filter((r) =>
        r.measurement === row.measurement && r.timestamp === row.timestamp &&
        JSON.stringify([...r.tags].sort()) === labels
      );
      // VictoriaMetrics keeps 12 significant digits of a double (its storage format).
      const close = expected === null || value.type !== "float"
        ? s.values[at] === expected
        : Math.abs(s.values[at]! - expected) <= 1e-11 * Math.max(1, Math.abs(expected));
      if (expected !== null && sameInstant.length === 1 && !close) {
        problems.push(`${name} ${labels} at ${row.timestamp}: ${s.values[at]} != ${expected}`);
      }
    }
  });
  assert.deepEqual(problems, []);
  // Nothing else arrived: every series comes from a recorded row.
  const written = new Set(
    rec.rows.flatMap((r) => r.fields.map(([k]) => `${r.measurement}_${k}`)),
  );
  assert.deepEqual(series.map((s) => s.metric.__name__).filter((n) => !written.has(n!)), []);
}

async function assertSession(naming: MeasurementNaming): Promise<void> {
  const rec = await recordDemoSession(naming);
  assertRowsMatchTheContract(rec);
  if (rec.series !== null) assertDatabaseHoldsEveryRow(rec, rec.series);
}

Deno.test("measurement_names runtime: every row of a demo session has the contract's tags and typed fields under runtime names, and the database holds it", async () => {
  await assertSession("runtime");
});

Deno.test("measurement_names anolis: every row of a demo session has the contract's tags and typed fields under anolis names, and the database holds it", async () => {
  await assertSession("anolis");
});
