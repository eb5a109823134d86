/**
 * The running service: the runtime kernel plus run records, telemetry and the HTTP server, under
 * the process lifecycle (signals, readiness notification, shutdown budget, exit codes).
 *
 * Start order: audit journal -> run journal replay -> telemetry + run journaling on the event bus -> providers and
 * their first poll (fail-fast, bounded by startup_timeout_ms) -> HTTP -> READY; a stop signal
 * aborts it between any two steps and at once while providers start. Stop order: HTTP (streams
 * first) -> runtime (polling, providers) -> audit journal -> run journal -> telemetry flush, all within
 * runtime.shutdown_timeout_ms.
 */
import { type Logger, type LogLevel, RuntimeError } from "../common/mod.ts";
import type { Config } from "../config/mod.ts";
import { EXIT_INTERNAL_ERROR, EXIT_OK, EXIT_STARTUP_FAILURE, type ExitCode } from "./exit_codes.ts";
import {
  detachNotifySocket,
  httpReservedFds,
  type HttpServerHandle,
  journalFiles,
  killProviderProcesses,
  type LineLogger,
  notifyReady,
  notifyStopping,
  readProcessStats,
  secretFromEnvironment,
  serveHttp,
  spawnProcess,
  systemClock,
} from "../host/mod.ts";
import { HttpApi, type HttpServices, resolveApiToken, resolveNamedTokens } from "../http/mod.ts";
import { boundedEntryText } from "../audit/mod.ts";
import { RunRegistry } from "../runs/mod.ts";
import { Kernel } from "./kernel.ts";
import { loadInfluxClient, telemetryOptionsFromConfig, TelemetryWriter } from "../telemetry/mod.ts";
import { ConfigReloader, type ReloadedConfig } from "./reloader.ts";

/** Extra time past runtime.shutdown_timeout_ms before the process exits regardless. */
const SHUTDOWN_GRACE_MS = 1000;
/** After a second stop signal: how much longer the rest of shutdown may take. */
export const HURRIED_SHUTDOWN_MS = 1000;
/**
 * A repeat of the first stop signal (the same signal) this soon after it is the same stop
 * delivered twice, not a request to hurry: it is logged and ignored. One Ctrl-C in a terminal
 * reaches the runtime twice under `deno task start` -- the terminal signals the whole foreground
 * process group, and `deno task` forwards the SIGINT it got to its child as well -- the copies
 * some 0.3 ms apart when idle. A later repeat, or the other signal (SIGTERM after SIGINT), hurries
 * shutdown as before.
 */
export const STOP_SIGNAL_REPEAT_WINDOW_MS = 500;
/** Longest wait for killed providers to be reaped before the process exits. */
export const PROVIDER_REAP_TIMEOUT_MS = 2000;

/** Everything a running service holds; `stop()` ends it. */
export interface Service {
  readonly runtime: Kernel;
  readonly http: HttpServerHandle | null;
  /** The telemetry writer (a reload that changes telemetry retargets it in place). */
  readonly telemetry: TelemetryWriter;
  readonly runs: RunRegistry;
  /** Reloads the configuration (coalesced; see ConfigReloader); absent without a loader. */
  readonly reloader: ConfigReloader | null;
  stop(): Promise<void>;
}

/** How the service re-reads its configuration file (SIGHUP). */
export interface ServiceReload {
  /** Reads and validates the --config file as start-up did. */
  readonly load: () => Promise<ReloadedConfig>;
  /** Sets the process log level; absent when --log-level fixed it. */
  readonly setLogLevel?: (level: LogLevel) => void;
}

/** Options of startService. */
export interface StartServiceOptions {
  /**
   * Aborting it during start-up stops at once what has started (providers first: the stage
   * waiting on them ends with them); startService then throws once everything is stopped.
   */
  readonly abort?: AbortSignal;
  /** Enables configuration reload (service.reloader). */
  readonly reload?: ServiceReload;
}

