/**
 * The structure layer: JSON Schema (draft 2020-12) of the runtime YAML file, embedded as a module
 * so a compiled binary needs no file reads. schemas/runtime-config.schema.json is the same object
 * serialised (a test keeps the two identical) for editors using yaml-language-server.
 *
 * Unknown keys are allowed here on purpose: the loader warns about them and ignores them. Optional
 * keys accept `null` (an empty YAML value) as "not given". `errorMessage` and `deprecationMessage`
 * are annotations understood by yaml-language-server; the loader uses `errorMessage` too.
 *
 * After changing the schema, run `deno task config:validator`: the validator the loader runs is
 * generated from this object (src/config/_structure_validator.js; a test fails when it is stale).
 */

import {
  ALARM_ID_PATTERN,
  MAX_ALARM_DELAY_MS,
  MAX_ALARM_MESSAGE_LENGTH,
  MAX_ALARMS,
  MAX_API_TOKENS,
  MAX_INTERLOCK_BLOCK_ENTRIES,
  MAX_INTERLOCKS,
  MAX_MQTT_PACKET_BYTES,
  MAX_PARAMETER_NAME_CHARS,
  MAX_PROVIDERS,
  MIN_SPARKPLUG_MESSAGE_BYTES,
  RESERVED_TOKEN_NAMES,
  RUNS_LIMITS,
  TOKEN_ENV_PATTERN,
  TOKEN_NAME_PATTERN,
  TOKEN_ROLES,
} from "./types.ts";
import { MAX_CONDITION_LENGTH } from "./condition.ts";

/** Largest delay a JS timer accepts; larger durations would fire immediately. */
export const MAX_INT = 2147483647;
/** Largest value of a uint32 function id (ADPP). */
export const MAX_FUNCTION_ID = 4294967295;

type Json = Record<string, unknown>;

function int(description: string, def?: number, minimum?: number, maximum = MAX_INT): Json {
  return {
    type: ["integer", "null"],
    description,
    ...(def === undefined ? {} : { default: def }),
    ...(minimum === undefined ? {} : { minimum }),
    maximum,
  };
}
function bool(description: string, def: boolean): Json {
  return { type: ["boolean", "null"], description, default: def };
}
function str(description: string, def?: string, extra: Json = {}): Json {
  return {
    type: ["string", "null"],
    description,
    ...(def === undefined ? {} : { default: def }),
    ...extra,
  };
}
function section(description: string, properties: Json, extra: Json = {}): Json {
  return { type: ["object", "null"], description, properties, ...extra };
}
/** `if: enabled is not false` (absent or null counts as the default, true). */
const ENABLED_NOT_FALSE = {
  not: { required: ["enabled"], properties: { enabled: { const: false } } },
};
/** `if: enabled is true`. */
const ENABLED_TRUE = { required: ["enabled"], properties: { enabled: { const: true } } };

const MODES = ["MANUAL", "AUTO", "IDLE", "FAULT", "*"];

const CALL: Json = {
  type: "object",
  description: "A device call: device_handle plus function_id and/or function_name, and args.",
  required: ["device_handle"],
  properties: {
    device_handle: {
      type: "string",
      description: "`provider/device`.",
      pattern: "^[^/]+/.+$",
      errorMessage: "must be `provider/device`",
    },
    function_id: {
      type: ["integer", "null"],
      description: "Function id (0 = unset, select by name).",
      default: 0,
      minimum: 0,
      maximum: MAX_FUNCTION_ID,
    },
    function_name: str('Function name ("" = unset, select by id).', ""),
    args: {
      type: ["object", "null"],
      description: "Arguments by name. Scalars only; `true`/`false` -> bool, `[+-]digits` -> " +
        "int64, decimal with a dot -> double, anything else -> string (quotes do not matter).",
      additionalProperties: { type: ["string", "number", "boolean"] },
    },
  },
  anyOf: [
    { required: ["function_id"], properties: { function_id: { type: "integer", minimum: 1 } } },
    {
      required: ["function_name"],
      properties: { function_name: { type: "string", minLength: 1 } },
    },
  ],
  errorMessage: "must provide function_id (> 0) or function_name",
};

