import type { LogLevel } from "../common/mod.ts";
import type { ConditionNode, ConditionSignal } from "./condition.ts";

/** Runtime modes. Startup is always IDLE. */
export type RuntimeMode = "IDLE" | "MANUAL" | "AUTO" | "FAULT";
export const RUNTIME_MODES: readonly RuntimeMode[] = ["IDLE", "MANUAL", "AUTO", "FAULT"];

export type ParameterType = "double" | "int64" | "bool" | "string";

/**
 * The measurement names telemetry writes (`telemetry.measurement_names`): `runtime`, the project's
 * `runtime_` names, or `anolis`, the names the anolis runtime writes (docs/telemetry.md).
 */
export type MeasurementNaming = "runtime" | "anolis";
/** Every value of {@link MeasurementNaming}, the default first. */
export const MEASUREMENT_NAMINGS: readonly MeasurementNaming[] = ["runtime", "anolis"];

/**
 * A hook/safety call argument after YAML scalar conversion: `true`/`false` -> bool, `[+-]?digits`
 * -> int64, decimal with a dot (optional exponent) -> double, else string.
 */
export type CallArgValue =
  | { type: "int64"; int64: number }
  | { type: "double"; double: number }
  | { type: "bool"; bool: boolean }
  | { type: "string"; string: string };

/**
 * One expectation on a signal after an e-stop (safety.safe_state.expect[]): either `equals`, or
 * `min` and/or `max` (inclusive) on a number.
 */
export interface SafeStateExpectation {
  /** `provider/device/signal` as written. */
  readonly signal: string;
  readonly providerId: string;
  readonly deviceId: string;
  readonly signalId: string;
  readonly equals?: boolean | number | string;
  readonly min?: number;
  readonly max?: number;
  /** Config key path, e.g. `safety.safe_state.expect[2]`. */
  readonly path: string;
}

/** Defaults and bounds of `runs.*` (the schema, the validator and the run registry read them). */
export const RUNS_LIMITS = {
  maxRunBytes: { default: 256 * 1024 * 1024, min: 64 * 1024, max: 1024 * 1024 * 1024 * 1024 },
  maxRuns: { default: 1000, min: 1, max: 1_000_000 },
  maxTotalBytes: {
    default: 4 * 1024 * 1024 * 1024,
    min: 64 * 1024,
    max: 1024 * 1024 * 1024 * 1024,
  },
  /**
   * Bytes a run's event file may take past max_run_bytes for its safety events
   * (RUN_SAFETY_RESERVE_BYTES in src/runs/): a file may reach max_run_bytes + this (+ its
   * run_closed).
   */
  safetyReserveBytes: 1024 * 1024,
} as const;

/** Default and bounds of safety.safe_state.verify_timeout_ms. */
export const VERIFY_TIMEOUT_DEFAULT_MS = 2000;
export const VERIFY_TIMEOUT_MIN_MS = 100;
export const VERIFY_TIMEOUT_MAX_MS = 30000;

/** A declared device call (mode-transition hooks and safety.safe_state). */
export interface CallConfig {
  /** `provider/device`. */
  readonly deviceHandle: string;
  /** 0 = unset (select by name). */
  readonly functionId: number;
  /** "" = unset (select by id). */
  readonly functionName: string;
  readonly args: Readonly<Record<string, CallArgValue>>;
  /** Config key path, e.g. `safety.safe_state.setpoints[1]`, for start-up diagnostics. */
  readonly path: string;
}

/** Alarm severity: hi/lo raise MINOR, hihi/lolo MAJOR (`alarm_when` alarms choose with `level`). */
export type AlarmLevel = "MINOR" | "MAJOR";
export const ALARM_LEVELS: readonly AlarmLevel[] = ["MINOR", "MAJOR"];
/** What a raise does besides being reported: nothing, mode FAULT, or the e-stop. */
export type AlarmAction = "none" | "fault" | "estop";
export const ALARM_ACTIONS: readonly AlarmAction[] = ["none", "fault", "estop"];
/** A stale, unavailable or faulty input: an alarm itself (default, fail safe) or ignored. */
export type BadQualityPolicy = "alarm" | "ignore";
export const BAD_QUALITY_POLICIES: readonly BadQualityPolicy[] = ["alarm", "ignore"];