/** Builds and starts the whole service; throws (after cleaning up) when start-up fails. */
export async function startService(
  config: Config,
  log: Logger,
  options: StartServiceOptions = {},
): Promise<Service> {
  const clock = systemClock;
  // Read before any provider is spawned: reading a token_env variable also takes it out of the
  // environment the providers inherit.
  const namedTokens = resolveNamedTokens(config.http, secretFromEnvironment);
  const runtime = new Kernel(config, { spawn: spawnProcess, clock, log });
  const telemetryOptions = (c: Config) =>
    telemetryOptionsFromConfig(c, {
      envToken: secretFromEnvironment("INFLUXDB_TOKEN"),
      clock,
      logger: log.child("telemetry"),
      healthSnapshot: () => runtime.providerHealthLive(),
    });
  // One writer for the life of the service: a reload retargets it in place.
  const telemetry = new TelemetryWriter(telemetryOptions(config));
  const runs = new RunRegistry({
    dataDir: config.runtime.dataDir,
    runtimeName: config.runtime.name,
    pollingIntervalMs: config.polling.intervalMs,
    files: journalFiles,
    clock,
    logger: log.child("runs"),
    automationVersion: () => runtime.automation?.automationVersion() ?? null,
    telemetrySink: (event, run) => telemetry.recordRunEvent(event, run.experiment_label),
  });
  runtime.automation?.setOpenRunId(() => runs.openRunId());
  // Calls decided while a run is open are events of that run (issue 21).
  runtime.audit.onEntry((entry) => {
    if (entry.action === "call" && runs.openRunId() !== null) {
      runs.recordCall(JSON.parse(boundedEntryText(entry)));
    }
  });

  let http: HttpServerHandle | null = null;
  let api: HttpApi | null = null;
  let reloader: ConfigReloader | null = null;
  let stopping: Promise<void> | null = null;
  const stop = () =>
    stopping ??= (async () => {
      api?.close();
      await http?.shutdown();
      await runtime.stop();
      await runtime.audit.close();
      await runs.shutdown();
      await telemetry.stop(Math.max(200, config.runtime.shutdownTimeoutMs / 2));
    })();

  const abort = options.abort;
  const throwIfAborted = () => {
    if (abort?.aborted) throw new RuntimeError("UNAVAILABLE", "start-up aborted: stopping");
  };
  const onAbort = () => void runtime.stop().catch(() => {}); // reported by stop() below
  abort?.addEventListener("abort", onAbort, { once: true });
  try {
    throwIfAborted();
    // The audit journal first: every decision from the first call on is journaled. It never
    // fails the start (a folder that cannot be written is reported in health and metrics).
    await runtime.audit.openJournal({
      dir: `${config.runtime.dataDir}/audit`,
      files: journalFiles,
      maxFileBytes: config.audit.maxFileBytes,
      maxFiles: config.audit.maxFiles,
    });
    await runs.start();
    throwIfAborted();
    // Subscribed before the providers start: the priming poll's first samples must be written
    // too (a signal that never changes is never published again).
    if (config.telemetry.enabled) await loadInfluxClient(); // else never loaded
    telemetry.start(runtime.bus);
    runs.attach(runtime.bus);
    await runtime.start();
    throwIfAborted();
    if (config.http.enabled) {
      api = new HttpApi(
        httpServicesOf(runtime, {
          runs,
          telemetry,
          configReloads: () =>
            reloader?.counts() ?? { success: 0, failure: 0, lastSuccessEpochSeconds: null },
        }),
        {
          apiToken: resolveApiToken(config.http, secretFromEnvironment("RUNTIME_API_TOKEN")),
          tokens: namedTokens,
        },
      );
      http = await serveHttp({
        hostname: config.http.bind,
        port: config.http.port,
        tlsCertPath: config.http.tlsCertPath,
        tlsKeyPath: config.http.tlsKeyPath,
        authEnabled: config.http.authEnabled,
        allowInsecureBind: config.http.allowInsecureBind,
        tlsAllowExpiredCert: config.http.tlsAllowExpiredCert,
        maxConnections: config.http.maxConnections,
        requestHeaderTimeoutMs: config.http.requestHeaderTimeoutMs,
        keepAliveTimeoutMs: config.http.keepAliveTimeoutMs,
        reservedFds: httpReservedFds(config.providers.length),
        handler: api.handle,
        log: log.child("http"),
        onShutdown: () => api?.close(),
      });
      throwIfAborted();
      const origin = `${http.tls ? "https" : "http"}://${http.hostname}:${http.port}`;
      log.info(`API listening on ${origin}/v0`);
      if (config.http.consoleEnabled) log.info(`Operator console on ${origin}/`);
    } else {
      log.info("http.enabled is false: running headless");
    }
    // The line launchers written for anolis wait for: once, when the API is up and every
    // provider is AVAILABLE (a provider that went down meanwhile delays it until it is back).
    runtime.whenAllProvidersAvailable(() =>
      log.info(
        `Runtime Ready: ${runtime.registry.hosts.length} provider(s) AVAILABLE, ${runtime.registry.devices().length} device(s)`,
      )
    );
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  } finally {
    abort?.removeEventListener("abort", onAbort);
  }
  // The sections of a reload this composition root owns (app/live_config.ts): the writer is
  // retargeted in place, the API's tokens replaced, the log level set.
  runtime.ownSection("telemetry", async (next) => {
    if (next.telemetry.enabled) await loadInfluxClient();
    await telemetry.retarget(
      telemetryOptions(next),
      Math.max(200, config.runtime.shutdownTimeoutMs / 2),
    );
    return {
      note: next.telemetry.enabled
        ? `telemetry retargeted (writing to ${next.telemetry.influxdb.url})`
        : "telemetry retargeted (disabled)",
    };
  });
  const retoken = (next: Config) => {
    api?.setTokens(
      config.http,
      resolveApiToken(next.http, secretFromEnvironment("RUNTIME_API_TOKEN")),
      resolveNamedTokens(next.http, secretFromEnvironment),
    );
    return { note: "API tokens replaced" };
  };
  runtime.ownSection("http.auth_token", retoken);
  runtime.ownSection("http.tokens", retoken);
  const setLogLevel = options.reload?.setLogLevel;
  runtime.ownSection("logging", (next) => {
    if (!setLogLevel) {
      return { note: "logging.level not applied: --log-level fixes it for this run" };
    }
    const from = runtime.config.logging.level;
    setLogLevel(next.logging.level);
    return { note: `log level ${from}->${next.logging.level}` };
  });
  if (options.reload) {
    reloader = new ConfigReloader({ runtime, load: options.reload.load, log });
  }
  return {
    runtime,
    http,
    telemetry,
    runs,
    reloader,
    stop,
  };
}

