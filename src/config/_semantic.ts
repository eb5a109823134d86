/**
 * Semantic layer: reads the plain YAML data section by section into the typed `Config`, merging
 * defaults explicitly and applying every key's bounds (examples/full.yaml states each) and every
 * cross-field rule.
 */
import {
  DERIVED_WARN_CYCLES,
  DERIVED_WARN_MIN_MS,
  derivedWarnAfterMs,
  DEVICE_DOWN_AFTER_POLLS,
  DEVICE_DOWN_MIN_MS,
  deviceDownAfterMs,
  httpUrlProblem,
  isLoopbackHost,
  LOG_LEVELS,
  quoteProviderText,
  quoteUrl,
  requestConnectionsShort,
  resolvePath,
} from "../common/mod.ts";
import { type Checker, type Obj, present } from "./_checker.ts";
import { readAlarms, readInterlocks } from "./_alarms.ts";
import {
  type CallContext,
  readCalls,
  readExpectations,
  readHooks,
  readParameters,
} from "./_calls.ts";
import type { Path, YamlSource } from "./_source.ts";
import { readTokens, unsendableToken } from "./_tokens.ts";
import type {
  Config,
  HttpConfig,
  InfluxConfig,
  ProviderConfig,
  RestartPolicyConfig,
  SparkplugConfig,
  UnsendableTokenEntry,
} from "./types.ts";
import {
  MAX_MQTT_PACKET_BYTES,
  MAX_PROVIDERS,
  MEASUREMENT_NAMINGS,
  MIN_SPARKPLUG_MESSAGE_BYTES,
  RUNS_LIMITS,
  SPARKPLUG_PASSWORD_ENV,
  SPARKPLUG_USERNAME_ENV,
  TOKEN_ROLES,
  VERIFY_TIMEOUT_DEFAULT_MS,
  VERIFY_TIMEOUT_MAX_MS,
  VERIFY_TIMEOUT_MIN_MS,
} from "./types.ts";

/** What the semantic layer needs from the outside world (injected; no Deno.* here). */
export interface SemanticContext {
  readonly checker: Checker;
  readonly source: YamlSource;
  readonly mode: "check" | "start";
  /** `--check-config --strict`: what the checking machine lacks is an error. */
  readonly strict: boolean;
  readonly env: {
    readonly RUNTIME_API_TOKEN?: string | undefined;
    readonly INFLUXDB_TOKEN?: string | undefined;
  };
  /**
   * The value of the environment variable an `http.tokens[].token_env` names (undefined when
   * unset). Absent: every such variable counts as unset.
   */
  readonly secretEnv?: (name: string) => string | undefined;
  readonly fileExists: (absPath: string) => boolean;
  /** What is at a path that is not a regular file ("a directory", ...); null when nothing is. */
  readonly pathKind?: (absPath: string) => string | null;
  /** The permission bits of the regular file at a path; null when unknown. */
  readonly fileMode?: (absPath: string) => number | null;
  readonly commandExists: (command: string) => boolean;
  /**
   * Why the file system gave no answer in time about a path ("path") or a bare command's PATH
   * lookup ("command"); null when it answered. Absent: every question answered.
   */
  readonly unanswered?: (kind: "path" | "command", name: string) => string | null;
  readonly cwd: string;
  readonly configPath: string;
  readonly configDir: string;
}

const ROOT_KEYS = [
  "runtime",
  "http",
  "providers",
  "polling",
  "telemetry",
  "logging",
  "automation",
  "safety",
  "health",
  "audit",
  "runs",
  "history",
  "alarms",
  "interlocks",
  "sparkplug",
] as const;
const RUNTIME_KEYS = ["name", "shutdown_timeout_ms", "startup_timeout_ms", "data_dir", "mode"];
const HTTP_KEYS = [
  "enabled",
  "bind",
  "port",
  "cors_allowed_origins",
  "cors_allow_credentials",
  "allowed_hosts",
  "thread_pool_size",
  "auth_enabled",
  "auth_token",
  "auth_exempt_loopback",
  "tokens",
  "allow_insecure_bind",
  "tls_cert_path",
  "tls_key_path",
  "tls_allow_expired_cert",
  "max_connections",
  "request_header_timeout_ms",
  "keep_alive_timeout_ms",
  "console_enabled",
  "metrics_enabled",
];
const PROVIDER_KEYS = [
  "id",
  "command",
  "args",
  "timeout_ms",
  "hello_timeout_ms",
  "ready_timeout_ms",
  "restart_policy",
];
const RESTART_KEYS = ["enabled", "max_attempts", "backoff_ms", "timeout_ms", "success_reset_ms"];
const INFLUX_KEYS = [
  "url",
  "org",
  "bucket",
  "token",
  "batch_size",
  "flush_interval_ms",
  "max_retry_buffer_size",
  "queue_size",
];
/**
 * The shortest telemetry.influxdb.flush_interval_ms: the writer flushes no more often (a shorter
 * one was raised to it silently). Refused below it, with its line.
 */
export const MIN_FLUSH_INTERVAL_MS = 10;
/** Deprecated flat telemetry keys and the nested key each one stands for. */
const FLAT_TELEMETRY_ALIASES: Readonly<Record<string, string>> = {
  influx_url: "url",
  influx_org: "org",
  influx_bucket: "bucket",
  influx_token: "token",
  batch_size: "batch_size",
  flush_interval_ms: "flush_interval_ms",
};
const TELEMETRY_KEYS = [
  "enabled",
  "health_interval_ms",
  "measurement_names",
  "influxdb",
  ...Object.keys(FLAT_TELEMETRY_ALIASES),
];
const AUTOMATION_KEYS = [
  "enabled",
  "behavior_tree",
  "behavior_tree_path",
  "tick_rate_hz",
  "manual_gating_policy",
  "parameters",
  "mode_transition_hooks",
];

/** Builds the typed configuration from the root mapping, recording diagnostics on the checker. */
export function readConfig(root: Obj, ctx: SemanticContext): Config {
  const c = ctx.checker;
  c.knownKeys(root, [], ROOT_KEYS);
  const providers = readProviders(root, ctx);
  const callCtx: CallContext = {
    checker: c,
    source: ctx.source,
    providerIds: new Set(providers.map((p) => p.id)),
  };
  const polling = c.mapping(root.polling, ["polling"]) ?? {};
  c.knownKeys(polling, ["polling"], ["interval_ms"]);
  const logging = c.mapping(root.logging, ["logging"]) ?? {};
  c.knownKeys(logging, ["logging"], ["level"]);
  const runtime = readRuntime(root, ctx);
  const config: Config = {
    configPath: ctx.configPath,
    configDir: ctx.configDir,
    runtime,
    http: readHttp(root, ctx),
    providers,
    polling: { intervalMs: c.integer(polling, ["polling"], "interval_ms", 500, { min: 100 }) },
    telemetry: readTelemetry(root, ctx),
    logging: { level: c.oneOf(logging, ["logging"], "level", LOG_LEVELS, "info") },
    automation: readAutomation(root, ctx, callCtx),
    safety: readSafety(root, callCtx),
    health: readHealth(root, c),
    audit: readAudit(root, c),
    runs: readRuns(root, c),
    history: readHistory(root, c),
    alarms: readAlarms(callCtx, root.alarms, ["alarms"]),
    interlocks: readInterlocks(callCtx, root.interlocks, ["interlocks"]),
    sparkplug: readSparkplug(root, ctx, runtime.name),
  };
  checkLossDetection(config, c);
  checkStaleBelowPollPeriod(config, c);
  checkWarnBelowPollPeriod(config, c);
  checkNoWarningStage(config, c);
  return config;
}