const CALL_LIST: Json = { type: ["array", "null"], items: { $ref: "#/$defs/call" } };

const EXPECTATION: Json = {
  type: "object",
  description: "What one signal must read back as after an e-stop: `equals`, or `min`/`max`.",
  required: ["signal"],
  properties: {
    signal: {
      type: "string",
      description: "`provider/device/signal`.",
      pattern: "^[^/]+/.+/[^/]+$",
      errorMessage: "must be `provider/device/signal`",
    },
    equals: {
      type: ["boolean", "number", "string"],
      description: "The exact value (bool, number or string) the signal must read.",
    },
    min: { type: "number", description: "Inclusive lower bound on a numeric signal." },
    max: { type: "number", description: "Inclusive upper bound on a numeric signal." },
  },
  anyOf: [{ required: ["equals"] }, { required: ["min"] }, { required: ["max"] }],
  errorMessage: "needs `equals`, or `min` and/or `max`",
};

const HOOK: Json = {
  type: "object",
  description: "Calls run when the mode changes from `from` to `to`.",
  required: ["calls"],
  properties: {
    from: {
      enum: [...MODES, "", null],
      description: "Previous mode, or `*` / empty for any.",
      default: "*",
    },
    to: {
      enum: [...MODES, "", null],
      description: "Target mode, or `*` / empty for any.",
      default: "*",
    },
    fail_on_error: bool("before_transition: a failed call vetoes the transition.", true),
    calls: {
      type: "array",
      description: "Calls, run in order.",
      minItems: 1,
      items: { $ref: "#/$defs/call" },
    },
  },
};

const HOOK_LIST: Json = { type: ["array", "null"], items: { $ref: "#/$defs/hook" } };

const PARAMETER: Json = {
  type: "object",
  description: "A runtime parameter readable and writable by the behavior tree and the API.",
  required: ["name", "type", "default"],
  properties: {
    name: {
      type: "string",
      minLength: 1,
      maxLength: MAX_PARAMETER_NAME_CHARS,
      description: `Unique name, 1 to ${MAX_PARAMETER_NAME_CHARS} characters.`,
    },
    type: { enum: ["double", "int64", "bool", "string"], description: "Value type." },
    default: { type: ["number", "boolean", "string"], description: "Initial value, of `type`." },
    min: { type: ["number", "null"], description: "Lower bound (double and int64 only)." },
    max: { type: ["number", "null"], description: "Upper bound (double and int64 only)." },
    allowed_values: {
      type: ["array", "null"],
      description: "Allowed values (string only); empty = no restriction.",
      items: { type: "string" },
    },
  },
  allOf: [
    {
      if: { required: ["type"], properties: { type: { const: "double" } } },
      then: { properties: { default: { type: "number" }, allowed_values: false } },
    },
    {
      if: { required: ["type"], properties: { type: { const: "int64" } } },
      then: { properties: { default: { type: "integer" }, allowed_values: false } },
    },
    {
      if: { required: ["type"], properties: { type: { const: "bool" } } },
      then: {
        properties: { default: { type: "boolean" }, min: false, max: false, allowed_values: false },
      },
    },
    {
      if: { required: ["type"], properties: { type: { const: "string" } } },
      then: { properties: { default: { type: "string" }, min: false, max: false } },
    },
  ],
};

const ID: Json = {
  type: "string",
  description: "Unique id: 1 to 64 letters, digits, `_`, `.` or `-`, not starting with `.` " +
    "(used in URLs).",
  pattern: ALARM_ID_PATTERN.source,
  errorMessage: "must be 1 to 64 letters, digits, `_`, `.` or `-`, not starting with `.`",
};