/** The runtime's services as the HTTP layer sees them, plus the service-level ones. */
export function httpServicesOf(
  runtime: Kernel,
  extra: Pick<HttpServices, "telemetry" | "runs" | "configReloads">,
): HttpServices {
  const base: Omit<HttpServices, keyof typeof extra> = {
    // The configuration in effect (a reload changes what is in effect; the kernel owns it).
    get config() {
      return runtime.config;
    },
    host: runtime.host,
    bus: runtime.bus,
    inventory: runtime.inventory,
    cache: runtime.cache,
    router: runtime.router,
    providerHealth: () => runtime.providerHealth(),
    uptimeSeconds: () => runtime.uptimeSeconds(),
    modes: runtime.modes,
    estop: runtime.estop,
    alarms: runtime.alarms,
    audit: runtime.audit,
    processStats: readProcessStats,
    ...(runtime.parameters ? { parameters: runtime.parameters } : {}),
    ...(runtime.automation ? { automation: runtime.automation } : {}),
  };
  // Descriptors, not a spread: a getter in `extra` stays a getter.
  return Object.defineProperties(base, Object.getOwnPropertyDescriptors(extra)) as HttpServices;
}

/**
 * Runs the service until SIGINT/SIGTERM and resolves with the process exit code:
 * 0 after a clean shutdown, 3 when start-up fails, 4 when shutdown itself fails or overruns.
 *
 * A stop signal during start-up stops at once (exit 0 once stopped). A second stop signal hurries
 * shutdown: providers get SIGKILL now and the rest has HURRIED_SHUTDOWN_MS more -- unless it is the
 * first one again within STOP_SIGNAL_REPEAT_WINDOW_MS (the same stop delivered twice: ignored). Whichever way
 * the process ends, no provider outlives it: what still runs is killed and reaped first.
 */
