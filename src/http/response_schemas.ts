/**
 * The response schemas of GET /v0/openapi.json (`components.schemas`), by name. The names and
 * the `required` lists of anolis's runtime-http.openapi.v0.yaml are kept (our `required` lists
 * only add members: every member an answer always carries, tests/http/openapi_required_test.ts),
 * so an anolis client reads our answers; objects stay open (`additionalProperties` is not false)
 * and the members we add are listed with a description.
 * Built on demand (only by openapi.ts, loaded when the document is first asked for).
 */
import { VALUE_TYPES } from "../common/mod.ts";
import { RUNTIME_MODES } from "../config/mod.ts";
import { AUDIT_ACTIONS, AUDIT_ORIGIN_KINDS, SUPERSEDED_REASON_CHARS } from "../control/mod.ts";
import {
  HISTORY_INCOMPLETE,
  HISTORY_QUERY_DISK_WAIT_MS,
  INCIDENT_UNIT_MAX_CHARS,
  MAX_UNIT_CHANGES,
} from "../history/mod.ts";
import { CLIENT_CLOSE_REASONS } from "../runs/mod.ts";
import type { JsonSchema } from "./request_schemas.ts";

/** Every status code an answer can carry (`PERMISSION_DENIED`: the request policy's 403). */
export const STATUS_CODES = [
  "OK",
  "INVALID_ARGUMENT",
  "UNAUTHENTICATED",
  "PERMISSION_DENIED",
  "NOT_FOUND",
  "FAILED_PRECONDITION",
  "RESOURCE_EXHAUSTED",
  "INTERNAL",
  "UNAVAILABLE",
  "DEADLINE_EXCEEDED",
] as const;

const str: JsonSchema = { type: "string" };
const int: JsonSchema = { type: "integer" };
const num: JsonSchema = { type: "number" };
const bool: JsonSchema = { type: "boolean" };
const orNull = (s: JsonSchema): JsonSchema => ({ oneOf: [s, { type: "null" }] });
const arr = (items: JsonSchema): JsonSchema => ({ type: "array", items });
const ref = (name: string): JsonSchema => ({ $ref: `#/components/schemas/${name}` });
const strMap: JsonSchema = { type: "object", additionalProperties: str };
/** Where an incident trigger's own time lies outside its record's window (OutsideWindow). */
const OUTSIDE_WINDOW: JsonSchema = { enum: ["before", "after"] };
const obj = (
  required: readonly string[],
  properties: Record<string, JsonSchema>,
  description?: string,
): JsonSchema => ({
  type: "object",
  ...(description ? { description } : {}),
  required: [...required],
  properties,
});
/** A success body: `status` plus the members. */
const ok = (
  required: readonly string[],
  properties: Record<string, JsonSchema>,
  description?: string,
): JsonSchema =>
  obj(["status", ...required], { status: ref("Status"), ...properties }, description);
const note = (s: JsonSchema, description: string): JsonSchema => ({ ...s, description });

const QUALITY: JsonSchema = { enum: ["OK", "STALE", "UNAVAILABLE", "FAULT"] };
const RUNG: JsonSchema = { enum: ["none", "hooks", "setpoints", "zero"] };
const SCALAR: JsonSchema = { type: ["number", "boolean", "string"] };