const LIMIT = (description: string): Json => ({ type: ["number", "null"], description });

const ALARM: Json = {
  type: "object",
  description: "Alarm limits on one signal, evaluated after every poll in every mode " +
    "(docs/alarms.md).",
  required: ["id", "signal"],
  properties: {
    id: ID,
    signal: {
      type: "string",
      description: "`provider/device/signal` (the provider must be declared).",
      pattern: "^[^/]+/.+/[^/]+$",
      errorMessage: "must be `provider/device/signal`",
    },
    hihi: LIMIT("Raises MAJOR above this value."),
    hi: LIMIT("Raises MINOR above this value."),
    lo: LIMIT("Raises MINOR below this value."),
    lolo: LIMIT("Raises MAJOR below this value."),
    alarm_when: {
      type: ["boolean", "string"],
      description: "For bool and string signals instead of limits: the value that raises it.",
    },
    level: {
      enum: ["MINOR", "MAJOR", null],
      description: "Level an alarm_when alarm raises.",
      default: "MAJOR",
    },
    hysteresis: {
      type: ["number", "null"],
      description: "How far back inside the limit the value must come before the alarm clears.",
      minimum: 0,
      default: 0,
    },
    delay_ms: int(
      "How long the condition must hold before the alarm raises.",
      0,
      0,
      MAX_ALARM_DELAY_MS,
    ),
    on_bad_quality: {
      enum: ["alarm", "ignore", null],
      description: "A stale, unavailable or faulty input: an alarm itself (fail safe), or ignored.",
      default: "alarm",
    },
    action: {
      enum: ["none", "fault", "estop", null],
      description: "On raise: nothing, mode FAULT (hooks included), or the e-stop.",
      default: "none",
    },
    message: str("Operator text.", "", { maxLength: MAX_ALARM_MESSAGE_LENGTH }),
  },
  // A limit given as null is no limit (the loader's rule): a branch needs one that is not null (a
  // limit of the wrong type is that limit's own error).
  anyOf: ["hihi", "hi", "lo", "lolo", "alarm_when"].map((k) => ({
    required: [k],
    properties: { [k]: { not: { type: "null" } } },
  })),
  errorMessage: "needs at least one limit (hihi, hi, lo, lolo) or alarm_when",
};

const INTERLOCK: Json = {
  type: "object",
  description: "Refuses calls to functions while a condition holds or an input is bad " +
    "(docs/alarms.md).",
  required: ["id", "block", "while", "message"],
  properties: {
    id: ID,
    block: {
      type: "array",
      description: "`provider/device/function_name`, or `provider/device/*` for every actuating " +
        "function of the device.",
      minItems: 1,
      maxItems: MAX_INTERLOCK_BLOCK_ENTRIES,
      items: {
        type: "string",
        pattern: "^[^/]+/.+/[^/]+$",
        errorMessage: "must be `provider/device/function` or `provider/device/*`",
      },
    },
    while: {
      type: "string",
      description: "Condition over signals: comparisons, and, or, not, parentheses, literals, " +
        "bad(provider/device/signal).",
      minLength: 1,
      maxLength: MAX_CONDITION_LENGTH,
    },
    message: {
      type: "string",
      description: "Why calls are refused (in the 409 answer).",
      minLength: 1,
      maxLength: MAX_ALARM_MESSAGE_LENGTH,
    },
  },
};