/** Bound on configured alarms (`alarms:` entries). */
export const MAX_ALARMS = 1000;
/** Bound on configured interlocks (`interlocks:` entries). */
export const MAX_INTERLOCKS = 256;
/** Bound on the `block` entries of one interlock. */
export const MAX_INTERLOCK_BLOCK_ENTRIES = 64;
/** Bound on `alarms[].delay_ms` (1 hour). */
export const MAX_ALARM_DELAY_MS = 3_600_000;
/** Bound on the characters of an alarm's or an interlock's `message`. */
export const MAX_ALARM_MESSAGE_LENGTH = 256;
/**
 * Alarm and interlock ids: what a URL path segment carries unescaped, at most 64 characters, not
 * starting with a dot (`.` and `..` are path segments of their own).
 */
export const ALARM_ID_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/;
/**
 * Bound on the characters (code points) of `automation.parameters[].name`: 64, as an alarm's,
 * an interlock's or a token's name (ALARM_ID_PATTERN, TOKEN_NAME_PATTERN). Every message about a
 * parameter (a set's refusal, a reload's change of the recipe, an AUTO entry it refuses) names it
 * whole, quoted; a longer name is refused by the loader (--check-config, start-up, a reload).
 */
export const MAX_PARAMETER_NAME_CHARS = 64;

/** The numeric limits of an alarm; any subset (ordered lolo < lo < hi < hihi). */
export interface AlarmLimits {
  readonly hihi?: number;
  readonly hi?: number;
  readonly lo?: number;
  readonly lolo?: number;
}

/** One `alarms:` entry. */
export interface AlarmConfig {
  readonly id: string;
  /** `provider/device/signal` as written. */
  readonly signal: string;
  readonly providerId: string;
  readonly deviceId: string;
  readonly signalId: string;
  /** Numeric limits (empty for an `alarm_when` alarm). */
  readonly limits: AlarmLimits;
  /** The bool or string value that raises a discrete alarm; undefined for a limit alarm. */
  readonly alarmWhen?: boolean | string;
  /** Level an `alarm_when` alarm raises (default MAJOR); unused for limit alarms. */
  readonly level: AlarmLevel;
  /** How far back inside a limit the value must come before the alarm clears (>= 0). */
  readonly hysteresis: number;
  /** How long the condition must hold before the alarm raises. */
  readonly delayMs: number;
  readonly onBadQuality: BadQualityPolicy;
  readonly action: AlarmAction;
  /** Operator text ("" when not given). */
  readonly message: string;
  /** Config key path, e.g. `alarms[2]`. */
  readonly path: string;
}

/** One `interlocks[].block` entry: a function of a device, or every actuating function (`*`). */
export interface InterlockBlock {
  /** As written: `provider/device/function_name` or `provider/device/*`. */
  readonly handle: string;
  readonly providerId: string;
  readonly deviceId: string;
  /** A function name, or `*`. */
  readonly functionName: string;
}

/** One `interlocks:` entry. */
export interface InterlockConfig {
  readonly id: string;
  readonly block: readonly InterlockBlock[];
  /** The condition as written (`while:`). */
  readonly conditionText: string;
  readonly condition: ConditionNode;
  /** Every signal the condition reads, each once. */
  readonly signals: readonly ConditionSignal[];
  readonly message: string;
  /** Config key path, e.g. `interlocks[0]`. */
  readonly path: string;
}

