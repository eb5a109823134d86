/**
 * The process around the kernel: stop signals (and what a repeated one means), SIGHUP, readiness
 * (sd_notify and the "Runtime Ready" line), the shutdown budget and the exit codes. What runs is
 * built, started and stopped by the Kernel (app/kernel.ts) over the real host ports given here.
 */
import {
  type Clock,
  errorMessage,
  type Logger,
  type LogLevel,
  raceTimeout,
} from "../common/mod.ts";
import type { Config } from "../config/mod.ts";
import { EXIT_INTERNAL_ERROR, EXIT_OK, EXIT_STARTUP_FAILURE, type ExitCode } from "./exit_codes.ts";
import {
  detachNotifySocket,
  folderSync,
  HTTP_SHUTDOWN_MAX_MS,
  journalFiles,
  killProviderProcesses,
  type LineLogger,
  lockDataDir,
  notifyReady,
  notifyStopping,
  onSignal,
  operatingSystem,
  type ProvidersKilledAtExit,
  readProcessStats,
  secretFromEnvironment,
  serveHttp,
  setSessionPriority,
  spawnProcess,
  systemClock,
} from "../host/mod.ts";
import { Kernel, type StopDeadline } from "./kernel.ts";
import type { JournalFiles } from "../journal/mod.ts";
import type { ReloadedConfig } from "./reloader.ts";
import type { AbandonedReloadReads } from "./reload_reads.ts";

/** Extra time past runtime.shutdown_timeout_ms before the process exits regardless. */
const SHUTDOWN_GRACE_MS = 1000;

/**
 * How long shutdown may take before the process exits regardless (exit 4):
 * runtime.shutdown_timeout_ms and SHUTDOWN_GRACE_MS, and with the API on the time a request in
 * flight may still take to be answered before the providers are stopped (HTTP_SHUTDOWN_ANSWER_MS),
 * for one still not answered then, the time its "outcome unknown" answer gets to be written
 * (HTTP_SHUTDOWN_DRAIN_MS), and the time an answer written just before that end gets to leave
 * before its connection is dropped (HTTP_SHUTDOWN_FLUSH_MS): together HTTP_SHUTDOWN_MAX_MS, by
 * the end of which the server's shutdown cuts whatever connection is still open.
 */
export function shutdownBudgetMs(config: Config): number {
  return config.runtime.shutdownTimeoutMs + SHUTDOWN_GRACE_MS +
    (config.http.enabled ? HTTP_SHUTDOWN_MAX_MS : 0);
}
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