const API_TOKEN: Json = {
  type: "object",
  description: "A named bearer token: a name (for logs and the audit trail), a role, and the " +
    "token itself or the environment variable holding it.",
  required: ["name", "role"],
  properties: {
    name: {
      type: "string",
      description: "Unique name: 1 to 64 letters, digits, `_`, `.` or `-`, not starting with " +
        "`.`; not default, local or anonymous.",
      pattern: TOKEN_NAME_PATTERN.source,
      not: { enum: [...RESERVED_TOKEN_NAMES] },
      errorMessage: "must be 1 to 64 letters, digits, `_`, `.` or `-`, not starting with `.`, " +
        "and not default, local or anonymous",
    },
    role: {
      enum: [...TOKEN_ROLES],
      description: "viewer: reads and the e-stop; operator: also calls, mode, parameters, runs, " +
        "alarms and e-stop clear; admin: everything.",
    },
    token: {
      type: "string",
      description: "The token (at least 16 characters recommended); or use token_env.",
      minLength: 1,
    },
    token_env: {
      type: "string",
      description:
        "Environment variable holding the token (RUNTIME_TOKEN_\u2026), read at start-up " +
        "and kept out of the providers' environment.",
      pattern: TOKEN_ENV_PATTERN.source,
      errorMessage: "must be an environment variable name starting with RUNTIME_TOKEN_",
    },
  },
  anyOf: [{ required: ["token"] }, { required: ["token_env"] }],
  not: { required: ["token", "token_env"] },
  errorMessage: "needs exactly one of token and token_env",
};

const INFLUX_ALIAS = (nested: string) => ({
  deprecationMessage: `Deprecated: use telemetry.influxdb.${nested}.`,
  description: `Deprecated alias of telemetry.influxdb.${nested} (applied; the nested key wins).`,
});