/**
 * Whether polling.interval_ms is in error, or the polling section that holds it (not a mapping):
 * the interval read then is the default, not the file's, and a staleness warning judged against
 * it would name figures the file does not give.
 */
function intervalInError(c: Checker): boolean {
  return c.hasErrorAt(["polling"]) || c.hasErrorAt(["polling", "interval_ms"]);
}

/**
 * A configured health.staleness.stale_after_ms at or below polling.interval_ms: no device is
 * polled more often than the interval (state/staleness.ts devicePollPeriodMs), so a sample is
 * about that old just before its next poll and goes STALE between polls even when every read
 * succeeds. A warning, not an error: the runtime runs as configured (someone may want it).
 */
function checkStaleBelowPollPeriod(config: Config, c: Checker): void {
  const staleAfterMs = config.health.staleness.staleAfterMs;
  const intervalMs = config.polling.intervalMs;
  const key = ["health", "staleness", "stale_after_ms"];
  if (staleAfterMs === 0 || staleAfterMs > intervalMs) return;
  if (c.hasErrorAt(key) || intervalInError(c)) return;
  c.warning(
    key,
    `is not longer than polling.interval_ms (${staleAfterMs} <= ${intervalMs}), the shortest ` +
      "period a device is polled at: a sample is about that old just before its next poll, so " +
      "every device, and every signal whose provider declares no longer stale_after_ms, goes " +
      "STALE between polls even when its reads succeed (interlocks on them engage and release " +
      "every poll, alarms with on_bad_quality: alarm raise); set it above the interval (twice " +
      `it, ${2 * intervalMs}, leaves each poll's own time a margin) or to 0 to derive it`,
  );
}

/**
 * A configured health.staleness.warn_after_ms at or below polling.interval_ms, under a stale
 * bound that is not itself warned about (checkStaleBelowPollPeriod) or in error: as there, a
 * device's last answered poll is about an interval old just before its next, so every device's
 * health reads WARNING between polls even when every read succeeds (the poll period is capped at
 * half the bound so that a device never WARNs between polls, but never below the interval). A
 * warning, not an error: the runtime runs as configured.
 */
function checkWarnBelowPollPeriod(config: Config, c: Checker): void {
  const { warnAfterMs, staleAfterMs } = config.health.staleness;
  const intervalMs = config.polling.intervalMs;
  const key = ["health", "staleness", "warn_after_ms"];
  if (warnAfterMs === 0 || warnAfterMs > intervalMs) return;
  if (staleAfterMs !== 0 && staleAfterMs <= intervalMs) return; // said of stale_after_ms
  if (
    c.hasErrorAt(key) || c.hasErrorAt(["health", "staleness", "stale_after_ms"]) ||
    intervalInError(c)
  ) return;
  // Twice the interval leaves each poll's own time a margin, unless that is not under the
  // configured stale bound (warn_after_ms must stay below it).
  const twice = 2 * intervalMs;
  const above = staleAfterMs === 0 || twice < staleAfterMs
    ? `above the interval (twice it, ${twice}, leaves each poll's own time a margin)`
    : `above the interval and below stale_after_ms (${staleAfterMs})`;
  c.warning(
    key,
    `is not longer than polling.interval_ms (${warnAfterMs} <= ${intervalMs}), the shortest ` +
      "period a device is polled at: its last answered poll is about that old just before its " +
      "next, so every device's health reads WARNING between polls even when its reads succeed; " +
      `set it ${above} or to 0 to derive it`,
  );
}

/**
 * A configured health.staleness.stale_after_ms (longer than polling.interval_ms: not warned about
 * by checkStaleBelowPollPeriod) with warn_after_ms 0, "derive it": the derived warn bound,
 * max(3 x polling.interval_ms x the provider's devices, 2000) (common/liveness_bounds.ts
 * derivedWarnAfterMs, as state/staleness.ts stalenessBounds derives it), never exceeds the stale
 * bound, so with a stale bound at or below its least value, max(3 x interval, 2000), every
 * device's warn bound is its stale bound and its health goes from OK to STALE with no WARNING
 * stage. 0 derives a warn bound, it does not ask for none: a warning (the runtime runs as
 * configured) naming a warn_after_ms that keeps the stage. A device whose cycle is longer (more
 * devices, slower poll hints: known only once its provider lists them) is said by the state cache
 * at inventory (state/state_cache.ts, no WARNING stage).
 */
function checkNoWarningStage(config: Config, c: Checker): void {
  const { warnAfterMs, staleAfterMs } = config.health.staleness;
  const intervalMs = config.polling.intervalMs;
  const key = ["health", "staleness", "stale_after_ms"];
  if (warnAfterMs !== 0 || staleAfterMs === 0 || staleAfterMs <= intervalMs) return;
  // The least cycle: one device, polled every interval (common/liveness_bounds.ts).
  const leastDerivedWarnMs = derivedWarnAfterMs(intervalMs);
  if (staleAfterMs > leastDerivedWarnMs) return;
  if (
    c.hasErrorAt(key) || c.hasErrorAt(["health", "staleness", "warn_after_ms"]) ||
    intervalInError(c)
  ) return;
  // A warn bound above the interval (checkWarnBelowPollPeriod) and below the stale bound: twice
  // the interval when that is under it, else halfway between the two; none when they are 1 apart.
  const twice = 2 * intervalMs;
  const fix = staleAfterMs - intervalMs < 2
    ? `raise stale_after_ms and set warn_after_ms between polling.interval_ms and it to keep one`
    : `set warn_after_ms above polling.interval_ms and below stale_after_ms (${
      twice < staleAfterMs ? twice : Math.floor((intervalMs + staleAfterMs) / 2)
    }, say) to keep one`;
  c.warning(
    key,
    `leaves devices no WARNING stage: warn_after_ms is 0, derived as max(${DERIVED_WARN_CYCLES} ` +
      `x polling.interval_ms x the provider's devices, ${DERIVED_WARN_MIN_MS}), at least ` +
      `${leastDerivedWarnMs} here, ` +
      `and never above stale_after_ms (${staleAfterMs}), so every device's health goes from OK ` +
      `to STALE without WARNING; ${fix}`,
  );
}

/** The history keys checkLossDetection reads (and history itself: not a mapping). */
const LOSS_HISTORY_KEYS = ["enabled", "memory_seconds", "incident_before_s", "incident_after_s"];

/** Whether a key checkLossDetection reads of history is in error (read at its default then). */
function lossHistoryInError(c: Checker): boolean {
  return c.hasErrorAt(["history"]) || LOSS_HISTORY_KEYS.some((k) => c.hasErrorAt(["history", k]));
}

/**
 * A device loss is found once the device's reads have failed for deviceDownAfterMs, and its
 * incident is read from the ring then (or incident_after_s after its date, whichever is later):
 * a delay longer than memory_seconds - incident_before_s leaves part of the window outside the
 * ring (its record is clamped to what the ring holds: history/incidents.ts). A loss found after
 * its window gives a machine-wide trigger joining it (the device-loss latch's FAULT entry, an
 * e-stop) an incident_after_s of its own (Pending.resumed): the record is read that much later
 * still, so the ring must hold incident_before_s + the delay + incident_after_s. The delay
 * depends on polling.interval_ms alone (not on the providers' poll hints, which only space the
 * reads): it is known here. Beyond what the incident_before_s + incident_after_s warning says.
 */