export async function runService(
  config: Config,
  log: LineLogger,
  options: RunServiceOptions = {},
): Promise<ExitCode> {
  // Providers must not inherit NOTIFY_SOCKET: with NotifyAccess=all one could report READY early.
  detachNotifySocket();
  // Signals are watched from the start and for the whole life of the process: a signal during
  // start-up stops it at once, and a later one must never fall back to the default (exit now).
  const signals = watchStopSignals(log);
  const startup = new AbortController();
  const reload = options.loadConfig
    ? {
      load: options.loadConfig,
      ...(options.logLevelFixed ? {} : { setLogLevel: (l: LogLevel) => (log.level = l) }),
    }
    : undefined;
  const starting = startService(config, log, {
    abort: startup.signal,
    ...(reload ? { reload } : {}),
  });
  // SIGHUP (systemctl reload) re-reads the configuration; one during start-up waits for it.
  // Watched from the start too: the default action of SIGHUP would end the process.
  const hangup = watchReloadSignal(() => {
    log.info("SIGHUP received: reloading the configuration");
    void starting.then((service) => {
      if (service.reloader) void service.reloader.request();
      else log.warn("SIGHUP ignored: configuration reload is not available");
    }, () => {});
  });
  try {
    const first = await Promise.race([
      starting.then(() => null, (err: unknown) => ({ err })),
      signals.first.then((signal) => ({ signal })),
    ]);
    if (first !== null && "err" in first) {
      const err = first.err;
      log.error(`start-up failed: ${err instanceof Error ? err.message : String(err)}`);
      return EXIT_STARTUP_FAILURE;
    }
    if (first === null) {
      await notifyReady(log);
      log.info(`${await signals.first} received: shutting down`);
    } else {
      log.info(`${first.signal} received during start-up: stopping`);
      startup.abort();
    }
    await notifyStopping(log);
    // A start-up that was aborted has stopped what it started; one that completed is stopped here.
    const stopped = starting.then((service) => service.stop(), () => {});
    return await shutDown(stopped, signals, config, log);
  } finally {
    // Nothing may outlive the process: a provider still running now is killed and reaped.
    const killed = await killProviderProcesses(PROVIDER_REAP_TIMEOUT_MS);
    if (killed > 0) log.error(`${killed} provider process(es) still running at exit: killed`);
    signals.dispose();
    hangup();
  }
}

/** Options of runService. */
export interface RunServiceOptions {
  /** Re-reads the --config file (SIGHUP); absent: SIGHUP is logged and ignored. */
  readonly loadConfig?: () => Promise<ReloadedConfig>;
  /** --log-level was given: a reload leaves the log level alone. */
  readonly logLevelFixed?: boolean;
}

/** Calls `onHangup` for every SIGHUP until the returned function is called. */
function watchReloadSignal(onHangup: () => void): () => void {
  Deno.addSignalListener("SIGHUP", onHangup);
  return () => Deno.removeSignalListener("SIGHUP", onHangup);
}

