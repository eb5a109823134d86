/**
 * A demo session with telemetry on, recorded: the shipped demo (examples/demo.yaml, loaded by the
 * real loader with `telemetry` and `alarms` sections appended, `measurement_names` included) plus a small
 * provider with int64, uint64 and bytes signals and reported health metrics
 * (tests/telemetry/_typed_provider.ts). The session arms, calls, changes a parameter, opens a run
 * with a marker, enters AUTO, e-stops and clears, re-arms, has the simulated provider killed and
 * restarted by its supervisor, and closes the run. Every line the writer sends is recorded on the
 * way to a real VictoriaMetrics (when installed; otherwise the recorder answers 204 itself), and
 * the database's series are exported at the end.
 *
 * Also here: the row shapes (docs/telemetry.md, "Rows: tags and fields") and a checker that
 * compares every recorded row with them.
 */
import { loadConfig, type MeasurementNaming } from "../../src/config/mod.ts";
import type { Config } from "../../src/config/mod.ts";
import { MEASUREMENT_NAMES, type MeasurementNames } from "../../src/telemetry/mod.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { REPO } from "../helpers/sim_config.ts";
import {
  type ExportedSeries,
  LineRecorder,
  VictoriaMetrics,
  victoriaMetricsMissing,
} from "../helpers/victoria_metrics.ts";
import { type ParsedField, type ParsedLine, parseLine } from "../telemetry/line_protocol_check.ts";
import { cached } from "./automation_helpers.ts";

const DEMO = `${REPO}examples/demo.yaml`;
const TYPED_PROVIDER = `${REPO}tests/telemetry/_typed_provider.ts`;

/** What one session wrote. */
export interface Recording {
  readonly naming: MeasurementNaming;
  /** Every line sent, in order. */
  readonly lines: readonly string[];
  /** The same lines, parsed. */
  readonly rows: readonly ParsedLine[];
  /** Every series the database holds afterwards; null when VictoriaMetrics is not installed. */
  readonly series: readonly ExportedSeries[] | null;
  /** Telemetry status after the final flush. */
  readonly totalWritten: number;
  readonly totalFailed: number;
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}

/**
 * examples/demo.yaml with telemetry to `url` and an alarm that only a lost input raises (the
 * session kills sim0: raise, then clear once it is back), through the real loader; then
 * test-speed knobs.
 */
function demoConfig(naming: MeasurementNaming, url: string, dataDir: string): Config {
  const yaml = `${Deno.readTextFileSync(DEMO)}
alarms:
  - id: tc1_lost
    signal: sim0/tempctl0/tc1_temp
    hi: 1000
telemetry:
  enabled: true
  health_interval_ms: 300
  measurement_names: ${naming}
  influxdb:
    url: ${url}
    token: t0ken
    batch_size: 50
    flush_interval_ms: 100
`;
  const { config, diagnostics } = loadConfig(yaml, {
    path: DEMO,
    mode: "start",
    env: {},
    fileExists: isFile,
    commandExists: () => true,
    cwd: REPO,
  });
  if (!config || diagnostics.length > 0) {
    throw new Error(`demo config: ${JSON.stringify(diagnostics)}`);
  }
  const typed = {
    ...config.providers[0]!,
    id: "typed0",
    command: Deno.execPath(),
    args: ["run", "--quiet", "--allow-read", "--allow-env", TYPED_PROVIDER],
    restartPolicy: { ...config.providers[0]!.restartPolicy, enabled: false },
  };
  return {
    ...config,
    runtime: { ...config.runtime, dataDir },
    http: { ...config.http, enabled: false },
    polling: { intervalMs: 100 },
    providers: [...config.providers, typed!],
  };
}