export interface HookConfig {
  /** A mode or "*" (an empty YAML value is normalised to "*"). */
  readonly from: RuntimeMode | "*";
  readonly to: RuntimeMode | "*";
  /** Default true. */
  readonly failOnError: boolean;
  readonly calls: readonly CallConfig[];
  readonly path: string;
}

export interface ParameterConfig {
  readonly name: string;
  readonly type: ParameterType;
  readonly default: number | boolean | string;
  readonly min?: number;
  readonly max?: number;
  /** Only for string parameters; empty = no restriction. */
  readonly allowedValues: readonly string[];
}

export interface RestartPolicyConfig {
  readonly enabled: boolean;
  readonly maxAttempts: number;
  readonly backoffMs: readonly number[];
  readonly timeoutMs: number;
  readonly successResetMs: number;
}

/**
 * Bound on configured providers (`providers:` entries). Each is a child process with three pipes
 * and its own supervision, poll plans and health entry: the runtime is measured with up to 50 (the
 * bench's largest rig), and sized for more. The HTTP server keeps 64 + 4 descriptors per provider
 * free (HTTP_RESERVED_FDS_BASE, HTTP_RESERVED_FDS_PER_PROVIDER): 128 providers take 576 of
 * systemd's default soft limit of 1024, leaving the default 128 connections their room. Spawns are
 * paced one per loop turn (15-50 ms each on a loaded 2-core machine, at most half of the loop's
 * time): 128 providers spawn in some 4-13 s, within the default `runtime.startup_timeout_ms`
 * (30 s). A configuration with more providers is refused, as `--check-config` says.
 */
export const MAX_PROVIDERS = 128;

export interface ProviderConfig {
  readonly id: string;
  /** As written; when it contains `/` it is resolved against the config file's folder. */
  readonly command: string;
  readonly args: readonly string[];
  readonly timeoutMs: number;
  readonly helloTimeoutMs: number;
  readonly readyTimeoutMs: number;
  readonly restartPolicy: RestartPolicyConfig;
}

/**
 * What an API client may do (README "Roles"): `viewer` reads (GET routes, the event stream,
 * /metrics) and may trigger the e-stop; `operator` also acts (calls, mode, parameters, runs and
 * markers, alarm ack/shelve, e-stop clear); `admin` may do everything. Ordered lowest first.
 */
export type TokenRole = "viewer" | "operator" | "admin";
export const TOKEN_ROLES: readonly TokenRole[] = ["viewer", "operator", "admin"];

/** Most entries in `http.tokens` (every request compares its token against all of them). */
export const MAX_API_TOKENS = 64;
/** A token shorter than this is warned about by --check-config (it can be guessed). */
export const MIN_RECOMMENDED_TOKEN_CHARS = 16;
/**
 * The longest token a client can send (unsendableToken): the server reads at most 64 KiB of request
 * headers over HTTP/1.1 (a longer Authorization header is answered 400, every time), and a proxy
 * may read less (nginx: 8 KiB a header line by default); real tokens are 32 to 64 characters.
 */
export const MAX_TOKEN_CHARS = 8192;
/** `http.tokens[].name`: 1 to 64 letters, digits, `_`, `.` or `-`, not starting with `.`. */
export const TOKEN_NAME_PATTERN = /^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$/;
/**
 * What every `http.tokens[].token_env` variable name starts with: the single binary may read only
 * the environment variables it was compiled for, and `RUNTIME_TOKEN_*` is among them (deno.json
 * compile tasks), so named tokens come from variables such as RUNTIME_TOKEN_WALL_DASHBOARD.
 */
export const TOKEN_ENV_PREFIX = "RUNTIME_TOKEN_";
/** `http.tokens[].token_env`: TOKEN_ENV_PREFIX followed by 1 to 64 letters, digits or `_`. */
export const TOKEN_ENV_PATTERN = /^RUNTIME_TOKEN_[A-Za-z0-9_]{1,64}$/;
/**
 * Names a named token may not take: they already name who a request acts as (`default` is the
 * single `http.auth_token` / RUNTIME_API_TOKEN, `local` a loopback-exempt request, `anonymous`
 * any request while auth is off).
 */