/** Waits for `stopped` within the shutdown budget, hurrying it on a second stop signal. */
async function shutDown(
  stopped: Promise<void>,
  signals: StopSignals,
  config: Config,
  log: Logger,
): Promise<ExitCode> {
  // The budget is enforced: whatever is still running past it must not keep the process alive.
  const budgetMs = config.runtime.shutdownTimeoutMs + SHUTDOWN_GRACE_MS;
  // The process's own deadline, on the real clock this composition root owns.
  const clock = systemClock;
  let limit = `${budgetMs} ms`;
  let expire: (outcome: "overrun") => void = () => {};
  const overrun = new Promise<"overrun">((r) => (expire = r));
  let timer = clock.setTimer(() => expire("overrun"), budgetMs);
  let hurried: Promise<number> | null = null;
  signals.onRepeat((signal) => {
    log.warn(`${signal} received again: killing providers now`);
    hurried ??= killProviderProcesses(PROVIDER_REAP_TIMEOUT_MS);
    clock.clearTimer(timer);
    timer = clock.setTimer(() => expire("overrun"), HURRIED_SHUTDOWN_MS);
    limit = `${HURRIED_SHUTDOWN_MS} ms after the second signal`;
  });
  try {
    const outcome = await Promise.race([stopped.then(() => "done" as const), overrun]);
    await hurried;
    if (outcome === "overrun") {
      log.error(`shutdown exceeded ${limit}; exiting anyway`);
      return EXIT_INTERNAL_ERROR;
    }
    log.info("shutdown complete");
    return EXIT_OK;
  } catch (err) {
    log.error(`shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
    return EXIT_INTERNAL_ERROR;
  } finally {
    clock.clearTimer(timer);
  }
}

/** What a stop signal means to the service (see StopSignalFilter). */
export type StopSignalMeaning = "stop" | "duplicate" | "hurry";

/**
 * Tells what each SIGINT/SIGTERM means: the first starts shutdown; the same signal again within
 * `windowMs` of it is a duplicate (one stop delivered twice); anything else after it hurries.
 */
export class StopSignalFilter {
  readonly #windowMs: number;
  #first: { readonly signal: Deno.Signal; readonly atMs: number } | null = null;

  constructor(windowMs: number = STOP_SIGNAL_REPEAT_WINDOW_MS) {
    this.#windowMs = windowMs;
  }

  /** Classifies `signal` received at monotonic time `atMs`; the elapsed time since the first. */
  classify(
    signal: Deno.Signal,
    atMs: number,
  ): { meaning: StopSignalMeaning; sinceFirstMs: number } {
    if (this.#first === null) {
      this.#first = { signal, atMs };
      return { meaning: "stop", sinceFirstMs: 0 };
    }
    const sinceFirstMs = atMs - this.#first.atMs;
    const duplicate = signal === this.#first.signal && sinceFirstMs < this.#windowMs;
    return { meaning: duplicate ? "duplicate" : "hurry", sinceFirstMs };
  }
}

/** SIGINT/SIGTERM as seen by the service: the first starts shutdown, later ones hurry it. */
interface StopSignals {
  /** Resolves with the first signal. */
  readonly first: Promise<Deno.Signal>;
  /** Calls `listener` for every signal after the first (at once for one already received). */
  onRepeat(listener: (signal: Deno.Signal) => void): void;
  /** Removes the signal listeners. */
  dispose(): void;
}

/**
 * Watches SIGINT/SIGTERM until disposed (so no later signal ends the process outright). A
 * duplicate of the first (StopSignalFilter) is logged here and goes no further.
 */
function watchStopSignals(log: Logger, monoMs: () => number = systemClock.monoMs): StopSignals {
  const handlers: Array<[Deno.Signal, () => void]> = [];
  const filter = new StopSignalFilter();
  let resolveFirst: (signal: Deno.Signal) => void = () => {};
  const first = new Promise<Deno.Signal>((r) => (resolveFirst = r));
  let repeatListener: ((signal: Deno.Signal) => void) | null = null;
  let missedRepeat: Deno.Signal | null = null;
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    const h = () => {
      const { meaning, sinceFirstMs } = filter.classify(sig, monoMs());
      if (meaning === "stop") return resolveFirst(sig);
      if (meaning === "duplicate") {
        const ms = Math.round(sinceFirstMs);
        return log.info(
          `${sig} received again ${ms} ms after the first: the same stop delivered twice (a ` +
            "terminal and `deno task` both pass on one Ctrl-C), ignored; one sent " +
            `${STOP_SIGNAL_REPEAT_WINDOW_MS} ms or more after the first kills the providers now`,
        );
      }
      if (repeatListener) repeatListener(sig);
      else missedRepeat = sig;
    };
    handlers.push([sig, h]);
    Deno.addSignalListener(sig, h);
  }
  return {
    first,
    onRepeat(listener) {
      repeatListener = listener;
      if (missedRepeat !== null) listener(missedRepeat);
    },
    dispose() {
      for (const [s, f] of handlers) Deno.removeSignalListener(s, f);
      handlers.length = 0;
    },
  };
}