/** Runs the session with `measurement_names: naming` and returns what was written. */
export async function recordDemoSession(naming: MeasurementNaming): Promise<Recording> {
  const db = victoriaMetricsMissing() ? null : await VictoriaMetrics.start();
  const recorder = new LineRecorder(db?.url ?? null);
  const dataDir = await Deno.makeTempDir({ prefix: "runtime-dash-" });
  try {
    const service = await startServing(demoConfig(naming, recorder.url, dataDir));
    let stopped = false;
    try {
      const rt = service;
      await rt.modes.request("MANUAL");
      await rt.router.call({
        providerId: "sim0",
        deviceId: "relayio0",
        functionName: "set_relay_ch1",
        args: { enabled: { type: "bool", bool: true } },
        origin: "manual",
      });
      await rt.router.call({
        providerId: "sim0",
        deviceId: "motorctl0",
        functionName: "set_motor_duty",
        args: { motor_index: { type: "int64", int64: 2 }, duty: { type: "double", double: 0.25 } },
        origin: "manual",
      });
      rt.parameters!.set("target_temp", 45);
      const { run } = await service.runs.open({ experiment_label: "dashboards" });
      await service.runs.addMarker(run.run_id, {
        type: "sample_taken",
        payload: { vial: 3, note: "after heating" },
      });
      await rt.modes.request("AUTO");
      await waitFor(
        "the tree heats in closed-loop mode",
        () => cached(rt, "sim0/tempctl0", "control_mode") === "closed",
      );
      await rt.estop.trigger("dashboards demo");
      rt.estop.clear();
      await rt.modes.request("MANUAL");

      const host = rt.registry.host("sim0")!;
      const pid = host.session!.pid;
      const killedAt = Date.now();
      Deno.kill(pid, "SIGKILL");
      await waitFor("sim0 restarted", () => host.available && host.session!.pid !== pid);
      await waitFor(
        "two health snapshots after the restart",
        () => (service.telemetry.status().last_health_snapshot_at_epoch_ms ?? 0) > killedAt + 700,
      );
      await service.runs.close(run.run_id, {});
      await service.stop();
      stopped = true;
      const status = service.telemetry.status();
      const lines = [...recorder.lines];
      return {
        naming,
        lines,
        rows: lines.map(parseLine),
        series: db ? await db.export('{__name__=~".+"}') : null,
        totalWritten: status.total_written,
        totalFailed: status.total_failed,
      };
    } finally {
      if (!stopped) await service.stop();
    }
  } finally {
    await recorder.close();
    await db?.dispose();
    await Deno.remove(dataDir, { recursive: true });
  }
}

// ---- the row shapes (docs/telemetry.md, "Rows: tags and fields") --------------------------

type FieldType = ParsedField["type"];

/** The shape of one kind of row: tags in order, fields that must and may be there. */
interface RowShape {
  readonly tags: readonly string[];
  readonly required: Readonly<Record<string, FieldType>>;
  readonly optional: Readonly<Record<string, FieldType>>;
  /** Allowed values of string fields. */
  readonly values?: Readonly<Record<string, readonly string[]>>;
  /** Extra rule; returns a problem or null. */
  readonly rule?: (row: ParsedLine) => string | null;
}

const MODES = ["IDLE", "MANUAL", "AUTO", "FAULT"];
const VALUE_FIELDS: Record<string, FieldType> = {
  value_double: "float",
  value_int: "int",
  value_uint: "uint",
  value_bool: "bool",
  value_string: "string",
};
const STALENESS = ["staleness_ms", "stale_signal_count", "fault_signal_count"];