/**
 * Runs the service until SIGINT/SIGTERM and resolves with the process exit code:
 * 0 after a clean shutdown, 3 when start-up fails, 4 when shutdown itself fails or overruns.
 *
 * A stop signal during start-up stops at once (exit 0 once stopped; a start-up that fails of its
 * own before the stop reached the kernel is said, one ERROR). A second stop signal hurries
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
  const listen = options.onSignal ?? onSignal;
  const signals = watchStopSignals(log, listen);
  // A folder that cannot be fsync'd after a rename (runs.jsonl, the bdSeq file) is said once.
  folderSync.setLog(log.child("files"));
  const kernel = new Kernel(config, {
    spawn: spawnProcess,
    clock: systemClock,
    log,
    files: options.files ?? journalFiles,
    lockDataDir,
    secret: secretFromEnvironment,
    serve: serveHttp,
    processStats: readProcessStats,
    ...(operatingSystem() === "linux" ? { setSessionPriority } : {}),
    ...(options.loadConfig ? { loadConfig: options.loadConfig } : {}),
    ...(options.abandonedReloadReads ? { abandonedReloadReads: options.abandonedReloadReads } : {}),
    // With --log-level, every configuration in effect carries that level: never another one here.
    setLogLevel: (l: LogLevel) => (log.level = l),
  });
  // A stop signal during start-up stops the kernel at once: start() then rejects once everything
  // it started is stopped.
  const starting = kernel.start();
  let startedUp = false;
  starting.then(() => (startedUp = true), () => {});
  // Set once a stop signal came: the stop is under way from then on.
  let stopSignalled = false;
  void signals.first.then(() => (stopSignalled = true));
  // SIGHUP (systemctl reload) re-reads the configuration; one during start-up waits for it (its
  // line says so), and one whose start-up then fails (or is stopped) says that it was dropped.
  // One after a stop signal reloads nothing: the runtime is ending (a reload would be refused);
  // nor does one during start-up whose start-up finishes after a stop signal.
  // Watched from the start too: the default action of SIGHUP would end the process.
  const hangup = watchReloadSignal(listen, () => {
    if (stopSignalled) {
      return log.info("SIGHUP received while stopping: configuration not reloaded");
    }
    log.info(
      startedUp
        ? "SIGHUP received: reloading the configuration"
        : "SIGHUP received during start-up: the configuration is reloaded once start-up finishes",
    );
    // Dropped once a stop signal came (start-up ended by it, or finished as it came: INFO, the
    // stop was asked) or when start-up failed (WARN).
    const stoppedMeanwhile = () => {
      if (!stopSignalled) return false;
      log.info("SIGHUP dropped: configuration not reloaded: the runtime is stopping");
      return true;
    };
    void starting.then(() => {
      if (stoppedMeanwhile()) return;
      if (kernel.reloader) void kernel.reloader.request();
      else log.warn("SIGHUP ignored: configuration reload is not available");
    }, () => {
      if (stoppedMeanwhile()) return;
      log.warn("SIGHUP dropped: configuration not reloaded: start-up did not finish (it failed)");
    });
  });
  // Unset while the stop has not ended (a failed start-up sets its own before the exit's kill).
  let code: ExitCode | undefined;
  // Provider processes the stop did not end, killed at exit (a stop that ended clean exits 4).
  let killedAtExit = 0;
  // Says a start-up's failure of its own cause after a stop signal (once), or null: no such stop.
  let sayOwnFailure: (() => void) | null = null;
  try {
    const first = await Promise.race([
      starting.then(() => null, (err: unknown) => ({ err })),
      signals.first.then((signal) => ({ signal })),
    ]);
    if (first !== null && "err" in first) {
      // The kernel is stopped whatever the logger does: one that throws here would otherwise
      // leave the half-started runtime (its providers, its journals) running.
      try {
        log.error(`start-up failed: ${errorMessage(first.err)}`);
      } finally {
        await stopAfterFailedStart((deadline) => kernel.stop(deadline), config, log);
      }
      code = EXIT_STARTUP_FAILURE;
      return code;
    }
    if (first === null) {
      // The line launchers written for anolis wait for: once, when the API is up and every
      // configured provider is AVAILABLE (a provider that went down meanwhile delays it until it
      // is back; one a reload meanwhile restarts, fails to start or cannot register, until it is
      // up or dropped from the file).
      kernel.whenAllProvidersAvailable(() =>
        log.info(
          `Runtime Ready: ${kernel.registry.hosts.length} provider(s) AVAILABLE, ${kernel.registry.devices().length} device(s)`,
        )
      );
      await notifyReady(log);
      log.info(`${await signals.first} received: shutting down`);
    } else {
      log.info(`${first.signal} received during start-up: stopping`);
      // A start that then fails for a cause of its own (before the stop reached the kernel: a
      // provider that crashed meanwhile) is said, one ERROR naming it; the exit is the stop's.
      // One the stop abandoned that answered later (the data_dir lock held by another runtime)
      // is said once the stop has ended, if it answered by then.
      let ownSaid = false;
      sayOwnFailure = () => {
        const own = kernel.startFailedOnItsOwn;
        if (own === null || ownSaid) return; // ended by the stop: nothing of its own to say
        ownSaid = true;
        log.error(
          `start-up failed as the runtime was stopping (${first.signal}): ` +
            `${errorMessage(own.error)}; exiting as the stop does`,
        );
      };
      void starting.then(undefined, sayOwnFailure);
    }
    await notifyStopping(log);
    // During start-up too: stop() ends whatever start-up stage is waiting.
    code = await shutDown((deadline) => kernel.stop(deadline), signals, config, log);
    sayOwnFailure?.();
  } finally {
    // Nothing may outlive the process: a provider still running now is killed and reaped.
    killedAtExit = await reapProvidersAtExit(code, log, options.killProviders);
    signals.dispose();
    hangup();
  }
  // Judged last, once the providers are reaped: a stage the stop went on without may fail meanwhile.
  return exitCodeAfterStop(code, kernel.stopStagesFailedLate, log, killedAtExit);
}

/**
 * Kills and reaps the provider processes still running as the process exits
 * (killProviderProcesses, up to PROVIDER_REAP_TIMEOUT_MS) and says what it found, one line each:
 * those the stop left running (not sent SIGKILL before) as `ERROR N provider process(es) still
 * running at exit: killed` -- unless the exit's last line says them (`code` EXIT_OK: the stop
 * ended clean, and exitCodeAfterStop makes them its "shutdown failed", exit 4); those sent SIGKILL
 * before (a provider's stop, a second stop signal) and still not reaped as a WARN: killed by the
 * stop, not a cause of exit 4. `code`: the exit code so far, unset when the stop did not end (a
 * throw). `kill`: killProviderProcesses (a test's stands for providers slow to be reaped).
 * Resolves with how many the stop left running.
 */