export const RESERVED_TOKEN_NAMES: readonly string[] = ["default", "local", "anonymous"];

/** One entry of `http.tokens`. */
export interface ApiTokenConfig {
  readonly name: string;
  readonly role: TokenRole;
  /** The token as written in YAML ("" when it comes from `tokenEnv`). */
  readonly token: string;
  /** Environment variable holding the token, read at start-up ("" when `token` is given). */
  readonly tokenEnv: string;
}

/**
 * An `http.tokens` entry left out because no client can send its token (unsendableToken): only a
 * warning in a file with auth off. `why` never holds the token.
 */
export interface UnsendableTokenEntry {
  readonly name: string;
  readonly why: string;
}

export interface HttpConfig {
  readonly enabled: boolean;
  readonly bind: string;
  readonly port: number;
  readonly corsAllowedOrigins: readonly string[];
  readonly corsAllowCredentials: boolean;
  /**
   * Extra host names (optionally `name:port`, lower case) a loopback-bound API answers for, on
   * top of `localhost`, 127.0.0.0/8 and `[::1]`; also the names a same-origin request may use.
   */
  readonly allowedHosts: readonly string[];
  /** Bound on concurrently handled requests (Deno has no worker threads to size). */
  readonly threadPoolSize: number;
  readonly authEnabled: boolean;
  /** From YAML only; RUNTIME_API_TOKEN (read at start-up) takes precedence. */
  readonly authToken: string;
  readonly authExemptLoopback: boolean;
  /** Named tokens with roles (besides the single token above, which acts as admin `default`). */
  readonly tokens: readonly ApiTokenConfig[];
  /**
   * Entries of `http.tokens` left out as no client can send their token (absent when none): a
   * reload while the running API authenticates refuses the token sections for them.
   */
  readonly unsendableTokens?: readonly UnsendableTokenEntry[];
  readonly allowInsecureBind: boolean;
  /** Absolute paths (resolved against the config folder) or null. */
  readonly tlsCertPath: string | null;
  readonly tlsKeyPath: string | null;
  /** Serve an expired or not-yet-valid certificate (warned) instead of refusing to start. */
  readonly tlsAllowExpiredCert: boolean;
  /** Bound on open connections (idle ones are evicted first at the limit). */
  readonly maxConnections: number;
  /** Accept (HTTPS: and TLS handshake) to the first request's complete headers. */
  readonly requestHeaderTimeoutMs: number;
  /** An idle kept-alive connection is closed after this; a streaming response is never idle. */
  readonly keepAliveTimeoutMs: number;
  /** Serve the operator console (static page over the /v0 API) at `/` and its asset paths. */
  readonly consoleEnabled: boolean;
  /** Serve Prometheus metrics at /metrics (same auth rules as /v0). */
  readonly metricsEnabled: boolean;
}

export interface InfluxConfig {
  readonly url: string;
  readonly org: string;
  readonly bucket: string;
  /** From YAML; INFLUXDB_TOKEN fills it at start-up when empty. */
  readonly token: string;
  readonly batchSize: number;
  readonly flushIntervalMs: number;
  readonly maxRetryBufferSize: number;
  readonly queueSize: number;
}

/**
 * The smallest `sparkplug.max_message_bytes`: below it an NBIRTH (the node metrics alone, some
 * 300 bytes of payload plus the topic) may not fit, and a broker bound that small is a mistake.
 */
export const MIN_SPARKPLUG_MESSAGE_BYTES = 1024;
/**
 * The largest MQTT 3.1.1 packet as Mosquitto counts it against max_packet_size: the fixed
 * header's first byte plus the largest remaining length (268435455).
 */