function checkLossDetection(config: Config, c: Checker): void {
  const h = config.history;
  if (!h.enabled) return;
  // The interval read then is the default, not the file's: a delay judged from it would name a
  // figure the file does not give, beside the error that says what is wrong with polling. So
  // would a history key read at its default (or history itself, all of them).
  if (intervalInError(c) || lossHistoryInError(c)) return;
  const delayMs = deviceDownAfterMs(config.polling.intervalMs);
  // Read after the window: as for any trigger. Found at exactly incident_after_s it is found after
  // its window (history/incidents.ts Pending.endedMs): a trigger joining it has a window of its own.
  if (delayMs < h.incidentAfterS * 1000) return;
  const excessMs = h.incidentBeforeS * 1000 + delayMs - h.memorySeconds * 1000;
  const joinedExcessMs = excessMs + h.incidentAfterS * 1000;
  if (joinedExcessMs <= 0) return;
  const found = `a device that drops out is found down ${delayMs / 1000} s after its first ` +
    `failed read (max(${DEVICE_DOWN_MIN_MS} ms, ${DEVICE_DOWN_AFTER_POLLS} x polling.interval_ms))`;
  const joined = "an e-stop or the device-loss latch's FAULT entry joining its incident has an " +
    "incident_after_s of its own, its record read that much later";
  const fix = "lower polling.interval_ms or raise history.memory_seconds";
  if (excessMs > 0) {
    c.warning(
      ["polling", "interval_ms"],
      `${found}, when its device-loss incident is recorded: history.incident_before_s + that ` +
        `delay exceeds history.memory_seconds (${h.incidentBeforeS} + ${delayMs / 1000} > ` +
        `${h.memorySeconds}), so the ring no longer holds the oldest ${excessMs / 1000} s of the ` +
        `record's window (${joinedExcessMs / 1000} s when ${joined}); ${fix}`,
    );
    return;
  }
  c.warning(
    ["polling", "interval_ms"],
    `${found}, after its incident_after_s: ${joined}: history.incident_before_s + that delay + ` +
      `history.incident_after_s exceeds history.memory_seconds (${h.incidentBeforeS} + ` +
      `${delayMs / 1000} + ${h.incidentAfterS} > ${h.memorySeconds}), so the ring then no ` +
      `longer holds the oldest ${joinedExcessMs / 1000} s of the record's window; ${fix}`,
  );
}

function readRuntime(root: Obj, ctx: SemanticContext): Config["runtime"] {
  const c = ctx.checker;
  const P = ["runtime"];
  const r = c.mapping(root.runtime, P) ?? {};
  c.knownKeys(r, P, RUNTIME_KEYS);
  if ("mode" in r) {
    c.error(
      [...P, "mode"],
      "is not configurable; the runtime always starts in IDLE (use POST /v0/mode)",
    );
  }
  const dataDir = c.string(r, P, "data_dir", "");
  return {
    name: c.string(r, P, "name", ""),
    shutdownTimeoutMs: c.integer(r, P, "shutdown_timeout_ms", 2000, { min: 500, max: 30000 }),
    startupTimeoutMs: c.integer(r, P, "startup_timeout_ms", 30000, { min: 5000, max: 300000 }),
    dataDir: dataDir === ""
      ? resolvePath(ctx.cwd, "anolis-data")
      : resolvePath(ctx.configDir, dataDir),
  };
}

function readHttp(root: Obj, ctx: SemanticContext): HttpConfig {
  const c = ctx.checker;
  const P = ["http"];
  const h = c.mapping(root.http, P) ?? {};
  c.knownKeys(h, P, HTTP_KEYS);
  const enabled = c.boolean(h, P, "enabled", true);
  const bind = c.string(h, P, "bind", "127.0.0.1", true);
  const port = c.integer(h, P, "port", 8080, { min: 1, max: 65535, enforce: enabled });
  const threadPoolSize = c.integer(h, P, "thread_pool_size", 40, { min: 1, enforce: enabled });
  const corsAllowCredentials = c.boolean(h, P, "cors_allow_credentials", false);
  const origins = readOrigins(c, h, P, enabled);
  if (enabled && corsAllowCredentials && origins.includes("*")) {
    c.error(
      [...P, "cors_allowed_origins"],
      "`*` is not allowed with cors_allow_credentials: true (list the origins explicitly)",
    );
  }
  const allowedHosts = readAllowedHosts(c, h, P);
  const authEnabled = c.boolean(h, P, "auth_enabled", false);
  const authToken = c.string(h, P, "auth_token", "");
  const allowInsecureBind = c.boolean(h, P, "allow_insecure_bind", false);
  const tlsCertPath = readTlsPath(ctx, h, enabled, "tls_cert_path", "tls_key_path");
  const tlsKeyPath = readTlsPath(ctx, h, enabled, "tls_key_path", "tls_cert_path");
  const maxConnections = c.integer(h, P, "max_connections", 128, { min: 8, max: 100000 });
  const requestHeaderTimeoutMs = c.integer(h, P, "request_header_timeout_ms", 10000, {
    min: 1000,
    max: 120000,
  });
  const keepAliveTimeoutMs = c.integer(h, P, "keep_alive_timeout_ms", 30000, {
    min: 1000,
    max: 600000,
  });
  // Event streams hold connections of their own (at most half of them): what is left is what
  // requests have. (A bound the open-file limit lowers at start-up is checked again: HttpApi.)
  const short = requestConnectionsShort(maxConnections, threadPoolSize);
  if (enabled && short !== null) {
    c.warning([...P, "max_connections"], `${maxConnections} ${short.text}`);
  }
  const envToken = ctx.env.RUNTIME_API_TOKEN ?? "";
  // A token no client can send admits nobody while auth is on; while it is off tokens are ignored.
  const unsendableProblem = (path: Path, message: string) =>
    authEnabled ? c.error(path, message) : c.warning(path, message);
  const unsendable = unsendableToken(envToken !== "" ? envToken : authToken);
  if (unsendable !== null) {
    unsendableProblem(
      [...P, "auth_token"],
      `${
        envToken !== "" ? "RUNTIME_API_TOKEN (the token 'default')" : "token 'default'"
      } ${unsendable}`,
    );
  }
  // --check-config judges the file's own token too: a target without RUNTIME_API_TOKEN uses it.
  const overriddenToken = ctx.mode === "check" && envToken !== "" ? authToken : "";
  const overriddenUnsendable = overriddenToken === "" ? null : unsendableToken(overriddenToken);
  if (overriddenUnsendable !== null) {
    unsendableProblem(
      [...P, "auth_token"],
      `token 'default' ${overriddenUnsendable} (RUNTIME_API_TOKEN overrides it here; a start ` +
        "without that variable uses it)",
    );
  }
  const unsendableTokens: UnsendableTokenEntry[] = [];
  const tokens = readTokens(h, P, {
    checker: c,
    secretEnv: ctx.secretEnv ?? (() => undefined),
    environmentProblem: (path, message) => environmentProblem(ctx, path, message, "error"),
    defaultToken: envToken !== "" ? envToken : authToken,
    overriddenToken,
    unsendable: unsendableProblem,
    leftOut: (entry) => void unsendableTokens.push(entry),
  });
  // Entries with errors still count: the message about them is enough.
  const tokensGiven = Array.isArray(h.tokens) && h.tokens.length > 0;
  if (enabled && !authEnabled && tokens.length > 0) {
    c.warning(
      [...P, "tokens"],
      "are ignored while auth_enabled is false: every request acts as 'anonymous' with role admin",
    );
  }
  if (enabled) {
    if (authEnabled && authToken === "" && envToken === "" && !tokensGiven) {
      if (environmentSeverity(ctx, "error") === "warning") {
        c.warning(
          [...P, "auth_enabled"],
          "is true but auth_token is empty; the token may come from RUNTIME_API_TOKEN on the target",
        );
      } else {
        c.error(
          [...P, "auth_enabled"],
          "is true but no token is set: set RUNTIME_API_TOKEN or http.auth_token, or list " +
            "http.tokens",
        );
      }
    }
    const loopback = isLoopbackHost(bind);
    if (!loopback && !authEnabled && !allowInsecureBind) {
      c.error(
        [...P, "bind"],
        `${
          quoteProviderText(bind)
        } is not a loopback address and auth_enabled is false: anyone on the network ` +
          "could operate the machine (enable auth, or set allow_insecure_bind: true)",
      );
    }
    if (!loopback && authEnabled && (tlsCertPath === null || tlsKeyPath === null)) {
      c.warning(
        [...P, "bind"],
        `${
          quoteProviderText(bind)
        } is not a loopback address and TLS is off: the bearer token travels in ` +
          "plaintext (set tls_cert_path and tls_key_path, or terminate TLS in a reverse proxy)",
      );
    }
  }
  return {
    enabled,
    bind,
    port,
    corsAllowedOrigins: origins,
    corsAllowCredentials,
    allowedHosts,
    threadPoolSize,
    authEnabled,
    authToken,
    authExemptLoopback: c.boolean(h, P, "auth_exempt_loopback", true),
    tokens,
    ...(unsendableTokens.length > 0 ? { unsendableTokens } : {}),
    allowInsecureBind,
    tlsCertPath,
    tlsKeyPath,
    tlsAllowExpiredCert: c.boolean(h, P, "tls_allow_expired_cert", false),
    maxConnections,
    requestHeaderTimeoutMs,
    keepAliveTimeoutMs,
    consoleEnabled: c.boolean(h, P, "console_enabled", true),
    metricsEnabled: c.boolean(h, P, "metrics_enabled", true),
  };
}