export async function reapProvidersAtExit(
  code: ExitCode | undefined,
  log: Logger,
  kill: (timeoutMs: number) => Promise<ProvidersKilledAtExit> = killProviderProcesses,
): Promise<number> {
  const { killed, killedBefore } = await kill(PROVIDER_REAP_TIMEOUT_MS);
  if (killed > 0 && code !== EXIT_OK) {
    log.error(`${killed} provider process(es) still running at exit: killed`);
  }
  if (killedBefore > 0) {
    log.warn(
      `${killedBefore} provider process(es) sent SIGKILL before (a provider's stop, a second ` +
        `stop signal) still not reaped at exit: sent SIGKILL again, waited for up to ` +
        `${PROVIDER_REAP_TIMEOUT_MS} ms (PROVIDER_REAP_TIMEOUT_MS)`,
    );
  }
  return killed;
}

/**
 * The exit code of a shutdown that ended with `code`, given the stop's stages that failed after the
 * stop had settled (Kernel.stopStagesFailedLate: one it went on without past its bound, whose disk
 * answered at last with an error), and `providersKilledAtExit` provider processes the stop did not
 * end (still running at exit, not sent SIGKILL before: killed then). A stage that failed is a
 * failed stop whenever the process learns of it before it exits, and so is a provider the stop
 * left running: exit 4 (EXIT_INTERNAL_ERROR), one ERROR line naming what failed. One that fails
 * after the exit cannot count. A clean shutdown (EXIT_OK, none failed late, no provider killed at
 * exit) says "shutdown complete" here, its last line: never before an ERROR that makes it exit 4.
 */
export function exitCodeAfterStop(
  code: ExitCode,
  failedLate: readonly string[],
  log: Logger,
  providersKilledAtExit = 0,
): ExitCode {
  if (code !== EXIT_OK) return code;
  if (failedLate.length === 0 && providersKilledAtExit === 0) {
    log.info("shutdown complete");
    return EXIT_OK;
  }
  const what = [
    ...(failedLate.length > 0
      ? [
        `${failedLate.length} stop stage(s) failed after the stop had ended without them: ` +
        failedLate.join(", "),
      ]
      : []),
    ...(providersKilledAtExit > 0
      ? [`${providersKilledAtExit} provider process(es) not stopped by the stop (killed at exit)`]
      : []),
  ];
  log.error(`shutdown failed: ${what.join("; ")}`);
  return EXIT_INTERNAL_ERROR;
}

/** Options of runService. */
export interface RunServiceOptions {
  /** Re-reads the --config file (SIGHUP); absent: SIGHUP is logged and ignored. */
  readonly loadConfig?: () => Promise<ReloadedConfig>;
  /**
   * The file-system questions of reloads left waiting, counted for the whole process: the one
   * `loadConfig` counts its own in, so that the kernel's reads of a reload count with them.
   */
  readonly abandonedReloadReads?: AbandonedReloadReads;
  /**
   * The journals' files under runtime.data_dir (audit trail, run records, history); default: the
   * host's real files (journalFiles). A test's stand for a disk that fails or hangs in the stop.
   */
  readonly files?: JournalFiles;
  /**
   * Kills and reaps the providers still running at exit (reapProvidersAtExit); default
   * killProviderProcesses. A test's stands for providers slow to be reaped, while a stop stage
   * the stop went on without fails (Kernel.stopStagesFailedLate).
   */
  readonly killProviders?: (timeoutMs: number) => Promise<ProvidersKilledAtExit>;
  /**
   * Where the process's signals come from: `listen(signal, listener)` returns the function that
   * stops listening; default the host's (onSignal). A test running the service in its own
   * process sends its "signals" through a stand, not to the process: a real SIGTERM reaches
   * everything listening in the process, tests that run beside it included.
   */
  readonly onSignal?: SignalSource;
}

/** Listens for `signal`; returns the function that stops listening (onSignal's shape). */
export type SignalSource = (signal: Deno.Signal, listener: () => void) => () => void;

/**
 * Stops what a failed start-up started, within the shutdown budget (shutdownBudgetMs), which the
 * stop is handed as its deadline: a stop held by the disk that failed the start (the audit
 * journal's last write to a hung mount) must not keep the process from exiting with its start-up
 * failure (exit 3, so that systemd restarts it). A stop that fails or overruns is said (ERROR);
 * the providers still running are killed by runService's end either way.
 */