export const MAX_MQTT_PACKET_BYTES = 268435456;
/** The environment variables the Sparkplug broker credentials come from (never the file). */
export const SPARKPLUG_USERNAME_ENV = "SPARKPLUG_USERNAME";
export const SPARKPLUG_PASSWORD_ENV = "SPARKPLUG_PASSWORD";

/** The opt-in Sparkplug B edge node (`sparkplug:`, docs/sparkplug.md). */
export interface SparkplugConfig {
  readonly enabled: boolean;
  /** `mqtt://` or `mqtts://`, without user information ("" when off and not given). */
  readonly brokerUrl: string;
  readonly groupId: string;
  /** As written; "" means `runtime.name` (sparkplugIds() resolves it). */
  readonly edgeNodeId: string;
  /** As written; "" means `<group_id>-<edge node id>` (sparkplugIds() resolves it). */
  readonly clientId: string;
  /**
   * The primary host application whose STATE the edge node follows (`spBv1.0/STATE/<id>`): no
   * births until it is online, NDEATH and a new session when it goes offline. "" = none.
   */
  readonly primaryHostId: string;
  readonly keepAliveS: number;
  /**
   * MQTT QoS of NDATA and DDATA: 0 as Sparkplug B 3.0 requires; 1 (warned at load) is the
   * operator's deviation for acknowledged data writes.
   */
  readonly qos: 0 | 1;
  readonly connectTimeoutMs: number;
  readonly reconnectMs: number;
  /**
   * The broker's packet size bound (`max_message_bytes`, counted as Mosquitto counts
   * max_packet_size: 1 + the remaining length), or null for none: no message beyond it is
   * published.
   */
  readonly maxMessageBytes: number | null;
  /** Absolute paths (resolved against the config folder) or null. */
  readonly tls: {
    readonly caPath: string | null;
    readonly certPath: string | null;
    readonly keyPath: string | null;
  };
  /** DCMD writes and an NCMD e-stop become routed calls (origin `sparkplug`). */
  readonly commands: boolean;
  /** The role commands act with. */
  readonly role: TokenRole;
  /** Bounds of the store-and-forward queue (messages kept while the broker is unreachable). */
  readonly storeForward: { readonly maxMessages: number; readonly maxBytes: number };
}

/**
 * The edge node id and MQTT client id in effect: the ones written, else derived from
 * `runtime.name` (kept unresolved in the Config, so renaming the runtime is one change).
 */
export function sparkplugIds(
  c: { readonly runtime: { readonly name: string }; readonly sparkplug: SparkplugConfig },
): { edgeNodeId: string; clientId: string } {
  const edgeNodeId = c.sparkplug.edgeNodeId || c.runtime.name;
  return { edgeNodeId, clientId: c.sparkplug.clientId || `${c.sparkplug.groupId}-${edgeNodeId}` };
}