/** The JSON Schema of the runtime configuration file. */
export const RUNTIME_CONFIG_SCHEMA: Json = {
  $schema: "https://json-schema.org/draft/2020-12/schema",
  $id: "urn:hwrt:runtime-config",
  title: "Runtime configuration",
  description: "Configuration of the hardware runtime (anolis-compatible). Only `providers` is " +
    "required; unknown keys are warned about and ignored.",
  type: "object",
  required: ["providers"],
  properties: {
    runtime: section("Runtime identity and time budgets.", {
      name: str("Runtime name (telemetry tag, run-id prefix).", ""),
      shutdown_timeout_ms: int("Graceful provider-stop budget.", 2000, 500, 30000),
      startup_timeout_ms: int(
        "Start-up bound, applied twice: to what start-up reads from disk before any provider is " +
          "spawned (the opening of data_dir, the TLS files), then to the providers' start with " +
          "their first poll.",
        30000,
        5000,
        300000,
      ),
      data_dir: str(
        "Run-record folder; relative to the config file's folder (default `anolis-data` in the " +
          "working directory).",
      ),
      mode: {
        not: {},
        description: "Not configurable: the runtime always starts in IDLE.",
        errorMessage: "is not configurable; the runtime always starts in IDLE (use POST /v0/mode)",
        deprecationMessage: "Removed: the runtime always starts in IDLE.",
      },
    }),
    http: section(
      "REST API and event stream.",
      {
        enabled: bool("Serve the HTTP API.", true),
        bind: str("Listen address.", "127.0.0.1", { minLength: 1 }),
        port: int("TCP port (1-65535 when enabled).", 8080, undefined, MAX_INT),
        cors_allowed_origins: {
          type: ["string", "array", "null"],
          description:
            "Origins whose pages may read answers (CORS): one string or a list; exact, a one-star glob, or `*` for any. Default: none.",
          default: [],
          items: { type: "string", minLength: 1 },
        },
        cors_allow_credentials: bool(
          "Send Access-Control-Allow-Credentials (not with `*`).",
          false,
        ),
        allowed_hosts: {
          type: ["string", "array", "null"],
          description:
            "Host names (optionally `name:port`; one string or a list) a loopback-bound API answers for besides localhost, 127.0.0.0/8 and [::1].",
          default: [],
          items: { type: "string", minLength: 1 },
        },
        thread_pool_size: int("Bound on concurrently handled requests.", 40),
        auth_enabled: bool("Require `Authorization: Bearer <token>`.", false),
        auth_token: str("Bearer token; RUNTIME_API_TOKEN overrides it.", ""),
        auth_exempt_loopback: bool("Loopback clients skip authentication.", true),
        tokens: {
          type: ["array", "null"],
          description: "Named bearer tokens with roles (viewer, operator, admin); the single " +
            "auth_token / RUNTIME_API_TOKEN keeps acting as the admin token `default`.",
          maxItems: MAX_API_TOKENS,
          items: { $ref: "#/$defs/api_token" },
        },
        allow_insecure_bind: bool("Allow a non-loopback bind without authentication.", false),
        tls_cert_path: str("TLS certificate (PEM); with tls_key_path enables HTTPS.", ""),
        tls_key_path: str("TLS private key (PEM); with tls_cert_path enables HTTPS.", ""),
        tls_allow_expired_cert: bool(
          "Serve an expired or not-yet-valid certificate (with a warning) instead of refusing to " +
            "start.",
          false,
        ),
        max_connections: int(
          "Bound on open connections; at the limit the oldest idle one is closed for a new one.",
          128,
          8,
          100000,
        ),
        request_header_timeout_ms: int(
          "A connection's first request (HTTPS: TLS handshake included) must arrive within this.",
          10000,
          1000,
          120000,
        ),
        keep_alive_timeout_ms: int(
          "An idle kept-alive connection is closed after this (event streams are never idle).",
          30000,
          1000,
          600000,
        ),
        console_enabled: bool(
          "Serve the operator console (a web page over the /v0 API) at `/`.",
          true,
        ),
        metrics_enabled: bool(
          "Serve Prometheus metrics at `/metrics` (same authentication as /v0).",
          true,
        ),
      },
      {
        allOf: [
          {
            if: ENABLED_NOT_FALSE,
            then: {
              properties: {
                port: { minimum: 1, maximum: 65535 },
                thread_pool_size: { minimum: 1 },
                cors_allowed_origins: { minLength: 1 },
              },
            },
          },
          {
            if: {
              allOf: [ENABLED_NOT_FALSE, {
                required: ["cors_allow_credentials"],
                properties: { cors_allow_credentials: { const: true } },
              }],
            },
            then: {
              properties: {
                cors_allowed_origins: {
                  not: { anyOf: [{ const: "*" }, { type: "array", contains: { const: "*" } }] },
                  errorMessage: "`*` is not allowed with cors_allow_credentials: true",
                },
              },
            },
          },
        ],
      },
    ),
    providers: {
      type: "array",
      description: `Provider processes (at least one, at most ${MAX_PROVIDERS}).`,
      minItems: 1,
      maxItems: MAX_PROVIDERS,
      items: {
        type: "object",
        required: ["id", "command"],
        properties: {
          id: { type: "string", minLength: 1, description: "Unique provider id." },
          command: {
            type: "string",
            minLength: 1,
            description:
              "Executable; a path containing `/` is relative to the config file's folder.",
          },
          args: {
            type: ["array", "null"],
            description: "Command-line arguments.",
            items: { type: "string" },
          },
          timeout_ms: int("Per-request deadline.", 5000, 100),
          hello_timeout_ms: int("Hello handshake deadline.", 5000, 100),
          ready_timeout_ms: int("WaitReady deadline.", 60000, 1000),
          restart_policy: section(
            "Restart after a crash.",
            {
              enabled: bool("Restart the provider when it crashes.", false),
              max_attempts: int("Restart attempts before the circuit opens.", 3),
              backoff_ms: {
                type: ["array", "null"],
                description: "Delay before each attempt; length must equal max_attempts.",
                items: { type: "integer", maximum: MAX_INT },
              },
              timeout_ms: int("Budget of one restart attempt.", 30000),
              success_reset_ms: int("Healthy time before the attempt count resets.", 1000),
            },
            {
              if: ENABLED_TRUE,
              then: {
                required: ["max_attempts", "backoff_ms", "timeout_ms"],
                properties: {
                  max_attempts: { type: "integer", minimum: 1 },
                  backoff_ms: { type: "array", minItems: 1, items: { minimum: 0 } },
                  timeout_ms: { type: "integer", minimum: 1000 },
                  success_reset_ms: { minimum: 0 },
                },
              },
            },
          ),
        },
      },
    },
    polling: section("State polling.", {
      interval_ms: int("Polling cadence.", 500, 100),
    }),
    telemetry: section("InfluxDB telemetry.", {
      enabled: bool("Write telemetry to InfluxDB.", false),
      health_interval_ms: int("Health snapshot cadence; 0 disables.", 15000, 0),
      measurement_names: {
        enum: ["runtime", "anolis", null],
        default: "runtime",
        description: "Measurement names: runtime (runtime_signal, runtime_mode_change, ...) or " +
          "anolis (anolis_signal, mode_change, parameter_change, anolis_provider_health, " +
          "anolis_device_health) for dashboards made for the anolis runtime.",
      },
      influxdb: section("InfluxDB target.", {
        url: str("Server URL.", "http://localhost:8086"),
        org: str("Organisation.", "anolis"),
        bucket: str("Bucket.", "anolis"),
        token: str("API token; INFLUXDB_TOKEN fills it when empty.", ""),
        batch_size: int("Points per write.", 100, 1),
        flush_interval_ms: int("Flush cadence, at least 10 ms.", 1000, 10),
        max_retry_buffer_size: int("Points kept for retry.", 1000, 0),
        queue_size: int("Bound of the pending-point queue.", 10000, 1),
      }),
      influx_url: str("", undefined, INFLUX_ALIAS("url")),
      influx_org: str("", undefined, INFLUX_ALIAS("org")),
      influx_bucket: str("", undefined, INFLUX_ALIAS("bucket")),
      influx_token: str("", undefined, INFLUX_ALIAS("token")),
      batch_size: { ...int("", undefined, 1), ...INFLUX_ALIAS("batch_size") },
      flush_interval_ms: { ...int("", undefined, 10), ...INFLUX_ALIAS("flush_interval_ms") },
    }),
    logging: section("Logging.", {
      level: { enum: ["debug", "info", "warn", "error", null], default: "info" },
    }),
    automation: section(
      "Behavior-tree automation, parameters and mode-transition hooks.",
      {
        enabled: bool("Run the behavior tree in AUTO.", false),
        behavior_tree: str("Behavior-tree XML file, relative to the config file's folder."),
        behavior_tree_path: str("Deprecated alias of behavior_tree.", undefined, {
          deprecationMessage: "Deprecated: use automation.behavior_tree.",
        }),
        tick_rate_hz: int("Tick rate (1-1000 when enabled).", 10),
        manual_gating_policy: {
          enum: ["BLOCK", "OVERRIDE", null],
          description: "Manual calls in AUTO: BLOCK refuses them, OVERRIDE lets them through.",
          default: "BLOCK",
        },
        parameters: { type: ["array", "null"], items: { $ref: "#/$defs/parameter" } },
        mode_transition_hooks: section("Calls run on mode changes.", {
          before_transition: HOOK_LIST,
          after_transition: HOOK_LIST,
        }),
      },
      {
        if: ENABLED_TRUE,
        then: {
          properties: { tick_rate_hz: { minimum: 1, maximum: 1000 } },
          if: {
            required: ["behavior_tree"],
            properties: { behavior_tree: { not: { const: null } } },
          },
          then: { properties: { behavior_tree: { type: "string", minLength: 1 } } },
          else: {
            if: {
              required: ["behavior_tree_path"],
              properties: { behavior_tree_path: { not: { const: null } } },
            },
            then: { properties: { behavior_tree_path: { type: "string", minLength: 1 } } },
            else: {
              required: ["behavior_tree"],
              properties: { behavior_tree: { type: "string" } },
            },
          },
        },
      },
    ),
    safety: section("E-stop safe-state ladder (independent of automation).", {
      safe_state: section("Safe state applied on e-stop.", {
        hooks: CALL_LIST,
        setpoints: CALL_LIST,
        zero_is_safe: bool("Allow zeroing every actuating output as the last rung.", false),
        expect: {
          type: ["array", "null"],
          description: "Signals read back fresh from the providers after every e-stop; the " +
            "e-stop answer says whether each one holds (verified safe state).",
          items: { $ref: "#/$defs/expectation" },
        },
        verify_timeout_ms: int(
          "How long the read-back may take before it reports mismatch or unreachable.",
          2000,
          100,
          30000,
        ),
      }),
    }),
    health: section("Liveness health.", {
      staleness: section("Sample age thresholds; 0 derives them from the polling cadence.", {
        warn_after_ms: int("Age at which health becomes WARNING.", 0, 0),
        stale_after_ms: int("Age at which health becomes STALE (> warn_after_ms).", 0, 0),
      }),
    }),
    audit: section(
      "Audit trail of actuating decisions: a rotated JSONL journal in data_dir/audit.",
      {
        max_file_bytes: int(
          "Size at which the journal moves to a new file.",
          16 * 1024 * 1024,
          4096,
          1024 * 1024 * 1024,
        ),
        max_files: int("Journal files kept (the oldest is removed).", 8, 2, 1000),
      },
    ),
    runs: section(
      'Run records (docs/http-api.md "Runs"): a journal and one event file per run in data_dir/runs.',
      {
        max_run_bytes: int(
          "Size an open run's event file may reach; past it automatic events (calls, alarms, " +
            "mode and parameter changes) are counted instead of recorded and markers are refused; " +
            "its safety events (e-stop, FAULT, reload changes) take up to 1 MiB more.",
          RUNS_LIMITS.maxRunBytes.default,
          RUNS_LIMITS.maxRunBytes.min,
          RUNS_LIMITS.maxRunBytes.max,
        ),
        max_runs: int(
          "Closed runs kept; past it the oldest are removed (record and event file).",
          RUNS_LIMITS.maxRuns.default,
          RUNS_LIMITS.maxRuns.min,
          RUNS_LIMITS.maxRuns.max,
        ),
        max_total_bytes: int(
          "Bytes the closed runs' event files may take together; past it the oldest closed runs " +
            "are removed (the most recently closed one is always kept).",
          RUNS_LIMITS.maxTotalBytes.default,
          RUNS_LIMITS.maxTotalBytes.min,
          RUNS_LIMITS.maxTotalBytes.max,
        ),
      },
    ),
    history: section(
      "On-board history: a full-rate ring in memory, a decimated tier on disk under " +
        "data_dir/history, and incident records around every stop (docs/history.md).",
      {
        enabled: bool("Keep history (false: GET /v0/history and /v0/incidents answer 503).", true),
        memory_seconds: int("How far back the full-rate ring reaches (s).", 120, 10, 3600),
        memory_max_bytes: int(
          "Bytes the ring may allocate; past it the oldest samples go first.",
          2 * 1024 * 1024,
          65536,
          1024 * 1024 * 1024,
        ),
        step_ms: int(
          "Bucket of the disk tier (ms): min, max, last, count, worst quality per signal.",
          10000,
          1000,
          3600000,
        ),
        disk_max_bytes: int(
          "Bytes the disk tier's files may take (0: no disk tier).",
          256 * 1024 * 1024,
          0,
          MAX_INT,
        ),
        incident_before_s: int(
          "Seconds of full-rate samples kept before an incident (with incident_after_s, at most " +
            "memory_seconds).",
          10,
          0,
          3600,
        ),
        incident_after_s: int("Seconds of full-rate samples kept after an incident.", 5, 0, 600),
        incident_max_count: int("Incident records kept (the oldest is removed).", 100, 1, 100000),
        incident_max_bytes: int(
          "Bytes the incident records may take (the oldest are removed).",
          64 * 1024 * 1024,
          65536,
          MAX_INT,
        ),
      },
    ),
    sparkplug: section(
      "Eclipse Sparkplug B edge node on an MQTT broker (docs/sparkplug.md); off by default. " +
        "Credentials come from SPARKPLUG_USERNAME and SPARKPLUG_PASSWORD only.",
      {
        enabled: bool("Publish births, deaths and data to the broker.", false),
        broker_url: str("Broker URL: mqtt://host[:1883] or mqtts://host[:8883].", ""),
        group_id: str("Sparkplug group id (no `/`, `+`, `#`).", ""),
        edge_node_id: str("Edge node id (no `/`, `+`, `#`); default runtime.name.", ""),
        client_id: str("MQTT client id; default `<group_id>-<edge_node_id>`.", ""),
        primary_host_id: str(
          "Primary host application id (no `/`, `+`, `#`): births wait for its STATE online; " +
            "default none.",
          "",
        ),
        keep_alive_s: int("MQTT keep-alive in seconds.", 30, 5, 65535),
        qos: {
          enum: [0, 1, null],
          default: 0,
          description: "MQTT QoS of NDATA and DDATA: 0 as Sparkplug B 3.0 requires; 1 " +
            "(warned) deviates from it for acknowledged writes (births: 0, death: 1).",
        },
        connect_timeout_ms: int("Bound on one connection attempt.", 10000, 1000, 120000),
        reconnect_ms: int("Wait between connection attempts.", 2000, 100, 600000),
        tls: section("TLS files for mqtts:// (relative to the config file's folder).", {
          ca_file: str("CA certificates (PEM) the broker's certificate is checked against."),
          cert_file: str("Client certificate (PEM), with key_file."),
          key_file: str("Client private key (PEM), with cert_file."),
        }),
        max_message_bytes: int(
          "The broker's packet size bound (Mosquitto's max_packet_size): no message beyond it is " +
            "published (a device whose DBIRTH is larger stays unborn, a larger DDATA is split); " +
            "default none.",
          undefined,
          MIN_SPARKPLUG_MESSAGE_BYTES,
          MAX_MQTT_PACKET_BYTES,
        ),
        commands: bool("Accept DCMD writes and an NCMD e-stop as routed calls.", false),
        role: {
          enum: [...TOKEN_ROLES, null],
          default: "operator",
          description: "Role the broker's commands act with (viewer refuses every write).",
        },
        store_forward: section(
          "The queue of updates kept while the broker is unreachable: only with history.enabled false (with history, its ring is the buffer, bounded by history.memory_seconds).",
          {
            max_messages: int("Messages kept (oldest dropped beyond).", 10000, 0, 10000000),
            max_bytes: int("Payload bytes kept (oldest dropped beyond).", 16777216, 0, 1073741824),
          },
        ),
      },
      {
        if: ENABLED_TRUE,
        then: {
          required: ["broker_url", "group_id"],
          properties: {
            broker_url: { type: "string", minLength: 1 },
            group_id: { type: "string", minLength: 1 },
          },
        },
      },
    ),
    alarms: {
      type: ["array", "null"],
      description: "Alarm limits on signals (docs/alarms.md).",
      maxItems: MAX_ALARMS,
      items: { $ref: "#/$defs/alarm" },
    },
    interlocks: {
      type: ["array", "null"],
      description: "Conditions that refuse calls while they hold (docs/alarms.md).",
      maxItems: MAX_INTERLOCKS,
      items: { $ref: "#/$defs/interlock" },
    },
  },
  $defs: {
    api_token: API_TOKEN,
    call: CALL,
    hook: HOOK,
    parameter: PARAMETER,
    expectation: EXPECTATION,
    alarm: ALARM,
    interlock: INTERLOCK,
  },
};