/**
 * cors_allowed_origins: a string is a one-element list. Absent, null or `[]`: no origin gets CORS
 * headers (a former default of `*` let any web page read state, audit and runs of a loopback
 * runtime); the anolis workbench needs `cors_allowed_origins: http://localhost:3000`.
 */
function readOrigins(c: Checker, h: Obj, P: Path, enabled: boolean): readonly string[] {
  const path = [...P, "cors_allowed_origins"];
  const v = h.cors_allowed_origins;
  if (v === undefined || v === null) return [];
  if (typeof v === "string") {
    if (v === "" && enabled) {
      c.error(path, "must not be empty (leave the key out, or write [], for no CORS grant)");
    }
    if (v !== "") warnUnmatchableOrigin(c, path, v);
    return v === "" ? [] : [v];
  }
  if (!Array.isArray(v)) {
    c.error(path, "must be a string or a sequence of strings");
    return [];
  }
  const out: string[] = [];
  v.forEach((o, i) => {
    if (typeof o !== "string") c.error([...path, i], "must be a string");
    else if (o === "") c.error([...path, i], "must not be empty");
    else {
      warnUnmatchableOrigin(c, [...path, i], o);
      out.push(o);
    }
  });
  return out;
}

/**
 * Warns about a cors_allowed_origins entry that no browser's Origin ever matches: a browser sends
 * `scheme://host[:port]` in lower case, without a path and without the scheme's default port, and
 * entries are matched as text (`http://localhost:3000/` never matches, and the page is told to list
 * the origin that is listed). A one-star glob is judged with the star stood in for by a host label
 * or a port; `*` and `null` (what a sandboxed page sends) are left alone.
 */
function warnUnmatchableOrigin(c: Checker, path: Path, entry: string): void {
  if (entry === "*" || entry === "null") return;
  const star = entry.indexOf("*");
  const glob = star >= 0 && entry.lastIndexOf("*") === star;
  const forms = glob ? ["a", "1"].map((s) => entry.replace("*", s)) : [entry];
  if (forms.some((f) => URL.canParse(f) && new URL(f).origin === f)) return;
  const origin = URL.canParse(entry) ? new URL(entry).origin : "null";
  c.warning(
    path,
    `${quoteProviderText(entry)} never matches: a browser sends its Origin as ` +
      (glob || origin === "null"
        ? "scheme://host[:port]"
        : `${
          quoteProviderText(origin)
        } (scheme://host[:port], lower case, no path, no default port)`),
  );
}

/**
 * allowed_hosts: host names, optionally with `:port` (IPv6 in brackets); a string is a
 * one-element list. No scheme, path or wildcard: a wildcard would switch the DNS-rebinding
 * protection off.
 */
function readAllowedHosts(c: Checker, h: Obj, P: Path): readonly string[] {
  const path = [...P, "allowed_hosts"];
  const value = h.allowed_hosts;
  if (typeof value === "string") {
    if (HOST_ENTRY.test(value)) return [value.toLowerCase()];
    c.error(
      path,
      `${quoteProviderText(value)} is not a host name: write \`name\` or \`name:port\``,
    );
    return [];
  }
  const list = c.sequence(value, path);
  if (list === null) return [];
  const out: string[] = [];
  list.forEach((v, i) => {
    if (typeof v !== "string") {
      c.error([...path, i], "must be a string");
    } else if (!HOST_ENTRY.test(v)) {
      c.error(
        [...path, i],
        `${
          quoteProviderText(v)
        } is not a host name: write \`name\` or \`name:port\` (no scheme, path or wildcard)`,
      );
    } else {
      out.push(v.toLowerCase());
    }
  });
  return out;
}