/** The whole, validated, immutable configuration with defaults merged. */
export interface Config {
  /** Absolute path of the YAML file and its folder. */
  readonly configPath: string;
  readonly configDir: string;
  readonly runtime: {
    readonly name: string;
    readonly shutdownTimeoutMs: number;
    readonly startupTimeoutMs: number;
    /** Absolute; default `anolis-data` under the working directory. */
    readonly dataDir: string;
  };
  readonly http: HttpConfig;
  readonly providers: readonly ProviderConfig[];
  readonly polling: { readonly intervalMs: number };
  readonly telemetry: {
    readonly enabled: boolean;
    readonly healthIntervalMs: number;
    /** Measurement names written; default `runtime`. */
    readonly measurementNames: MeasurementNaming;
    readonly influxdb: InfluxConfig;
  };
  readonly logging: { readonly level: LogLevel };
  readonly automation: {
    readonly enabled: boolean;
    /** Absolute path of the behavior tree, or null when unset. */
    readonly behaviorTree: string | null;
    readonly tickRateHz: number;
    readonly manualGatingPolicy: "BLOCK" | "OVERRIDE";
    readonly parameters: readonly ParameterConfig[];
    readonly modeTransitionHooks: {
      readonly beforeTransition: readonly HookConfig[];
      readonly afterTransition: readonly HookConfig[];
    };
  };
  readonly safety: {
    /** Whether a `safety:` section was written (an explicit one, even empty, disables adoption). */
    readonly present: boolean;
    readonly safeState: {
      readonly hooks: readonly CallConfig[];
      readonly setpoints: readonly CallConfig[];
      readonly zeroIsSafe: boolean;
      /** What the safe state must read back as after an e-stop (verification). */
      readonly expect: readonly SafeStateExpectation[];
      /** How long verification may take before it reports mismatch/unreachable. */
      readonly verifyTimeoutMs: number;
    };
  };
  readonly health: {
    readonly staleness: { readonly warnAfterMs: number; readonly staleAfterMs: number };
  };
  /** Audit trail journal bounds (`<data_dir>/audit/`, docs/http-api.md "Audit trail"). */
  readonly audit: {
    /** A journal file that would grow past this is closed and the next one begun. */
    readonly maxFileBytes: number;
    /** Journal files kept, the current one included; the oldest is removed. */
    readonly maxFiles: number;
  };
  /** Run record bounds (`<data_dir>/runs/`, docs/http-api.md "Runs"). */
  readonly runs: {
    /**
     * Bytes an open run's event file may reach: past it automatic events are counted, not
     * recorded, and markers are refused (the run_closed event is always written).
     */
    readonly maxRunBytes: number;
    /** Closed runs kept; the oldest go first (record and event file). */
    readonly maxRuns: number;
    /** Bytes of the closed runs' event files together; the oldest go first (never the newest). */
    readonly maxTotalBytes: number;
  };
  /** On-board history: full-rate ring, decimated disk tier, incidents (docs/history.md). */
  readonly history: HistoryConfig;
  /** Alarm limits on signals, evaluated after every poll in every mode (docs/alarms.md). */
  readonly alarms: readonly AlarmConfig[];
  /** Conditions that refuse calls to functions while they hold (docs/alarms.md). */
  readonly interlocks: readonly InterlockConfig[];
  /** The Sparkplug B edge node (off by default). */
  readonly sparkplug: SparkplugConfig;
}

/** `history:` (docs/history.md). */
export interface HistoryConfig {
  /** false: no ring, no disk tier, no incidents (GET /v0/history answers 503). */
  readonly enabled: boolean;
  /** How far back the full-rate ring in memory reaches (seconds). */
  readonly memorySeconds: number;
  /** Bytes the ring may allocate at most; past it the oldest samples go first. */
  readonly memoryMaxBytes: number;
  /** The disk tier's bucket (ms): min, max, last, count, worst quality per signal per bucket. */
  readonly stepMs: number;
  /** Bytes the disk tier's files under `<data_dir>/history/` may take; 0: no disk tier. */
  readonly diskMaxBytes: number;
  /** Seconds of full-rate samples an incident keeps from before its trigger. */
  readonly incidentBeforeS: number;
  /** Seconds of full-rate samples an incident keeps from after its trigger. */
  readonly incidentAfterS: number;
  /** Incident records kept at most (the oldest is removed). */
  readonly incidentMaxCount: number;
  /** Bytes the incident records may take at most (the oldest are removed). */
  readonly incidentMaxBytes: number;
}

/** One finding of the loader: a position in the file, a key path and a message. */
export interface Diagnostic {
  readonly severity: "error" | "warning";
  /** Dotted key path, e.g. `providers[1].restart_policy.backoff_ms`; "" for the whole file. */
  readonly path: string;
  readonly message: string;
  /** 1-based; 0 when unknown. */
  readonly line: number;
  readonly column: number;
  /** File the diagnostic is about (the config file, or a behavior-tree file). */
  readonly file: string;
}