export async function stopAfterFailedStart(
  stop: (deadline: StopDeadline) => Promise<void>,
  config: Config,
  log: Logger,
  clock: Pick<Clock, "setTimer" | "clearTimer" | "monoMs"> = systemClock,
): Promise<void> {
  const budgetMs = shutdownBudgetMs(config);
  const endsAtMono = clock.monoMs() + budgetMs;
  const stopped = stop({ leftMs: () => endsAtMono - clock.monoMs() }).then(
    () => "stopped" as const,
    (err: unknown) => {
      log.error(`stop after failed start-up: ${errorMessage(err)}`);
      return "stopped" as const;
    },
  );
  if (await raceTimeout(clock, stopped, budgetMs, "overrun" as const) === "overrun") {
    log.error(`stop after failed start-up exceeded ${budgetMs} ms; exiting anyway`);
  }
}

/** Calls `onHangup` for every SIGHUP until the returned function is called. */
function watchReloadSignal(listen: SignalSource, onHangup: () => void): () => void {
  return listen("SIGHUP", onHangup);
}

/** What shutDown takes from the host (injected by tests; the real clock and reaper otherwise). */
export interface ShutdownDeps {
  readonly clock: Pick<Clock, "setTimer" | "clearTimer" | "monoMs">;
  /** Kills the provider processes still alive; resolves once they are gone (or bounded). */
  readonly killProviders: () => Promise<unknown>;
}

/**
 * Waits for the stop within the shutdown budget, hurrying it on a second stop signal: the
 * providers are killed and the rest of shutdown gets HURRIED_SHUTDOWN_MS from that signal. Later
 * signals change nothing (they never push that deadline back). `stop` is the stop under way, or
 * starts it given the deadline this enforces (what is left of it, hurried or not). A stop that
 * ended in time says nothing here: its caller says "shutdown complete" (exitCodeAfterStop).
 */
export async function shutDown(
  stop: Promise<void> | ((deadline: StopDeadline) => Promise<void>),
  signals: Pick<StopSignals, "onRepeat">,
  config: Config,
  log: Logger,
  deps: ShutdownDeps = {
    clock: systemClock, // the process's own deadline, on the real clock this root owns
    killProviders: () => killProviderProcesses(PROVIDER_REAP_TIMEOUT_MS),
  },
): Promise<ExitCode> {
  // The budget is enforced: whatever is still running past it must not keep the process alive.
  const budgetMs = shutdownBudgetMs(config);
  const clock = deps.clock;
  let limit = `${budgetMs} ms`;
  let expire: (outcome: "overrun") => void = () => {};
  const overrun = new Promise<"overrun">((r) => (expire = r));
  let endsAtMono = clock.monoMs() + budgetMs;
  let timer = clock.setTimer(() => expire("overrun"), budgetMs);
  let hurried: Promise<unknown> | null = null;
  const hurry = Promise.withResolvers<void>(); // the stop's StopDeadline.hurried
  signals.onRepeat((signal) => {
    if (hurried !== null) {
      log.warn(`${signal} received again: already hurrying (${limit})`);
      return;
    }
    log.warn(`${signal} received again: killing providers now`);
    hurried = deps.killProviders();
    clock.clearTimer(timer);
    endsAtMono = clock.monoMs() + HURRIED_SHUTDOWN_MS;
    timer = clock.setTimer(() => expire("overrun"), HURRIED_SHUTDOWN_MS);
    limit = `${HURRIED_SHUTDOWN_MS} ms after the second signal`;
    hurry.resolve();
  });
  try {
    const stopped = typeof stop === "function"
      ? stop({ leftMs: () => endsAtMono - clock.monoMs(), hurried: hurry.promise })
      : stop;
    const outcome = await Promise.race([stopped.then(() => "done" as const), overrun]);
    await hurried;
    if (outcome === "overrun") {
      log.error(`shutdown exceeded ${limit}; exiting anyway`);
      return EXIT_INTERNAL_ERROR;
    }
    // "shutdown complete" is said by exitCodeAfterStop, after the providers' reap: a stage the
    // stop went on without that fails by then is exit 4; one failing later is only logged.
    return EXIT_OK;
  } catch (err) {
    log.error(`shutdown failed: ${errorMessage(err)}`);
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
function watchStopSignals(
  log: Logger,
  listen: SignalSource,
  monoMs: () => number = systemClock.monoMs,
): StopSignals {
  const handlers: Array<() => void> = [];
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
    handlers.push(listen(sig, h));
  }
  return {
    first,
    onRepeat(listener) {
      repeatListener = listener;
      if (missedRepeat !== null) listener(missedRepeat);
    },
    dispose() {
      for (const remove of handlers) remove();
      handlers.length = 0;
    },
  };
}