/** The rows of docs/telemetry.md, "Rows: tags and fields" and "Alarm rows", by kind of row. */
export const ROW_SHAPES: Readonly<Record<keyof MeasurementNames, RowShape>> = {
  signal: {
    tags: ["runtime_name", "provider_id", "device_id", "signal_id"],
    required: { quality: "string" },
    optional: VALUE_FIELDS,
    values: { quality: ["OK", "STALE", "UNAVAILABLE", "FAULT"] },
    rule: (row) => {
      const n = row.fields.filter(([k]) => k in VALUE_FIELDS).length;
      return n > 1 ? `${n} value fields` : null;
    },
  },
  modeChange: {
    tags: [],
    required: { previous_mode: "string", new_mode: "string" },
    optional: {},
    values: { previous_mode: MODES, new_mode: MODES },
  },
  parameterChange: {
    tags: ["parameter_name"],
    required: { old_value: "string", new_value: "string" },
    optional: {},
  },
  providerHealth: {
    tags: ["runtime_name", "provider_id"],
    required: {
      state: "string",
      lifecycle_state: "string",
      degraded: "bool",
      failed_device_count: "int",
      device_count: "int",
      uptime_seconds: "int",
      supervision_enabled: "bool",
      crash_detected: "bool",
      circuit_open: "bool",
      attempt_count: "int",
    },
    optional: {
      startup_configured_devices: "int",
      startup_initialized_devices: "int",
      startup_failed_devices: "int",
    },
    values: {
      state: ["AVAILABLE", "UNAVAILABLE"],
      lifecycle_state: ["RUNNING", "RECOVERING", "RESTARTING", "CIRCUIT_OPEN", "DOWN"],
    },
  },
  deviceHealth: {
    tags: ["runtime_name", "provider_id", "device_id"],
    required: { health: "string", registered: "bool" },
    optional: {
      staleness_ms: "int",
      stale_signal_count: "int",
      fault_signal_count: "int",
      type_version: "string",
      io_ok: "int",
      io_failed: "int",
      io_retried_attempts: "int",
      watchdog_timeout_ms: "int",
      watchdog_trip_count: "int",
      sample_success_count: "int",
      sample_failure_count: "int",
      call_success_count: "int",
      call_failure_count: "int",
      watchdog_armed: "bool",
      watchdog_tripped: "bool",
      missing: "bool",
      excluded: "bool",
      startup_firmware: "string",
      startup_product_code: "string",
      firmware_version: "string",
    },
    values: { health: ["OK", "WARNING", "STALE", "FAULT", "UNAVAILABLE", "UNKNOWN"] },
    rule: (row) => {
      const n = row.fields.filter(([k]) => STALENESS.includes(k)).length;
      return n === 0 || n === STALENESS.length ? null : "staleness fields only partly present";
    },
  },
  runEvent: {
    tags: ["runtime_name", "category"],
    required: { run_id: "string", type: "string", sequence: "int" },
    optional: {
      experiment_label: "string",
      payload: "string",
      payload_truncated: "bool",
      payload_error: "string",
    },
    values: {},
    rule: (row) => {
      const category = row.tags.find(([k]) => k === "category")?.[1] ?? "";
      return ["run_opened", "run_closed", "annotation"].includes(category)
        ? null
        : `category ${category}`;
    },
  },
  alarm: {
    tags: ["runtime_name", "alarm_id", "transition"],
    required: {
      state: "string",
      level: "string",
      cause: "string",
      signal: "string",
      quality: "string",
    },
    optional: { limit: "float", limit_text: "string", ...VALUE_FIELDS },
    values: {
      state: ["normal", "active", "active_acked", "shelved"],
      level: ["", "MINOR", "MAJOR"],
      cause: ["", "hihi", "hi", "lo", "lolo", "alarm_when", "bad_quality"],
    },
    rule: (row) => {
      const t = row.tags.find(([k]) => k === "transition")?.[1] ?? "";
      return ["raise", "clear", "ack", "shelve", "unshelve"].includes(t) ? null : `transition ${t}`;
    },
  },
};

/** The kind of row a measurement name stands for under `names`, or null. */
export function kindOf(
  names: MeasurementNames,
  measurement: string,
): keyof MeasurementNames | null {
  const hit = Object.entries(names).find(([, name]) => name === measurement);
  return hit ? hit[0] as keyof MeasurementNames : null;
}

/** Every way `row` differs from its kind's shape under `naming` (empty when it conforms). */
export function shapeProblems(naming: MeasurementNaming, row: ParsedLine): string[] {
  const kind = kindOf(MEASUREMENT_NAMES[naming], row.measurement);
  if (kind === null) return [`measurement ${row.measurement} is not written under ${naming}`];
  const shape = ROW_SHAPES[kind];
  const problems: string[] = [];
  const tags = row.tags.map(([k]) => k);
  if (tags.join(",") !== shape.tags.join(",")) {
    problems.push(`tags ${tags.join(",")} instead of ${shape.tags.join(",")}`);
  }
  const seen = new Set<string>();
  for (const [key, value] of row.fields) {
    if (seen.has(key)) problems.push(`field ${key} twice`);
    seen.add(key);
    const type = shape.required[key] ?? shape.optional[key];
    if (type === undefined) problems.push(`unexpected field ${key}`);
    else if (type !== value.type) problems.push(`field ${key} is ${value.type}, not ${type}`);
    const allowed = shape.values?.[key];
    if (allowed && !allowed.includes(String(value.value))) {
      problems.push(`field ${key} = ${String(value.value)}`);
    }
  }
  for (const key of Object.keys(shape.required)) {
    if (!seen.has(key)) problems.push(`missing field ${key}`);
  }
  const extra = shape.rule?.(row);
  if (extra) problems.push(extra);
  if (row.timestamp === null) problems.push("no timestamp");
  return problems;
}

/** The rows of one measurement. */
export function rowsOf(rec: Recording, measurement: string): ParsedLine[] {
  return rec.rows.filter((r) => r.measurement === measurement);
}

/** A field of a row, or undefined. */
export function fieldOf(row: ParsedLine, key: string): ParsedField | undefined {
  return row.fields.find(([k]) => k === key)?.[1];
}

/** A tag of a row, or undefined. */
export function tagOf(row: ParsedLine, key: string): string | undefined {
  return row.tags.find(([k]) => k === key)?.[1];
}