/** `name`, `name:port`, `[v6]` or `[v6]:port`; a name is letters, digits, `-`, `_` and dots. */
const HOST_ENTRY =
  /^(?:[A-Za-z0-9_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * A TLS file key: both or neither; relative to the config folder; must exist at start-up when
 * the HTTP server is `enabled` (a start without one reads neither file, as sparkplug.tls).
 */
function readTlsPath(
  ctx: SemanticContext,
  h: Obj,
  enabled: boolean,
  key: string,
  other: string,
): string | null {
  const c = ctx.checker;
  const P = ["http"];
  const v = c.string(h, P, key, "");
  // Given with the wrong type, the other key has an error of its own: it is not "unset".
  const otherSet = present(h, other) && h[other] !== "";
  if (v === "") return null;
  if (!otherSet) c.error([...P, key], `is set but ${other} is not: TLS needs both or neither`);
  const abs = resolvePath(ctx.configDir, v);
  if (enabled && answered(ctx, [...P, key], "path", abs) && !ctx.fileExists(abs)) {
    // A build machine usually lacks the target's certificates; start-up cannot do without them.
    environmentProblem(ctx, [...P, key], notAFile(ctx, abs), "error");
  }
  return abs;
}

/**
 * How a problem of the checking machine rather than of the file is reported (a file, command or
 * token the configuration names is missing here): a warning under plain `--check-config`, since
 * pipelines validate configurations away from the machine they deploy to; an error under
 * `--check-config --strict`; `atStart` when the service starts.
 */
function environmentSeverity(
  ctx: SemanticContext,
  atStart: "error" | "warning",
): "error" | "warning" {
  if (ctx.mode === "start") return atStart;
  return ctx.strict ? "error" : "warning";
}

/**
 * Why no regular file is at `abs` (fileExists said so): nothing there, or what is there instead
 * (a directory, a FIFO, ...), so an operator is not sent looking for a file that "is not found".
 */
function notAFile(ctx: SemanticContext, abs: string): string {
  const kind = ctx.pathKind?.(abs) ?? null;
  return kind === null ? `file not found: ${abs}` : `is not a regular file: ${abs} is ${kind}`;
}

/**
 * Whether the file system answered about `name` (a path, or a bare command's PATH lookup) in
 * time; when it did not, an error at `path` says so, whatever the mode: what was not checked
 * cannot be taken for there (a reload is refused, the configuration in force kept).
 */
function answered(
  ctx: SemanticContext,
  path: Path,
  kind: "path" | "command",
  name: string,
): boolean {
  const why = ctx.unanswered?.(kind, name) ?? null;
  if (why === null) return true;
  ctx.checker.error(
    path,
    kind === "path"
      ? `cannot check ${quoteProviderText(name)}: ${why}`
      : `cannot look ${quoteProviderText(name)} up on PATH: ${why}`,
  );
  return false;
}

/** Reports an environment problem with environmentSeverity. */
function environmentProblem(
  ctx: SemanticContext,
  path: Path,
  message: string,
  atStart: "error" | "warning",
): void {
  if (environmentSeverity(ctx, atStart) === "error") ctx.checker.error(path, message);
  else ctx.checker.warning(path, message);
}

function readProviders(root: Obj, ctx: SemanticContext): ProviderConfig[] {
  const c = ctx.checker;
  const P = ["providers"];
  if (!present(root, "providers")) {
    c.error(P, "is required: declare at least one provider");
    return [];
  }
  const list = c.sequence(root.providers, P);
  if (list === null) return [];
  if (list.length === 0) c.error(P, "must have at least one provider");
  // The entries are still read: sections naming a provider resolve, and no error stands for this.
  if (list.length > MAX_PROVIDERS) {
    c.error(P, `has ${list.length} entries, at most ${MAX_PROVIDERS} (MAX_PROVIDERS)`);
  }
  const out: ProviderConfig[] = [];
  const firstById = new Map<string, number>();
  list.forEach((item, i) => {
    const pp = [...P, i];
    const p = c.mapping(item, pp, true);
    if (p === null) return;
    c.knownKeys(p, pp, PROVIDER_KEYS);
    const id = c.requiredString(p, pp, "id");
    if (id.includes("/")) {
      // A device handle is `provider/device`: an id with "/" makes every handle of it ambiguous.
      c.error(
        [...pp, "id"],
        `${quoteProviderText(id)} must not contain '/' (a device handle is provider/device)`,
      );
    } else if (id === "." || id === "..") {
      // As a device id (discovery skips those): a client resolves `/v0/state/./x` to
      // `/v0/state/x`, so no route could name the provider.
      c.error(
        [...pp, "id"],
        `${quoteProviderText(id)} cannot be a URL path segment (clients remove it from paths)`,
      );
    } else if (id !== "") {
      const first = firstById.get(id);
      if (first !== undefined) {
        c.error(
          [...pp, "id"],
          `duplicate provider id ${quoteProviderText(id)} (first at providers[${first}])`,
        );
      } else firstById.set(id, i);
    }
    const command = readCommand(ctx, p, pp);
    const args: string[] = [];
    (c.sequence(p.args, [...pp, "args"]) ?? []).forEach((a, j) => {
      if (typeof a === "string") args.push(a);
      else c.error([...pp, "args", j], "must be a string (quote numbers and booleans)");
    });
    out.push({
      id,
      command,
      args,
      timeoutMs: c.integer(p, pp, "timeout_ms", 5000, { min: 100 }),
      helloTimeoutMs: c.integer(p, pp, "hello_timeout_ms", 5000, { min: 100 }),
      readyTimeoutMs: c.integer(p, pp, "ready_timeout_ms", 60000, { min: 1000 }),
      restartPolicy: readRestartPolicy(c, p, pp),
    });
  });
  return out;
}

/**
 * A command containing `/` is a path, resolved against the config folder; a bare name is looked up
 * on PATH when the provider starts. A missing command is an environment problem (configs are
 * often checked on a build machine without the provider binaries); at start it stays a warning,
 * the start-up failure (exit 3) naming the provider says the rest. So is a path to a file no one
 * may execute (a copy that lost its mode): a bare name on PATH must be executable to count as
 * found, and a path is held to the same.
 */
function readCommand(ctx: SemanticContext, p: Obj, pp: Path): string {
  const c = ctx.checker;
  const command = c.requiredString(p, pp, "command");
  if (command === "") return "";
  const path = [...pp, "command"];
  if (command.includes("/")) {
    const abs = resolvePath(ctx.configDir, command);
    if (!answered(ctx, path, "path", abs)) return abs;
    if (!ctx.fileExists(abs)) environmentProblem(ctx, path, notAFile(ctx, abs), "warning");
    else {
      const mode = ctx.fileMode?.(abs) ?? null;
      if (mode !== null && (mode & 0o111) === 0) {
        const octal = (mode & 0o7777).toString(8).padStart(4, "0");
        environmentProblem(ctx, path, `is not executable: ${abs} (mode ${octal})`, "warning");
      }
    }
    return abs;
  }
  if (answered(ctx, path, "command", command) && !ctx.commandExists(command)) {
    environmentProblem(ctx, path, `${quoteProviderText(command)} not found on PATH`, "warning");
  }
  return command;
}

/** restart_policy: max_attempts, backoff_ms and timeout_ms are required when enabled. */
function readRestartPolicy(c: Checker, p: Obj, pp: Path): RestartPolicyConfig {
  const P = [...pp, "restart_policy"];
  const r = c.mapping(p.restart_policy, P) ?? {};
  c.knownKeys(r, P, RESTART_KEYS);
  const enabled = c.boolean(r, P, "enabled", false);
  if (enabled) {
    for (const key of ["max_attempts", "backoff_ms", "timeout_ms"]) {
      if (!present(r, key)) c.error([...P, key], "is required when restart_policy.enabled is true");
    }
  }
  const maxAttempts = c.integer(r, P, "max_attempts", 3, { min: 1, enforce: enabled });
  const backoffMs = c.integerList(r, P, "backoff_ms", [100, 1000, 5000], {
    min: enabled ? 0 : undefined,
    nonEmpty: enabled,
  });
  const lengthCheckable = enabled && present(r, "max_attempts") && present(r, "backoff_ms") &&
    !c.hasErrorAt([...P, "max_attempts"]) && !c.hasErrorAt([...P, "backoff_ms"]) &&
    Array.isArray(r.backoff_ms);
  if (lengthCheckable && (r.backoff_ms as unknown[]).length !== maxAttempts) {
    const n = (r.backoff_ms as unknown[]).length;
    c.error(
      [...P, "backoff_ms"],
      `has ${n} ${n === 1 ? "entry" : "entries"}, max_attempts is ${maxAttempts}`,
    );
  }
  return {
    enabled,
    maxAttempts,
    backoffMs,
    timeoutMs: c.integer(r, P, "timeout_ms", 30000, { min: 1000, enforce: enabled }),
    successResetMs: c.integer(r, P, "success_reset_ms", 1000, { min: 0, enforce: enabled }),
  };
}

function readTelemetry(root: Obj, ctx: SemanticContext): Config["telemetry"] {
  const c = ctx.checker;
  const P = ["telemetry"];
  const t = c.mapping(root.telemetry, P) ?? {};
  c.knownKeys(t, P, TELEMETRY_KEYS);
  const enabled = c.boolean(t, P, "enabled", false);
  const healthIntervalMs = c.integer(t, P, "health_interval_ms", 15000, { min: 0 });
  const measurementNames = c.oneOf(t, P, "measurement_names", MEASUREMENT_NAMINGS, "runtime");
  const IP = [...P, "influxdb"];
  const influx = c.mapping(t.influxdb, IP) ?? {};
  c.knownKeys(influx, IP, INFLUX_KEYS);

  // Flat aliases are applied (project rule; anolis ignores them); the nested key wins.
  const aliasFor = new Map<string, string>();
  for (const [alias, nested] of Object.entries(FLAT_TELEMETRY_ALIASES)) {
    if (!(alias in t)) continue;
    if (present(influx, nested)) {
      c.warning(
        [...P, alias],
        `is deprecated and ignored here: telemetry.influxdb.${nested} is also set and wins`,
      );
      readInfluxKey(c, t, P, alias); // still type- and bound-checked
    } else {
      c.warning([...P, alias], `is deprecated; use telemetry.influxdb.${nested} (value applied)`);
      aliasFor.set(nested, alias);
    }
  }
  const read = (key: string) => {
    const alias = aliasFor.get(key);
    return alias === undefined ? readInfluxKey(c, influx, IP, key) : readInfluxKey(c, t, P, alias);
  };
  const keyPath = (key: string): Path => {
    const alias = aliasFor.get(key);
    return alias === undefined ? [...IP, key] : [...P, alias];
  };
  const influxdb: InfluxConfig = {
    url: read("url") as string,
    org: read("org") as string,
    bucket: read("bucket") as string,
    token: read("token") as string,
    batchSize: read("batch_size") as number,
    flushIntervalMs: read("flush_interval_ms") as number,
    maxRetryBufferSize: c.integer(influx, IP, "max_retry_buffer_size", 1000, { min: 0 }),
    queueSize: c.integer(influx, IP, "queue_size", 10000, { min: 1 }),
  };
  if (enabled) {
    const urlProblem = httpUrlProblem(influxdb.url);
    if (urlProblem !== null) c.error(keyPath("url"), urlProblem);
    if (influxdb.token === "" && (ctx.env.INFLUXDB_TOKEN ?? "") === "") {
      c.warning(
        keyPath("token"),
        "is empty and INFLUXDB_TOKEN is not set here; InfluxDB will reject writes without a token",
      );
    }
  }
  return { enabled, healthIntervalMs, measurementNames, influxdb };
}

const INFLUX_DEFAULTS: Readonly<Record<string, string | number>> = {
  url: "http://localhost:8086",
  org: "anolis",
  bucket: "anolis",
  token: "",
  batch_size: 100,
  flush_interval_ms: 1000,
};

/** One InfluxDB key under `obj` (nested or flat alias); `key` may be an alias name. */
function readInfluxKey(c: Checker, obj: Obj, parent: Path, key: string): string | number {
  const nested = FLAT_TELEMETRY_ALIASES[key] ?? key;
  const def = INFLUX_DEFAULTS[nested];
  if (typeof def === "number") {
    return c.integer(obj, parent, key, def, {
      min: nested === "flush_interval_ms" ? MIN_FLUSH_INTERVAL_MS : 1,
    });
  }
  return c.string(obj, parent, key, def as string);
}

function readAutomation(
  root: Obj,
  ctx: SemanticContext,
  callCtx: CallContext,
): Config["automation"] {
  const c = ctx.checker;
  const P = ["automation"];
  const a = c.mapping(root.automation, P) ?? {};
  c.knownKeys(a, P, AUTOMATION_KEYS);
  const enabled = c.boolean(a, P, "enabled", false);
  const tree = readBehaviorTree(ctx, a, enabled);
  const hooksPath = [...P, "mode_transition_hooks"];
  const hooks = c.mapping(a.mode_transition_hooks, hooksPath) ?? {};
  c.knownKeys(hooks, hooksPath, ["before_transition", "after_transition"]);
  const tickRateHz = c.integer(a, P, "tick_rate_hz", 10, { min: 1, max: 1000, enforce: enabled });
  const manualGatingPolicy = c.oneOf(a, P, "manual_gating_policy", ["BLOCK", "OVERRIDE"], "BLOCK");
  const parameters = readParameters(c, a.parameters, [...P, "parameters"]);
  const beforeTransition = readHooks(callCtx, hooks.before_transition, [
    ...hooksPath,
    "before_transition",
  ]);
  const afterTransition = readHooks(callCtx, hooks.after_transition, [
    ...hooksPath,
    "after_transition",
  ]);
  // The runtime's AUTO gate (ModeManager.autoGateProblem) refuses AUTO without such a hook as
  // soon as any actuating function is registered: the tree could never run.
  const coversAutoFault = [...beforeTransition, ...afterTransition].some((h) =>
    (h.from === "AUTO" || h.from === "*") && (h.to === "FAULT" || h.to === "*")
  );
  if (enabled && !coversAutoFault) {
    c.warning(
      P,
      "is enabled but no mode_transition_hooks entry covers AUTO -> FAULT (from AUTO " +
        "or *, to FAULT or *): POST /v0/mode AUTO will be refused with 409 once any actuating " +
        "function is registered; add a before_transition hook from AUTO to FAULT whose calls " +
        "stop the outputs (safety.safe_state does not count)",
    );
  }
  return {
    enabled,
    behaviorTree: tree,
    tickRateHz,
    manualGatingPolicy,
    parameters,
    modeTransitionHooks: { beforeTransition, afterTransition },
  };
}

/**
 * behavior_tree, or its deprecated alias behavior_tree_path when behavior_tree is absent.
 * Required and checked for existence when automation is enabled; resolved against the config
 * folder. The tree's own validation belongs to the automation subsystem.
 */
function readBehaviorTree(ctx: SemanticContext, a: Obj, enabled: boolean): string | null {
  const c = ctx.checker;
  const P = ["automation"];
  let key = "behavior_tree";
  if ("behavior_tree_path" in a) {
    if (present(a, "behavior_tree")) {
      c.warning(
        [...P, "behavior_tree_path"],
        "is a deprecated alias and is ignored: behavior_tree is also set",
      );
      c.string(a, P, "behavior_tree_path", "");
    } else {
      c.warning(
        [...P, "behavior_tree_path"],
        "is deprecated; use automation.behavior_tree (value applied)",
      );
      key = "behavior_tree_path";
    }
  }
  const path = [...P, key];
  if (enabled && !present(a, key)) {
    c.error(path, "is required when automation is enabled");
    return null;
  }
  const value = c.string(a, P, key, "", enabled);
  if (value === "") return null;
  const abs = resolvePath(ctx.configDir, value);
  if (enabled && answered(ctx, path, "path", abs) && !ctx.fileExists(abs)) {
    environmentProblem(ctx, path, notAFile(ctx, abs), "error");
  }
  return abs;
}

function readSafety(root: Obj, callCtx: CallContext): Config["safety"] {
  const c = callCtx.checker;
  const s = c.mapping(root.safety, ["safety"]) ?? {};
  c.knownKeys(s, ["safety"], ["safe_state"]);
  const P = ["safety", "safe_state"];
  const ss = c.mapping(s.safe_state, P) ?? {};
  c.knownKeys(ss, P, [
    "hooks",
    "setpoints",
    "zero_is_safe",
    "expect",
    "verify_timeout_ms",
  ]);
  return {
    // An explicit `safety:` key, even empty, disables adoption of FAULT hooks (docs/safety.md,
    // "The ladder").
    present: "safety" in root,
    safeState: {
      hooks: readCalls(callCtx, ss.hooks, [...P, "hooks"], true),
      setpoints: readCalls(callCtx, ss.setpoints, [...P, "setpoints"], true),
      zeroIsSafe: c.boolean(ss, P, "zero_is_safe", false),
      expect: readExpectations(callCtx, ss.expect, [...P, "expect"]),
      verifyTimeoutMs: c.integer(ss, P, "verify_timeout_ms", VERIFY_TIMEOUT_DEFAULT_MS, {
        min: VERIFY_TIMEOUT_MIN_MS,
        max: VERIFY_TIMEOUT_MAX_MS,
      }),
    },
  };
}

function readAudit(root: Obj, c: Checker): Config["audit"] {
  const P = ["audit"];
  const a = c.mapping(root.audit, P) ?? {};
  c.knownKeys(a, P, ["max_file_bytes", "max_files"]);
  return {
    maxFileBytes: c.integer(a, P, "max_file_bytes", 16 * 1024 * 1024, {
      min: 4096,
      max: 1024 * 1024 * 1024,
    }),
    maxFiles: c.integer(a, P, "max_files", 8, { min: 2, max: 1000 }),
  };
}

function readRuns(root: Obj, c: Checker): Config["runs"] {
  const P = ["runs"];
  const r = c.mapping(root.runs, P) ?? {};
  c.knownKeys(r, P, ["max_run_bytes", "max_runs", "max_total_bytes"]);
  const L = RUNS_LIMITS;
  const maxRunBytes = c.integer(r, P, "max_run_bytes", L.maxRunBytes.default, L.maxRunBytes);
  const maxTotalBytes = c.integer(
    r,
    P,
    "max_total_bytes",
    L.maxTotalBytes.default,
    L.maxTotalBytes,
  );
  // A run's event file may reach max_run_bytes plus its safety reserve: a total below that keeps
  // only the most recently closed run once one reaches its bound.
  if (maxTotalBytes < maxRunBytes + L.safetyReserveBytes) {
    c.warning(
      [...P, "max_total_bytes"],
      `${maxTotalBytes} is below what one run's event file may reach (runs.max_run_bytes ` +
        `${maxRunBytes} + ${L.safetyReserveBytes} bytes of safety reserve): each close removes ` +
        `every older closed run once a run's file is that large (the most recently closed one ` +
        `is always kept)`,
    );
  }
  return {
    maxRunBytes,
    maxRuns: c.integer(r, P, "max_runs", L.maxRuns.default, L.maxRuns),
    maxTotalBytes,
  };
}

function readHistory(root: Obj, c: Checker): Config["history"] {
  const P = ["history"];
  const h = c.mapping(root.history, P) ?? {};
  c.knownKeys(h, P, [
    "enabled",
    "memory_seconds",
    "memory_max_bytes",
    "step_ms",
    "disk_max_bytes",
    "incident_before_s",
    "incident_after_s",
    "incident_max_count",
    "incident_max_bytes",
  ]);
  const memorySeconds = c.integer(h, P, "memory_seconds", 120, { min: 10, max: 3600 });
  const incidentBeforeS = c.integer(h, P, "incident_before_s", 10, { min: 0, max: 3600 });
  const incidentAfterS = c.integer(h, P, "incident_after_s", 5, { min: 0, max: 600 });
  // The samples before an incident come from the ring: it must reach that far back -- from the
  // end of the window, incident_after_s later, when the record is read. Not judged when one of
  // them is in error: it is read at its default then, a figure the file does not give.
  const windowInError = ["memory_seconds", "incident_before_s", "incident_after_s"].some((k) =>
    c.hasErrorAt([...P, k])
  );
  if (!windowInError && incidentBeforeS > memorySeconds) {
    c.error(
      [...P, "incident_before_s"],
      `must be at most memory_seconds (${incidentBeforeS} > ${memorySeconds}): the samples ` +
        "before an incident come from the ring",
    );
  } else if (!windowInError && incidentBeforeS + incidentAfterS > memorySeconds) {
    // A warning: the runtime runs as configured (a file that loaded before still starts after an
    // upgrade), and what its records will lack is said here, where it can be fixed.
    c.warning(
      [...P, "incident_before_s"],
      `incident_before_s + incident_after_s exceeds memory_seconds (${incidentBeforeS} + ` +
        `${incidentAfterS} > ${memorySeconds}): an incident's record is read from the ring ` +
        `incident_after_s after its trigger, when the ring no longer holds the oldest ` +
        `${incidentBeforeS + incidentAfterS - memorySeconds} s of its before-window; raise ` +
        "memory_seconds or lower incident_before_s",
    );
  }
  const diskMaxBytes = c.integer(h, P, "disk_max_bytes", 256 * 1024 * 1024, { min: 0 });
  if (diskMaxBytes > 0 && diskMaxBytes < 1024 * 1024) {
    c.error([...P, "disk_max_bytes"], `must be 0 (no disk tier) or at least 1048576 (1 MiB)`);
  }
  return {
    enabled: c.boolean(h, P, "enabled", true),
    memorySeconds,
    memoryMaxBytes: c.integer(h, P, "memory_max_bytes", 2 * 1024 * 1024, {
      min: 65536,
      max: 1024 * 1024 * 1024,
    }),
    stepMs: c.integer(h, P, "step_ms", 10000, { min: 1000, max: 3600000 }),
    diskMaxBytes,
    incidentBeforeS,
    incidentAfterS,
    incidentMaxCount: c.integer(h, P, "incident_max_count", 100, { min: 1, max: 100000 }),
    incidentMaxBytes: c.integer(h, P, "incident_max_bytes", 64 * 1024 * 1024, { min: 65536 }),
  };
}

function readHealth(root: Obj, c: Checker): Config["health"] {
  const h = c.mapping(root.health, ["health"]) ?? {};
  c.knownKeys(h, ["health"], ["staleness"]);
  const P = ["health", "staleness"];
  const s = c.mapping(h.staleness, P) ?? {};
  c.knownKeys(s, P, ["warn_after_ms", "stale_after_ms"]);
  const warnAfterMs = c.integer(s, P, "warn_after_ms", 0, { min: 0 });
  const staleAfterMs = c.integer(s, P, "stale_after_ms", 0, { min: 0 });
  // A positive stale_after_ms at or below warn_after_ms means both are set (0 = derived).
  if (staleAfterMs > 0 && staleAfterMs <= warnAfterMs) {
    c.error(
      [...P, "stale_after_ms"],
      `must be greater than warn_after_ms (${staleAfterMs} <= ${warnAfterMs})`,
    );
  }
  return { staleness: { warnAfterMs, staleAfterMs } };
}

/**
 * The warning of `sparkplug.qos: 1` (docs/sparkplug.md, "QoS and the MQTT session"): honoured, as
 * the operator asked for acknowledged data writes, but outside Sparkplug B 3.0, which a host or a
 * compliance check may hold against the node.
 */
const SPARKPLUG_QOS_1_DEVIATES = "publishes NDATA and DDATA at MQTT QoS 1, which Sparkplug B 3.0 " +
  "forbids (tck-id-topics-ndata-mqtt, tck-id-topics-ddata-mqtt: QoS 0 and retain false); a " +
  "host or a compliance check (the Sparkplug TCK) may reject them: use 0 unless every host " +
  "accepts QoS 1 data (births and deaths keep their own QoS either way)";

const SPARKPLUG_KEYS = [
  "enabled",
  "broker_url",
  "group_id",
  "edge_node_id",
  "client_id",
  "primary_host_id",
  "keep_alive_s",
  "qos",
  "connect_timeout_ms",
  "reconnect_ms",
  "max_message_bytes",
  "tls",
  "commands",
  "role",
  "store_forward",
];
/** Keys that would put broker credentials in the file: refused, with where they belong. */
const SPARKPLUG_CREDENTIAL_KEYS = ["username", "password", "user", "pass"];
/** What a Sparkplug id may not contain (topic level separator and wildcards). */
const SPARKPLUG_ID_FORBIDDEN = /[/+#]/;
/**
 * What no Sparkplug id nor the MQTT client id may contain: control characters and Unicode
 * non-characters (MQTT 3.1.1 1.5.3 forbids U+0000 and asks not to use the others; Mosquitto
 * closes the connection of a client whose CONNECT or topic holds one, so the node would never stay
 * connected).
 */
const MQTT_TEXT_FORBIDDEN = /[\p{Cc}\p{Noncharacter_Code_Point}]/u;
const MQTT_TEXT_PROBLEM = "must not contain control characters or Unicode non-characters " +
  "(the broker closes the connection of a client that sends one)";

/**
 * What is wrong with a Sparkplug id (a group, edge node or host id: one topic level), or null:
 * control characters or Unicode non-characters, or the MQTT topic characters `/`, `+`, `#`. Says
 * the id, cut and quoted (quoteProviderText). Also the check of `runtime --fleet --group` (src/main.ts).
 */
export function sparkplugIdProblem(v: string): string | null {
  if (MQTT_TEXT_FORBIDDEN.test(v)) return `${MQTT_TEXT_PROBLEM}, got ${quoteProviderText(v)}`;
  if (SPARKPLUG_ID_FORBIDDEN.test(v)) {
    return `must not contain '/', '+' or '#' (MQTT topic characters), got ${quoteProviderText(v)}`;
  }
  return null;
}

/** The `sparkplug:` section (docs/sparkplug.md): checked whether or not it is enabled. */
function readSparkplug(root: Obj, ctx: SemanticContext, runtimeName: string): SparkplugConfig {
  const c = ctx.checker;
  const P = ["sparkplug"];
  const s = c.mapping(root.sparkplug, P) ?? {};
  c.knownKeys(s, P, [...SPARKPLUG_KEYS, ...SPARKPLUG_CREDENTIAL_KEYS]);
  for (const key of SPARKPLUG_CREDENTIAL_KEYS) {
    if (key in s) {
      c.error(
        [...P, key],
        `credentials are never read from the file: set ${SPARKPLUG_USERNAME_ENV} and ` +
          `${SPARKPLUG_PASSWORD_ENV} in the runtime's environment`,
      );
    }
  }
  const enabled = c.boolean(s, P, "enabled", false);
  const brokerUrl = c.string(s, P, "broker_url", "");
  let secure = false;
  if ((brokerUrl !== "" || enabled) && !c.hasErrorAt([...P, "broker_url"])) {
    const problem = brokerUrlProblem(brokerUrl);
    if (problem !== null) c.error([...P, "broker_url"], problem);
    else secure = brokerUrl.startsWith("mqtts:");
  }
  const id = (key: string, def: string): string => {
    const v = c.string(s, P, key, def);
    const problem = sparkplugIdProblem(v);
    if (problem !== null) c.error([...P, key], problem);
    return v;
  };
  const groupId = id("group_id", "");
  if (enabled && groupId === "" && !c.hasErrorAt([...P, "group_id"])) {
    c.error([...P, "group_id"], "is required when sparkplug is enabled");
  }
  const edgeGiven = id("edge_node_id", "");
  if (enabled && edgeGiven === "" && !c.hasErrorAt([...P, "edge_node_id"])) {
    if (runtimeName === "") {
      c.error([...P, "edge_node_id"], "is required when runtime.name is empty");
    } else if (MQTT_TEXT_FORBIDDEN.test(runtimeName)) {
      c.error(
        [...P, "edge_node_id"],
        `defaults to runtime.name ${quoteProviderText(runtimeName)}, which ${
          MQTT_TEXT_PROBLEM.replace("must not contain", "contains")
        }: set it`,
      );
    } else if (SPARKPLUG_ID_FORBIDDEN.test(runtimeName)) {
      c.error(
        [...P, "edge_node_id"],
        `defaults to runtime.name ${
          quoteProviderText(runtimeName)
        }, which contains '/', '+' or '#': set it`,
      );
    }
  }
  const clientId = c.string(s, P, "client_id", "");
  if (MQTT_TEXT_FORBIDDEN.test(clientId)) {
    c.error([...P, "client_id"], `${MQTT_TEXT_PROBLEM}, got ${JSON.stringify(clientId)}`);
  }
  const primaryHostId = id("primary_host_id", "");
  const qos = c.integer(s, P, "qos", 0, { min: 0, max: 1 }) === 1 ? 1 : 0;
  if (qos === 1) c.warning([...P, "qos"], SPARKPLUG_QOS_1_DEVIATES);
  const TP = [...P, "tls"];
  const t = c.mapping(s.tls, TP) ?? {};
  c.knownKeys(t, TP, ["ca_file", "cert_file", "key_file"]);
  const file = (key: string): string | null => {
    const v = c.string(t, TP, key, "");
    if (v === "") return null;
    const abs = resolvePath(ctx.configDir, v);
    if (enabled && answered(ctx, [...TP, key], "path", abs) && !ctx.fileExists(abs)) {
      environmentProblem(ctx, [...TP, key], notAFile(ctx, abs), "error");
    }
    return abs;
  };
  const tls = { caPath: file("ca_file"), certPath: file("cert_file"), keyPath: file("key_file") };
  const tlsGiven = (key: string) => present(t, key) && t[key] !== "";
  if (tlsGiven("cert_file") !== tlsGiven("key_file")) {
    const [set, unset] = !tlsGiven("cert_file")
      ? ["key_file", "cert_file"]
      : ["cert_file", "key_file"];
    c.error([...TP, set], `is set but ${unset} is not: a client certificate needs both`);
  }
  const anyTls = tls.caPath !== null || tls.certPath !== null;
  if (anyTls && !secure && brokerUrl !== "" && !c.hasErrorAt([...P, "broker_url"])) {
    c.error(TP, "is set but broker_url is not mqtts://: TLS files need a TLS connection");
  }
  const commands = c.boolean(s, P, "commands", false);
  const role = c.oneOf(s, P, "role", TOKEN_ROLES, "operator");
  if (enabled && commands && role === "viewer") {
    c.warning([...P, "role"], "is viewer: every command from the broker will be refused");
  }
  const SP = [...P, "store_forward"];
  const sf = c.mapping(s.store_forward, SP) ?? {};
  c.knownKeys(sf, SP, ["max_messages", "max_bytes"]);
  return {
    enabled,
    brokerUrl,
    groupId,
    edgeNodeId: edgeGiven,
    clientId,
    primaryHostId,
    keepAliveS: c.integer(s, P, "keep_alive_s", 30, { min: 5, max: 65535 }),
    qos,
    connectTimeoutMs: c.integer(s, P, "connect_timeout_ms", 10000, { min: 1000, max: 120000 }),
    reconnectMs: c.integer(s, P, "reconnect_ms", 2000, { min: 100, max: 600000 }),
    // Absent (or null): no bound, every message is published whatever its size.
    maxMessageBytes: s.max_message_bytes === undefined || s.max_message_bytes === null
      ? null
      : c.integer(s, P, "max_message_bytes", 0, {
        min: MIN_SPARKPLUG_MESSAGE_BYTES,
        max: MAX_MQTT_PACKET_BYTES,
      }),
    tls,
    commands,
    role,
    storeForward: {
      maxMessages: c.integer(sf, SP, "max_messages", 10000, { min: 0, max: 10000000 }),
      maxBytes: c.integer(sf, SP, "max_bytes", 16777216, { min: 0, max: 1073741824 }),
    },
  };
}

/** Why `url` is no broker URL this runtime connects to; null when it is one. */
function brokerUrlProblem(url: string): string | null {
  if (url === "") return "is required when sparkplug is enabled";
  if (!URL.canParse(url)) return `must be an mqtt:// or mqtts:// URL, got ${quoteUrl(url)}`;
  const u = new URL(url);
  if (u.username !== "" || u.password !== "") {
    // The URL is not echoed: it carries a credential.
    return `must not carry credentials: set ${SPARKPLUG_USERNAME_ENV} and ` +
      `${SPARKPLUG_PASSWORD_ENV} in the runtime's environment`;
  }
  if (u.protocol !== "mqtt:" && u.protocol !== "mqtts:") {
    return `must be an mqtt:// or mqtts:// URL, got ${quoteUrl(url)}`;
  }
  if (u.hostname === "") return `names no host: ${quoteUrl(url)}`;
  if ((u.pathname !== "" && u.pathname !== "/") || u.search !== "" || u.hash !== "") {
    return `must be scheme://host[:port] only, got ${quoteUrl(url)}`;
  }
  return null;
}