/** `components.schemas` of the document. */
export function responseComponents(): Record<string, JsonSchema> {
  return {
    Status: obj(["code", "message"], {
      code: { enum: [...STATUS_CODES] },
      message: str,
    }),
    ErrorResponse: {
      ...obj(["status"], { status: ref("Status") }),
      description: "Every error: exactly `{status: {code, message}}`.",
    },
    UnauthorizedResponse: obj(
      ["status", "error"],
      { status: ref("Status"), error: { const: "unauthorized" } },
      "401: anolis's `{error}` plus our `status` (every JSON body carries `status`).",
    ),
    RuntimeMode: { enum: [...RUNTIME_MODES] },
    TypedValue: {
      type: "object",
      description: "A typed value `{type, <member>}`. int64/uint64 are exact decimal numbers " +
        "(also beyond \u00b12^53); a non-finite double is `double: null` with `non_finite`; a signal " +
        'that never had a value is `{"type":"unknown"}`.',
      required: ["type"],
      properties: {
        type: { enum: [...VALUE_TYPES, "unknown"] },
        double: { type: ["number", "null"] },
        non_finite: { enum: ["NaN", "Infinity", "-Infinity"] },
        int64: int,
        uint64: { type: "integer", minimum: 0 },
        bool,
        string: str,
        base64: str,
      },
    },
    FunctionRef: obj(["device_handle", "function"], { device_handle: str, function: str }),
    HookFailure: obj(
      ["transition", "phase", "hook", "device_handle", "function", "error"],
      {
        transition: str,
        phase: { enum: ["before", "after"] },
        hook: str,
        device_handle: str,
        function: str,
        error: str,
      },
      "A failed call of a mode-transition hook (project addition).",
    ),
    Verification: obj(["outcome", "elapsed_ms", "checks"], {
      outcome: { enum: ["verified", "mismatch", "unreachable", "unverifiable"] },
      elapsed_ms: int,
      checks: arr(obj(["signal", "expected", "observed", "quality", "outcome"], {
        signal: str,
        expected: { type: "object" },
        observed: orNull(ref("TypedValue")),
        quality: orNull(QUALITY),
        outcome: { enum: ["verified", "mismatch", "unreachable"] },
        reason: str,
        device_available: note(
          bool,
          "Status only (estop.verification): whether the check's device can be read now; " +
            "`outcome` stays what was read back at the time (project addition).",
        ),
        device_unavailable_reason: note(
          str,
          "Status only, when device_available is false: why (`down: provider sim1 is ...`).",
        ),
      })),
    }, "The safe state read back after an e-stop (project addition)."),
    EstopStatus: obj(
      [
        "latched",
        "software_safe_state",
        "latched_at_epoch_ms",
        "uncovered_actuating_functions",
        // Project additions, in every status (plan_failed alone is only there when it says so).
        "cause",
        "cause_alarm_retired",
        "plan",
        "unverified_devices",
        "unverified_reasons",
        "verification",
      ],
      {
        latched: bool,
        software_safe_state: RUNG,
        latched_at_epoch_ms: { type: ["integer", "null"] },
        uncovered_actuating_functions: int,
        cause: note({ type: ["string", "null"] }, "`api` or `alarm:<id>`; null while released."),
        cause_alarm_retired: note(
          { enum: ["removed", "changed", null] },
          "A reload since the latch took out the alarm of an `alarm:<id>` cause: `removed` " +
            "(GET /v0/alarms/<id> answers 404) or `changed` (that id is now another alarm); " +
            "null otherwise (project addition).",
        ),
        plan: obj(["rung", "calls", "uncovered"], {
          rung: RUNG,
          calls: arr(obj(["device_handle", "function", "args"], {
            device_handle: str,
            function: str,
            args: { type: "object", additionalProperties: ref("TypedValue") },
          })),
          uncovered: arr(ref("FunctionRef")),
        }),
        plan_failed: note(
          str,
          "Present only when the plan could not be made (the device inventory failed): why; " +
            "`plan` is then what a stop would run without the devices.",
        ),
        unverified_devices: note(
          arr(str),
          "Devices an e-stop cannot verify: actuating devices no expectation covers, then " +
            "devices the ladder is to secure (called, named by a safety call, or listed before) " +
            "that no provider lists and no expectation covers.",
        ),
        unverified_reasons: note(
          arr(obj(["device_handle", "reason"], { device_handle: str, reason: str })),
          "Each of unverified_devices, in the same order, with why (project addition).",
        ),
        verification: orNull(ref("Verification")),
      },
    ),
    RuntimeStatusResponse: ok(
      [
        "version",
        "mode",
        "uptime_seconds",
        "polling_interval_ms",
        "providers",
        "runtime_name",
        "device_count",
        "estop",
        "runs",
      ],
      {
        version: str,
        runtime_name: note(str, 'runtime.name (project addition; "" when none).'),
        mode: ref("RuntimeMode"),
        uptime_seconds: int,
        polling_interval_ms: int,
        providers: arr(obj(["provider_id", "state", "device_count"], {
          provider_id: str,
          state: { enum: ["AVAILABLE", "UNAVAILABLE"] },
          device_count: int,
        })),
        device_count: int,
        estop: ref("EstopStatus"),
        runs: note(
          obj(
            ["available", "unavailable_reason", "open_run_id", "run_count", "dropped_bus_events"],
            {
              available: bool,
              unavailable_reason: orNull(str),
              open_run_id: orNull(str),
              run_count: int,
              dropped_bus_events: int,
            },
          ),
          "The run registry (project addition): `available` false while its start failed and " +
            "waits for a retry (the runs API answers 503), `unavailable_reason` says why.",
        ),
      },
    ),
    ProviderDeviceHealth: obj(
      [
        "device_id",
        "health",
        "last_poll_ms",
        "staleness_ms",
        "registered",
        "stale_signal_count",
        "fault_signal_count",
        "type_version",
        "descriptor_tags",
        "reported",
        "claims",
      ],
      {
        device_id: str,
        health: { enum: ["OK", "WARNING", "STALE", "FAULT", "UNAVAILABLE", "UNKNOWN"] },
        last_poll_ms: int,
        staleness_ms: int,
        registered: bool,
        stale_signal_count: { type: "integer", minimum: 0 },
        fault_signal_count: { type: "integer", minimum: 0 },
        type_version: str,
        descriptor_tags: {
          type: "object",
          maxProperties: 32,
          propertyNames: { maxLength: 128 },
          additionalProperties: { type: "string" },
        },
        claims: note(
          arr(str),
          "The resources the device holds exclusively: its anolis.claim keys, then the key its " +
            "hw.bus_path + hw.i2c_address tags stand for (project addition).",
        ),
        poll_period_ms: note(
          { type: "integer", minimum: 1 },
          "How often the runtime polls the device: polling.interval_ms, or a multiple of it when " +
            "its signals hint slower polls or allow it by their stale bounds. Absent for devices " +
            "only the provider reports (project addition).",
        ),
        reported: orNull(obj(["state", "message", "metrics", "last_seen_epoch_ms"], {
          state: {
            enum: [
              "STATE_UNSPECIFIED",
              "STATE_OK",
              "STATE_STALE",
              "STATE_UNREACHABLE",
              "STATE_FAULT",
            ],
          },
          message: str,
          metrics: strMap,
          last_seen_epoch_ms: orNull(int),
        })),
      },
    ),
    ProviderHealth: obj(
      [
        "provider_id",
        "state",
        "lifecycle_state",
        "last_seen_ago_ms",
        "uptime_seconds",
        "device_count",
        "degraded",
        "failed_device_count",
        "reported",
        "supervision",
        "devices",
        "discovery_warnings",
        "held_claims",
        "host_check",
        "start_error",
        "data_faults",
        "timestamp_skew",
      ],
      {
        provider_id: str,
        state: { enum: ["AVAILABLE", "UNAVAILABLE"] },
        lifecycle_state: {
          enum: ["RUNNING", "RECOVERING", "RESTARTING", "CIRCUIT_OPEN", "DOWN"],
        },
        last_seen_ago_ms: orNull(int),
        uptime_seconds: int,
        device_count: int,
        degraded: bool,
        failed_device_count: int,
        reported: orNull(obj(["state", "message", "metrics"], {
          state: { enum: ["STATE_UNSPECIFIED", "STATE_OK", "STATE_DEGRADED", "STATE_FAULT"] },
          message: str,
          metrics: strMap,
        })),
        supervision: obj(
          [
            "enabled",
            "attempt_count",
            "max_attempts",
            "crash_detected",
            "circuit_open",
            "next_restart_in_ms",
          ],
          {
            enabled: bool,
            attempt_count: int,
            max_attempts: int,
            crash_detected: bool,
            circuit_open: bool,
            next_restart_in_ms: orNull(int),
          },
        ),
        devices: arr(ref("ProviderDeviceHealth")),
        discovery_warnings: note(arr(str), "The last discovery's warnings (project addition)."),
        held_claims: note(
          {
            ...arr(obj(["device_id", "claims"], { device_id: str, claims: arr(str) })),
            maxItems: 2048,
          },
          "The devices the provider no longer lists whose resource claims it still holds, the " +
            "most recently listed first (at most MAX_UNLISTED_CLAIM_DEVICES, 1024), each with " +
            "the keys it holds; while a reload restarts the provider, until its old process has " +
            "exited, every device of that process claiming a key (at most 1024 listed + 1024); " +
            "[] when none (project addition).",
        ),
        host_check: note(
          orNull(obj(["status", "summary", "unmet"], {
            status: { enum: ["ok", "unmet"] },
            summary: str,
            unmet: arr(obj(["id", "detail", "remedy"], { id: str, detail: str, remedy: str })),
          })),
          "What the provider reported of its host at start-up (WaitReady host_check / " +
            "host_unmet); null when nothing (project addition).",
        ),
        start_error: note(
          orNull(str),
          "Why the provider did not come up when a configuration reload started it (listed " +
            "DOWN until the next reload: 'provider <id> failed to start at a configuration " +
            "reload (<why>)'), or that a running reload is (re)starting it and has " +
            "not registered it yet (DOWN meanwhile); null otherwise (project addition).",
        ),
        data_faults: note(
          obj(["type_mismatch", "non_finite", "undeclared_signal"], {
            type_mismatch: int,
            non_finite: int,
            undeclared_signal: int,
          }),
          "Refused samples since start (project addition).",
        ),
        timestamp_skew: note(
          obj(["samples_total", "last_skew_ms", "last_at_epoch_ms"], {
            samples_total: int,
            last_skew_ms: orNull(int),
            last_at_epoch_ms: orNull(int),
          }),
          "Samples whose provider timestamp was more than 30 s off the runtime's clock, since " +
            "start; ages never use provider timestamps (project addition).",
        ),
      },
    ),
    ProvidersHealthResponse: ok(["providers", "audit", "history_disk"], {
      providers: arr(ref("ProviderHealth")),
      audit: note(
        ref("AuditStatus"),
        "The audit journal's health (project addition): a failing write shows here.",
      ),
      history_disk: note(
        orNull(ref("HistoryDiskStatus")),
        "The history's disk tier's health (project addition); null when history is off.",
      ),
    }),
    HistoryDiskStatus: obj(
      [
        "state",
        "rows_written_total",
        "rows_dropped_total",
        "write_errors_total",
        "rows_unreadable_total",
        "read_errors_total",
        "last_error",
      ],
      {
        state: note(
          { enum: ["off", "ok", "stopped"] },
          "`stopped`: a write failed (a full disk, a read-only card); tried again later. " +
            "`off`: history.disk_max_bytes 0.",
        ),
        rows_written_total: int,
        rows_dropped_total: note(
          int,
          "Rows not written: the tier stopped, its queue full, or the write failed.",
        ),
        write_errors_total: note(int, "Writes and fsyncs that failed, and failed opens."),
        rows_unreadable_total: note(int, "Rows that could not be read back (torn, damaged)."),
        read_errors_total: note(int, "History questions the tier failed part-way."),
        last_error: orNull(str),
      },
    ),
    AuditStatus: obj(
      [
        "journal",
        "path",
        "entries_total",
        "write_errors_total",
        "dropped_total",
        "queued",
        "gap_pending",
        "write_ahead_late_total",
        "unreadable_lines_total",
        "for_runs_dropped_total",
        "last_error",
        "last_error_at_epoch_ms",
      ],
      {
        journal: { enum: ["memory", "ok", "failing"] },
        path: orNull(str),
        entries_total: int,
        write_errors_total: int,
        dropped_total: int,
        queued: int,
        gap_pending: note(
          int,
          "Entries lost since the journal last wrote, not yet recorded by a `gap` entry.",
        ),
        write_ahead_late_total: note(
          int,
          "Calls sent before their decision reached the OS (the bounded wait passed).",
        ),
        unreadable_lines_total: note(int, "Journal lines a read could not use (reported)."),
        for_runs_dropped_total: note(
          int,
          "Calls recorded interrupted that no start of the runs took (listed for the runs by a " +
            "checkpoint or closing record of the audit journal), dropped (the oldest) past " +
            "AUDIT_MAX_FOR_RUNS (256) by this process: no run's events. Not interrupted entries " +
            "found with no such record (an older version's journal): not known to be untaken.",
        ),
        last_error: orNull(str),
        last_error_at_epoch_ms: orNull(int),
      },
    ),
    AuditEntry: obj(
      [
        "seq",
        "time_epoch_ms",
        "first_time_epoch_ms",
        "last_time_epoch_ms",
        "count",
        "origin",
        "action",
        "device_handle",
        "function",
        "args",
        "mode",
        "outcome",
        "reason",
        "refused_by",
        "result",
        "latency_ms",
      ],
      {
        seq: note(int, "Order of closing within this process (restarts at 1)."),
        time_epoch_ms: note(int, "The first decision's time."),
        first_time_epoch_ms: int,
        last_time_epoch_ms: int,
        count: note(
          int,
          "Decisions this entry stands for (> 1: collapsed repeats); for `gap`, entries lost.",
        ),
        origin: obj(["kind"], {
          kind: { enum: [...AUDIT_ORIGIN_KINDS] },
          address: str,
          token_name: str,
          node: str,
          transition: str,
          hook: str,
          rung: str,
          cause: str,
          alarm_id: str,
          device_handle: str,
        }),
        action: { enum: [...AUDIT_ACTIONS, "gap"] },
        device_handle: orNull(str),
        function: orNull(str),
        args: orNull({ type: "object" }),
        mode: str,
        outcome: { enum: ["accepted", "refused", "failed", "interrupted"] },
        reason: orNull(str),
        refused_by: orNull(str),
        result: orNull({ type: "object" }),
        latency_ms: orNull(num),
      },
    ),
    HistoryResponse: ok(
      [
        "provider_id",
        "device_id",
        "since_ms",
        "until_ms",
        "step_ms",
        "source",
        "memory_from_ms",
        "disk_step_ms",
        "incomplete",
        "signals",
      ],
      {
        provider_id: str,
        device_id: str,
        since_ms: int,
        until_ms: int,
        step_ms: note(int, "As asked (0: every sample the ring holds)."),
        source: note(
          { enum: ["memory", "disk", "memory+disk", "none"] },
          "Which tier the points came from.",
        ),
        memory_from_ms: note(
          orNull(int),
          "Where the ring's part begins: points before it come from the disk tier (later for a " +
            "signal whose own ring the byte bound trimmed: docs/history.md).",
        ),
        disk_step_ms: note(orNull(int), "The disk tier's bucket; null without a disk tier."),
        incomplete: note(
          orNull({ enum: [...HISTORY_INCOMPLETE] }),
          "Null when the answer holds every point the tiers have of the range. " +
            "`disk_unreadable`: the disk tier failed while it was read (what was read is given); " +
            `\`disk_pending\`: rows queued for the disk were not written within ` +
            `${HISTORY_QUERY_DISK_WAIT_MS / 1000} s (HISTORY_QUERY_DISK_WAIT_MS) and are in ` +
            "neither tier yet: ask again.",
        ),
        signals: arr(obj(["signal_id", "value_type", "unit_changes", "points"], {
          signal_id: str,
          value_type: note(
            { enum: [...VALUE_TYPES, "unknown"] },
            "The type of the signal's points: its samples' in the ring; else (it has no value " +
              "there: never reported, or only on disk) as declared, taken as `unit` is (while no " +
              "provider lists the device, as declared at its last discovery), or, when its " +
              "declaration is not known, its newest disk rows' (rows of another type are left " +
              "out). `unknown` for one declared of any type (value_type 0) with no value in the " +
              "ring, or of neither a known declaration nor typed rows.",
          ),
          unit: note(
            str,
            "The signal's unit as its device declares it now (SignalSpec.unit; while no " +
              "provider lists the device, or it no longer declares the signal (a rediscovery " +
              "removed it), the one its polls were recorded in); absent when it declares none. " +
              "Points before a change in `unit_changes` are not in it.",
          ),
          unit_changes: note(
            arr(obj(["at_ms", "unit_before", "unit"], {
              at_ms: note(int, "The device's first poll in the new unit (epoch ms)."),
              unit_before: note(str, "The unit declared before (empty: none)."),
              unit: note(str, "The unit declared from then on (empty: none)."),
            })),
            "The changes of the signal's declared unit after `since_ms` that this runtime saw " +
              "(a provider restart or rediscovery declaring another unit), oldest first, at most " +
              `${MAX_UNIT_CHANGES} (MAX_UNIT_CHANGES): a point is in the \`unit_before\` of the ` +
              "first change after its `t_ms`, else in `unit`. Empty when none. A change while " +
              "the runtime was stopped is not known (the disk tier keeps no units).",
          ),
          points: arr(obj(["t_ms", "min", "max", "last", "count", "quality"], {
            t_ms: note(int, "Bucket start, or the sample's time at full rate (epoch ms)."),
            min: orNull(num),
            max: orNull(num),
            last: note(
              { type: ["number", "string", "null"] },
              "Numbers (bools 0/1), strings, bytes as base64; null: no value.",
            ),
            count: int,
            quality: note(QUALITY, "The worst quality in the bucket."),
          })),
        })),
      },
      "Signal history (project addition).",
    ),
    IncidentsResponse: ok(["incidents", "count"], {
      incidents: arr(ref("IncidentHeader")),
      count: note(int, "Incidents in this page (not the total)."),
    }),
    IncidentResponse: ok(["incident", "signals"], {
      incident: ref("IncidentHeader"),
      signals: arr(obj(["provider_id", "device_id", "signal_id", "value_type", "samples"], {
        provider_id: str,
        device_id: str,
        signal_id: str,
        value_type: note(
          str,
          "Its samples' type; a signal the ring holds no value of (its provider never reported " +
            "one) has its type as declared, taken as `unit` is; `unknown` for one declared of " +
            "any type (value_type 0), or whose declaration is not known.",
        ),
        unit: note(
          str,
          "The signal's unit as its samples were polled in when the incident began " +
            `(SignalSpec.unit, at most ${INCIDENT_UNIT_MAX_CHARS} characters: ` +
            "INCIDENT_UNIT_MAX_CHARS); empty when it " +
            "declared none; absent in records written by versions that kept no units.",
        ),
        from_epoch_ms: note(
          int,
          "Where the signal's samples begin when the ring had lost its earlier changes in the " +
            "window while its device's polls were kept (history.memory_max_bytes trimmed it " +
            "alone, or a value too large to keep), or a retype or a unit change within the " +
            "window before the trigger began its line (a line has one type and one unit): the " +
            "record holds none of it before (the window's end when none). Absent when its " +
            "samples cover the record's window.",
        ),
        samples: note(
          arr({
            type: "array",
            prefixItems: [int, { type: ["number", "string", "null"] }, QUALITY],
          }),
          "`[t_ms, value, quality]`, every polled sample of the window.",
        ),
      })),
    }),
    IncidentHeader: obj(
      [
        "incident_id",
        "trigger",
        "cause",
        "at_epoch_ms",
        "trigger_at_epoch_ms",
        "also",
        "triggers_not_listed",
        "scope",
        "devices",
        "from_epoch_ms",
        "until_epoch_ms",
        "signals",
        "samples",
        "bytes",
        "incomplete",
      ],
      {
        incident_id: str,
        trigger: { enum: ["estop", "fault", "alarm", "device_loss"] },
        cause: str,
        at_epoch_ms: note(
          int,
          "When the incident began (its first trigger): the anchor of its window.",
        ),
        trigger_at_epoch_ms: note(
          int,
          "When its lead trigger (`trigger`) happened: `at_epoch_ms` unless a stronger trigger " +
            "joined within 1 s (an e-stop after an alarm). Records written before it was kept: " +
            "`at_epoch_ms`.",
        ),
        trigger_outside_window: note(
          OUTSIDE_WINDOW,
          "Present only when `trigger_at_epoch_ms` lies outside `from_epoch_ms`.." +
            "`until_epoch_ms`: on which side.",
        ),
        also: note(
          arr(obj(["trigger", "cause", "at_epoch_ms"], {
            trigger: str,
            cause: str,
            at_epoch_ms: note(int, "Its own time (as its run's `incident_trigger` event)."),
            outside_window: note(
              OUTSIDE_WINDOW,
              "Present only when `at_epoch_ms` lies outside `from_epoch_ms`..`until_epoch_ms` " +
                "(a device loss dated back to its first failed read, found down after a later " +
                "incident began, joins it): on which side. The record holds no samples around " +
                "it there.",
            ),
          })),
          "Triggers that joined it (within 1 s), at most 32 (`INCIDENT_MAX_TRIGGERS`): the " +
            "strongest, of equally strong ones those that joined first (an e-stop or a FAULT " +
            "entry is never left out while an alarm or a device loss is listed).",
        ),
        triggers_not_listed: note(
          int,
          "Triggers that joined it beyond those listed in `also` (0: every one is listed; " +
            "records written before it was kept: 0).",
        ),
        scope: { enum: ["machine", "devices"] },
        devices: arr(str),
        from_epoch_ms: int,
        until_epoch_ms: int,
        signals: note(int, "Signals of the record (of one not whole: those readable)."),
        samples: note(int, "Samples of the record (of one not whole: those readable)."),
        bytes: note(int, "Bytes of the record (of a torn one: of its file)."),
        incomplete: note(
          orNull({ enum: ["torn", "damaged"] }),
          "null: the record is whole; `torn`: its file is shorter than its header says (a " +
            "power cut while it was written); `damaged`: a signal line does not parse.",
        ),
      },
      "An incident record's header (project addition).",
    ),
    AuditResponse: ok(["entries", "next_cursor", "problems"], {
      entries: arr(ref("AuditEntry")),
      next_cursor: note(orNull(str), "Pass as `cursor` for the next page; null at the end."),
      problems: note(
        arr(obj(["file", "offset", "bytes", "problem"], {
          file: str,
          offset: int,
          bytes: int,
          problem: str,
        })),
        "Journal lines of the part read that could not be used (torn, damaged, too long).",
      ),
    }),
    TelemetryStatusResponse: ok(
      [
        "enabled",
        "running",
        "connected",
        "total_written",
        "total_failed",
        "pending_batch",
        "queue_depth",
        "dropped_events",
        // Project additions: in every answer (telemetry off, writing or failing).
        "pending_batch_bytes",
        "retry_buffer_depth",
        "dropped_retry",
        "write_failures",
        "dropped_rejected",
        "dropped_unformattable",
        "dropped_overflow",
        "omitted_values",
        "run_payload_errors",
        "last_error",
        "last_error_at_epoch_ms",
        "last_flush_at_epoch_ms",
        "last_health_snapshot_at_epoch_ms",
      ],
      {
        enabled: bool,
        running: bool,
        connected: bool,
        total_written: int,
        total_failed: int,
        pending_batch: int,
        queue_depth: int,
        dropped_events: int,
        backend: note(
          obj(["url", "org", "bucket"], { url: str, org: str, bucket: str }),
          "Omitted while telemetry is disabled.",
        ),
        last_error: { type: ["string", "null"] },
        last_error_at_epoch_ms: { type: ["integer", "null"] },
        last_flush_at_epoch_ms: { type: ["integer", "null"] },
        last_health_snapshot_at_epoch_ms: { type: ["integer", "null"] },
        pending_batch_bytes: note(
          int,
          "UTF-8 bytes of line protocol the current batch's rows take in a write, a newline each; " +
            "the batch is written at 1 MiB, MAX_WRITE_BYTES (project addition).",
        ),
        retry_buffer_depth: note(int, "Rows waiting for a retry (project addition)."),
        dropped_retry: note(
          int,
          "Rows evicted from the full retry buffer, part of total_failed (project addition).",
        ),
        write_failures: note(
          int,
          "Write requests that failed and will be retried (project addition).",
        ),
        dropped_rejected: note(
          int,
          "Rows the database refused, dropped after isolation, part of total_failed (project " +
            "addition).",
        ),
        dropped_unformattable: note(
          int,
          "Rows that could not be a valid line and were never sent, part of total_failed " +
            "(project addition).",
        ),
        dropped_overflow: note(
          int,
          "Rows dropped, oldest first, from a batch past batch_size + 10,000, part of " +
            "total_failed (project addition).",
        ),
        omitted_values: note(
          int,
          "Signal rows written without their value field (NaN, +-Infinity, integer out of " +
            "range); quality kept (project addition).",
        ),
        run_payload_errors: note(
          int,
          "Run-event rows written with payload_error instead of a payload that could not be " +
            "serialised (project addition).",
        ),
      },
      "Project additions are described in docs/telemetry.md.",
    ),
    DevicesResponse: ok(["devices"], {
      devices: arr(obj(["provider_id", "device_id", "display_name", "type"], {
        provider_id: str,
        device_id: str,
        display_name: str,
        type: str,
      })),
    }),
    DeviceCapabilitiesResponse: ok(["provider_id", "device_id", "capabilities"], {
      provider_id: str,
      device_id: str,
      capabilities: obj(["signals", "functions"], {
        signals: arr(obj(["signal_id", "value_type", "label", "poll_hint_hz", "stale_after_ms"], {
          signal_id: str,
          value_type: { enum: [...VALUE_TYPES, "unspecified"] },
          label: str,
          unit: note(
            str,
            "The signal's unit as its provider declares it (SignalSpec.unit); absent when " +
              "it declares none (project addition).",
          ),
          poll_hint_hz: note(
            orNull(num),
            "Declared poll hint (0: not polled); the runtime polls a device whose polled " +
              "signals all hint slower than polling.interval_ms less often; null when the " +
              "declared hint is no finite number (NaN or +-Infinity on the wire) (project addition).",
          ),
          stale_after_ms: note(
            int,
            "Declared staleness bound (0: none); sets the signal's staleness " +
              "(project addition).",
          ),
        })),
        functions: arr(obj([
          "function_id",
          "name",
          "label",
          "args",
          "category",
          "actuating",
          "policy",
        ], {
          function_id: int,
          name: str,
          label: str,
          args: {
            type: "object",
            additionalProperties: obj(["type", "required"], {
              type: { enum: [...VALUE_TYPES, "unspecified"] },
              required: bool,
              description: str,
              unit: str,
              min: note(
                num,
                "Declared lower bound; absent when none, or when the declared bound is no " +
                  "finite number (NaN or +-Infinity on the wire; still checked as declared).",
              ),
              max: note(num, "Declared upper bound; absent as `min` is."),
              allowed_values: note(
                arr(str),
                "The only values a string argument takes " +
                  "(project addition).",
              ),
            }),
          },
          category: { enum: ["UNSPECIFIED", "READ", "CONFIG", "ACTUATE"] },
          actuating: bool,
          policy: note(
            obj(
              [
                "allowed_modes",
                "requires_lease",
                "min_interval_ms",
                "is_idempotent",
                "safety_profile",
              ],
              {
                allowed_modes: arr(str),
                requires_lease: bool,
                min_interval_ms: int,
                is_idempotent: bool,
                safety_profile: str,
              },
            ),
            "The declared FunctionPolicy. The router refuses a call outside allowed_modes or " +
              "to a function with requires_lease (409) and one sooner than min_interval_ms " +
              "after the last (429); the e-stop's stop actions pass (project addition).",
          ),
        })),
      }),
    }),
    SignalValue: obj(["signal_id", "value", "timestamp_epoch_ms", "quality", "age_ms"], {
      signal_id: str,
      value: ref("TypedValue"),
      timestamp_epoch_ms: int,
      quality: QUALITY,
      age_ms: int,
      unit: note(
        str,
        "The signal's unit (its SignalSpec.unit, as in the capabilities); absent when it " +
          "declares none (project addition).",
      ),
    }),
    StateCollectionResponse: ok(["generated_at_epoch_ms", "devices"], {
      generated_at_epoch_ms: int,
      devices: arr(obj(["provider_id", "device_id", "quality", "values"], {
        provider_id: str,
        device_id: str,
        quality: QUALITY,
        values: arr(ref("SignalValue")),
      })),
    }),
    DeviceStateResponse: ok(
      ["generated_at_epoch_ms", "provider_id", "device_id", "quality", "values"],
      {
        generated_at_epoch_ms: int,
        provider_id: str,
        device_id: str,
        quality: QUALITY,
        values: arr(ref("SignalValue")),
      },
    ),
    CallResponse: ok(["provider_id", "device_id", "function_id", "post_call_poll_triggered"], {
      provider_id: str,
      device_id: str,
      function_id: int,
      post_call_poll_triggered: bool,
    }),
    ModeResponse: ok(["mode"], {
      mode: ref("RuntimeMode"),
      hook_failures: note(arr(ref("HookFailure")), "POST only (project addition)."),
      hooks_pending: note(
        bool,
        "POST FAULT, only when true: the hooks of that FAULT entry (or of the one in force) had " +
          "not finished within 10 s; hook_failures lists those known then (project addition).",
      ),
      superseded_by: note(
        str,
        "POST only, only when a mode listener superseded the requested transition as it " +
          "committed: the change it committed, `AUTO->FAULT` (FAULT forced on entering AUTO); " +
          "mode is then that change's, and the transition's after_transition hooks were skipped " +
          "(project addition).",
      ),
      superseded_reason: note(
        str,
        "With superseded_by, when that change gave one: why the listener committed it, the " +
          "reason FAULT was forced with (`device-loss latch: sim/motor is down (...)`), cut to " +
          `${SUPERSEDED_REASON_CHARS} characters with an ellipsis (project addition).`,
      ),
    }),
    EstopResponse: ok([
      "latched",
      "software_safe_state",
      "actions",
      "fault_engaged",
      "uncovered_actuating_functions",
      "uncovered",
      "hook_failures",
      "drain",
      "verification",
    ], {
      latched: note(
        bool,
        "The latch as it stands when the stop answers: false when POST /v0/estop/clear released " +
          "it while the stop ran and no press latched it again since.",
      ),
      software_safe_state: RUNG,
      actions: arr(obj(["device_handle", "function", "success"], {
        device_handle: str,
        function: str,
        success: bool,
        error: str,
      })),
      warning: str,
      fault_engaged: bool,
      uncovered_actuating_functions: int,
      uncovered: arr(ref("FunctionRef")),
      hook_failures: arr(ref("HookFailure")),
      hooks_pending: note(
        bool,
        "Only when true: the hooks into FAULT had not finished within 10 s; hook_failures lists " +
          "those known then, the others run on (project addition).",
      ),
      drain: obj(["complete", "pending_providers"], {
        complete: bool,
        pending_providers: arr(str),
      }),
      verification: ref("Verification"),
    }),
    EstopClearResponse: ok(["latched"], { latched: bool }),
    Parameter: obj(["name", "type", "value"], {
      name: str,
      type: { enum: ["double", "int64", "bool", "string"] },
      value: SCALAR,
      min: num,
      max: num,
      allowed_values: arr(str),
    }),
    ParametersResponse: ok(["parameters"], { parameters: arr(ref("Parameter")) }),
    SetParameterResponse: ok(["parameter"], {
      parameter: obj(["name", "value"], { name: str, value: SCALAR }),
    }),
    AutomationTreeResponse: ok(["tree"], { tree: note(str, "The behavior-tree XML file.") }),
    AutomationVersion: obj(["engine_kind", "id", "digest", "digest_scope"], {
      engine_kind: str,
      id: str,
      digest: str,
      digest_scope: { enum: ["include_closure", "top_level_file"] },
    }),
    AutomationStatusResponse: ok(
      [
        "execution_status",
        "automation_version",
        "last_evaluation_at_epoch_ms",
        "engine_diagnostics",
        "run_id",
        "last_error",
        "mode",
        "not_running",
        "why_not_running",
        "blocked_devices",
        "device_loss_latched",
        "device_loss_latched_providers",
        "device_outages",
        "refused_calls",
      ],
      {
        execution_status: {
          enum: ["idle", "running", "blocked", "failed", "completed", "unknown"],
        },
        execution_reason: {
          enum: [
            "mode_gate",
            "waiting",
            "terminal_failure",
            "engine_fault",
            "no_definition",
            "stopped",
          ],
        },
        automation_version: orNull(ref("AutomationVersion")),
        last_evaluation_at_epoch_ms: int,
        engine_diagnostics: { type: "object" },
        run_id: orNull(str),
        last_error: orNull(str),
        device_loss_latched: note(
          arr(str),
          "Devices automation may not command until AUTO is " +
            "entered again (project addition).",
        ),
        device_loss_latched_providers: note(
          arr(
            obj([
              "provider_id",
              "losses",
              "since_epoch_ms",
              "last_device_handle",
              "last_reason",
              "exempt_devices",
              "exempt_device_ids",
            ], {
              provider_id: str,
              losses: int,
              since_epoch_ms: int,
              last_device_handle: str,
              last_reason: str,
              exempt_devices: int,
              exempt_device_ids: arr(str),
            }),
          ),
          "Providers with more than 64 devices latched (MAX_LATCHED_DEVICES_PER_PROVIDER): their " +
            "further lost devices, held as one entry; automation may command only their devices " +
            "it exempts (exempt_device_ids: listed and not down when it was made or AUTO was " +
            "last entered, not lost since) (project addition).",
        ),
        device_outages: note(
          arr({ type: "object" }),
          "Devices whose recent automated calls " +
            "all failed (project addition); a call a gate or a caller check refused is not a " +
            "failure.",
        ),
        refused_calls: note(
          arr(obj(
            [
              "device_handle",
              "function",
              "consecutive_refusals",
              "refused_by",
              "last_refusal",
              "since_epoch_ms",
            ],
            {
              device_handle: str,
              function: str,
              consecutive_refusals: int,
              refused_by: str,
              last_refusal: str,
              since_epoch_ms: int,
            },
          )),
          "Device functions (one entry per device and function: a call of another function " +
            "of the device neither ends nor extends a streak) whose recent automated calls a " +
            "gate (an interlock, the device-loss latch, " +
            "the mode or e-stop gate) or a policy check about the caller (requires_lease, " +
            "argument validation, min_interval, a function the device does not declare: " +
            "unknown_function, a provider id not configured: unknown_provider) all refused, 2 " +
            "or more in a row (project addition).",
        ),
        mode: note(str, "The runtime mode now (project addition)."),
        not_running: note(
          orNull(obj(["cause", "mode"], {
            cause: {
              enum: [
                "no_definition",
                "stopped",
                "mode",
                "device_loss_latch",
                "automation_fault",
                "stalled",
              ],
            },
            mode: str,
          })),
          "Why the tree does not tick now; null while it runs in AUTO (project addition).",
        ),
        why_not_running: note(
          orNull(str),
          "not_running as one line, with the remedy (project addition).",
        ),
        blocked_devices: note(
          arr(obj(["device_handle", "condition", "reason", "since_epoch_ms"], {
            device_handle: str,
            condition: { enum: ["failing", "down"] },
            reason: str,
            since_epoch_ms: orNull(int),
          })),
          "Devices the tree names that are failing or down: AUTO is refused while there is " +
            "one (project addition).",
        ),
      },
    ),
    Alarm: obj(
      [
        "id",
        "signal",
        "message",
        "action",
        "state",
        "level",
        "cause",
        "limit",
        "value",
        "quality",
        "since_epoch_ms",
        "shelved_until_epoch_ms",
        "transitions",
        "bad_input",
        "limits",
        "alarm_when",
        "hysteresis",
        "delay_ms",
        "on_bad_quality",
      ],
      {
        id: str,
        signal: str,
        message: str,
        action: { enum: ["none", "fault", "estop"] },
        state: { enum: ["normal", "active", "active_acked", "shelved"] },
        level: { enum: ["MINOR", "MAJOR", null] },
        cause: { enum: ["hihi", "hi", "lo", "lolo", "alarm_when", "bad_quality", null] },
        limit: { type: ["number", "boolean", "string", "null"] },
        value: orNull(ref("TypedValue")),
        quality: orNull(QUALITY),
        bad_input: { type: ["string", "null"] },
        since_epoch_ms: { type: ["integer", "null"] },
        shelved_until_epoch_ms: { type: ["integer", "null"] },
        limits: { type: "object", additionalProperties: num },
        alarm_when: { type: ["boolean", "string", "null"] },
        hysteresis: num,
        delay_ms: int,
        on_bad_quality: { enum: ["alarm", "ignore"] },
        transitions: arr({ type: "object" }),
      },
      "An alarm (project addition; docs/alarms.md).",
    ),
    AlarmsResponse: ok(["alarms"], { alarms: arr(ref("Alarm")) }),
    AlarmResponse: ok(["alarm"], { alarm: ref("Alarm") }),
    Interlock: obj(
      [
        "id",
        "message",
        "condition",
        "block",
        "blocking",
        "reason",
        "since_epoch_ms",
        "inputs",
        "unresolved_block",
      ],
      {
        id: str,
        message: str,
        condition: str,
        block: arr(str),
        blocking: bool,
        reason: { type: ["string", "null"] },
        since_epoch_ms: { type: ["integer", "null"] },
        inputs: arr(obj(["signal", "value", "quality", "bad_input"], {
          signal: str,
          value: orNull(ref("TypedValue")),
          quality: orNull(QUALITY),
          bad_input: { type: ["string", "null"] },
        })),
        unresolved_block: arr(str),
      },
      "An interlock (project addition; docs/alarms.md).",
    ),
    InterlocksResponse: ok(["interlocks"], { interlocks: arr(ref("Interlock")) }),
    Run: obj(
      [
        "schema_version",
        "run_id",
        "state",
        "close_reason",
        "started_at_epoch_ms",
        "ended_at_epoch_ms",
        "automation_version",
        "runtime_version",
        "polling_interval_ms",
        "params",
        "tag_scope",
        "experiment_label",
      ],
      {
        schema_version: int,
        run_id: str,
        state: { enum: ["open", "closed"] },
        close_reason: { enum: [...CLIENT_CLOSE_REASONS, "abandoned", null] },
        started_at_epoch_ms: int,
        ended_at_epoch_ms: orNull(int),
        automation_version: orNull(ref("AutomationVersion")),
        runtime_version: str,
        polling_interval_ms: int,
        params: { type: "object" },
        tag_scope: obj(["provider_ids", "device_ids", "signal_ids"], {
          provider_ids: arr(str),
          device_ids: arr(str),
          signal_ids: arr(str),
        }),
        experiment_label: orNull(str),
      },
    ),
    RunResponse: ok(["run"], { run: ref("Run") }),
    RunsListResponse: ok(["runs", "count"], {
      runs: arr(ref("Run")),
      count: note(int, "Runs in this page (not the total)."),
    }),
    RunEvent: obj(
      [
        "schema_version",
        "run_id",
        "sequence",
        "category",
        "type",
        "occurred_at_epoch_ms",
        "recorded_at_epoch_ms",
        "payload",
      ],
      {
        schema_version: int,
        run_id: str,
        sequence: int,
        category: {
          enum: [
            "run_opened",
            "run_closed",
            "mode_change",
            "parameter_change",
            "automation_fault",
            "annotation",
            "alarm",
            "interlock",
            "estop",
            "hook_failure",
            "call",
            "incident",
            "incident_trigger",
            "automation_change",
            "polling_change",
            "config_change",
          ],
        },
        type: str,
        occurred_at_epoch_ms: int,
        recorded_at_epoch_ms: int,
        payload: { type: "object" },
      },
    ),
    RunEventResponse: ok(["event"], { event: ref("RunEvent") }),
    RunEventsListResponse: ok(["events", "count"], {
      events: arr(ref("RunEvent")),
      count: int,
    }),
  };
}
