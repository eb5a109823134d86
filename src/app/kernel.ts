/**
 * The kernel: builds every subsystem from the configuration and the host ports, starts and stops
 * them in order, and is the one owner of the running configuration (a reload is applied here,
 * section by section, by each section's owner: app/live_config.ts, docs/architecture.md).
 *
 * Start: data_dir lock -> audit journal -> telemetry -> run journal replay -> history (ring,
 * disk tier, incidents) -> TLS files (HTTP, Sparkplug) -> what the HTTP server would refuse
 * (certificate, port probe) -> run records on the event bus -> tree ->
 * providers (concurrently) -> one priming poll -> polling, alarms, automation -> HTTP. What is
 * read from disk before any spawn (lock to TLS files) is bounded by runtime.startup_timeout_ms,
 * and then the providers and the priming poll together are; stop() during start acts at once (it
 * ends the opening's wait, and ending the providers ends whatever stage waits on them).
 * Stop: HTTP (streams first) -> automation, alarms, polling -> incidents and history ->
 * providers -> audit journal -> run journal -> telemetry flush.
 */
import {
  bigintsAsDigits,
  type Clock,
  deadlineExceeded,
  errorMessage,
  failedPrecondition,
  internal,
  type Logger,
  type LogLevel,
  MAX_NAMED_IN_WARNING,
  type MqttConnect,
  namedList,
  namedProviderId,
  neverThrowing,
  type ProcessStats,
  type ProviderHealthView,
  quoteCutText,
  raceTimeout,
  RUNTIME_VERSION,
  RuntimeError,
  type SetSessionPriorityFn,
  type SpawnFn,
  unavailable,
  urlWithoutPassword,
} from "../common/mod.ts";
import { SessionPriority } from "./session_priority.ts";
import {
  type Config,
  type PathQuestions,
  SPARKPLUG_PASSWORD_ENV,
  SPARKPLUG_USERNAME_ENV,
  sparkplugIds,
  unsendableToken,
} from "../config/mod.ts";
import {
  actuatingFunctionCount,
  type AuditOrigin,
  type CallRequest,
  CallRouter,
  ModeManager,
  ParameterStore,
  validateDeclaredCalls,
  vetoingHookProblems,
} from "../control/mod.ts";
import { EventBus } from "../events/mod.ts";
import {
  checkServe,
  checkTlsFiles,
  commandOnPath,
  connectMqttJs,
  DATA_DIR_LOCK_FILE,
  type DataDirLock,
  fittedMaxConnections,
  httpReservedFds,
  type HttpServerHandle,
  journalFiles,
  type PathStat,
  READ_FILE_MAX_BYTES,
  readFileBytes,
  readProcessStats,
  readRegularFile,
  type RegularFileRead,
  type ServeOptions,
  smallStateFile,
  statPath,
  TLS_FILE_MAX_BYTES,
} from "../host/mod.ts";
import {
  HttpApi,
  type HttpServices,
  resolveApiToken,
  resolveNamedTokens,
  tokenChangesText,
  withDefaultToken,
} from "../http/mod.ts";
import { type JournalFiles, type JournalLineCount, WatchedJournalFiles } from "../journal/mod.ts";
import { type InterruptedCall, type RunCallEntry, RunRegistry } from "../runs/mod.ts";
import {
  History,
  INCIDENT_GONE_FILE,
  IncidentRecorder,
  qualityName,
  ringValue,
} from "../history/mod.ts";
import {
  loadInfluxClient,
  telemetryOptionsFromConfig,
  TelemetryWriter,
  type TelemetryWriterOptions,
} from "../telemetry/mod.ts";
import {
  describeNotReady,
  type ProviderHost,
  type ProviderPlan,
  ProviderRegistry,
} from "../providers/mod.ts";
import {
  deviceDownAfterMs,
  DeviceOutages,
  Inventory,
  providerHealthViews,
  StateCache,
} from "../state/mod.ts";
import {
  coverageLost,
  coverageLostText,
  effectiveSafeState,
  Estop,
  type EstopAction,
  type LadderCoverage,
  ladderCoverage,
  type ReadBackWait,
  rungDropped,
  rungDropText,
  type SoftwareSafeState,
  type StopActionsWait,
} from "../safety/mod.ts";
import { AutomationEngine, type ReadFileFn } from "../automation/mod.ts";
import { AlarmEngine } from "../alarms/mod.ts";
import { type AuditEntry, AuditTrail, boundedEntry } from "../audit/mod.ts";
import {
  diffSections,
  same,
  sectionChanges,
  type SectionKey,
  sectionOf,
  sectionsToOffer,
  withCurrentSources,
} from "./live_config.ts";
import {
  keptAlarmsNarrowed,
  keptProviderRefusal,
  providerWeakenings,
  sameAlarm,
  sameInterlock,
  type Weakening,
} from "./run_gate.ts";
import type { ReplayWalk } from "../sparkplug/mod.ts";
import {
  type MutableReloadReport,
  namedFailedStarts,
  RELOAD_STOPPING,
  type ReloadReport,
  type SectionApply,
  type SectionResult,
  startedReloadReport,
} from "./reload_report.ts";
import { ConfigReloader, type ReloadedConfig, type ReloadTreeFiles } from "./reloader.ts";
import { AbandonedReloadReads } from "./reload_reads.ts";
import { ProtectionUnits } from "./protection_units.ts";

/** What the kernel needs from the host (injected so tests can pass their own). */
export interface KernelHost {
  readonly spawn: SpawnFn;
  readonly clock: Clock;
  readonly log: Logger;
  /**
   * Reads behavior-tree files at start-up's load (default: host readFileBytes); a reload reads
   * them through readRegularFile, bounded (reloadFileReader).
   */
  readonly readFile?: ReadFileFn;
  /** The journals' files under runtime.data_dir: audit trail, run records (default: real files). */
  readonly files?: JournalFiles;
  /**
   * Reads a regular file of at most `maxBytes` bytes off the event loop's thread, never rejecting
   * (default: host readRegularFile): the TLS files (http.tls_*, sparkplug.tls.*), read at start
   * before any provider is spawned, within runtime.startup_timeout_ms.
   */
  readonly readRegularFile?: (path: string, maxBytes: number) => Promise<RegularFileRead>;
  /**
   * Reads a secret from the environment (INFLUXDB_TOKEN, RUNTIME_API_TOKEN, http.tokens'
   * token_env), taking it out of what providers inherit; default: no secrets.
   */
  readonly secret?: (name: string) => string | undefined;
  /** Binds the HTTP server; absent: the API is built (`api`) but not served. */
  readonly serve?: (options: ServeOptions) => Promise<HttpServerHandle>;
  /**
   * What `serve` would refuse, checked before any provider is spawned (certificate dates, key and
   * certificate, a port probe); used only with `serve`. Default: host checkServe.
   */
  readonly checkServe?: (options: ServeOptions) => Promise<void>;
  /** This process's RSS and CPU time (GET /metrics; default: read from /proc). */
  readonly processStats?: () => Promise<ProcessStats>;
  /** Re-reads the configuration file (SIGHUP); absent: no reloader. */
  readonly loadConfig?: () => Promise<ReloadedConfig>;
  /**
   * The file-system questions of reloads left waiting, process-wide: the one `loadConfig` counts
   * its own in (main.ts), so that RELOAD_ABANDONED_READS_MAX bounds them all. Default: this
   * kernel's own.
   */
  readonly abandonedReloadReads?: AbandonedReloadReads;
  /**
   * Sets this process's session priority (Linux autogroups; src/host/priority.ts); absent: the
   * runtime's priority is never changed (SessionPriority).
   */
  readonly setSessionPriority?: SetSessionPriorityFn;
  /**
   * Sets the process's log level (a reload's `logging`). With --log-level, the configuration in
   * effect carries that level, re-read files too (main.ts withOverrides): a reload never changes it.
   */
  readonly setLogLevel: (level: LogLevel) => void;
  /** The MQTT client the Sparkplug edge node uses; default MQTT.js (host/mqtt.ts, on demand). */
  readonly mqttConnect?: MqttConnect;
  /**
   * Takes runtime.data_dir's lock (one runtime per folder: host/data_dir_lock.ts), the first step
   * of the start; absent: no lock (tests on their own folders).
   */
  readonly lockDataDir?: (dir: string) => Promise<DataDirLock>;
  /**
   * The Sparkplug bdSeq store at `path` (under runtime.data_dir); default bdSeqFile, a one-line
   * file (a test's stands for a disk that hangs).
   */
  readonly bdSeqStore?: (path: string) => BdSeqFile;
}

/**
 * The Sparkplug B edge node as the kernel holds it (src/sparkplug/, loaded on demand: no import of
 * that folder, not even of its types, is in the kernel's static graph).
 */
export interface SparkplugHandle {
  /** Whether the births of a live broker connection have been published. */
  readonly online: boolean;
  /** Whether the broker connection is up (births may still wait for the primary host). */
  readonly connected: boolean;
  /** The primary host's last STATE said online; null without sparkplug.primary_host_id. */
  readonly primaryHostOnline: boolean | null;
  /** Store and forward now: DDATA kept and their payload bytes. */
  readonly stored: { readonly messages: number; readonly bytes: number };
  /**
   * With the history ring as store and forward: data not published waits in the ring for a
   * replay, or is being replayed (always false with the queue).
   */
  readonly replayPending: boolean;
  /** With the history ring: the earliest outage start waiting for a replay (epoch ms), or null. */
  readonly outageStartMs: number | null;
  readonly bdSeq: number;
  readonly counts: {
    readonly connects: number;
    readonly births: number;
    readonly published: number;
    readonly publishFailures: number;
    readonly stored: number;
    readonly storeDropped: number;
    readonly replayed: number;
    readonly commandsAccepted: number;
    readonly commandsRefused: number;
    readonly commandsFailed: number;
    readonly commandsIgnored: number;
    readonly hostOfflineDisconnects: number;
    readonly hostStatesIgnored: number;
    readonly internalErrors: number;
    readonly tooLargeDropped: number;
    readonly foreignBirths: number;
  };
  /**
   * Devices not born because their DBIRTH is over sparkplug.max_message_bytes: their Sparkplug
   * device id and the DBIRTH's size.
   */
  readonly unbornTooLarge: readonly { readonly deviceId: string; readonly bytes: number }[];
  /**
   * The bdSeq save under runtime.data_dir the disk has not answered yet, or null: stop() does not
   * wait for it, the data_dir lock does.
   */
  readonly bdSeqSaving: Promise<void> | null;
  /** NBIRTH and every DBIRTH again on the current connection. */
  rebirth(): void;
  /** Ends a start still under way: it opens no broker session (a failed start's stop). */
  endStart(): void;
  /** The runtime is stopping: DCMDs are refused from now on (an NCMD e-stop is still taken). */
  closeCommands(): void;
  stop(): Promise<void>;
}

/**
 * Longest wait at a stop, in its "state cache" stage, for the polls still in flight (a poll pass
 * and the GetHealth after it: StateCache.stop) before the stop goes on without them: a provider
 * that answers at all answers a poll within milliseconds, and one whose read hangs would hold the
 * providers' stop (their stdin's close, on which they apply their own safe state) until its
 * timeout_ms, which may be longer than runtime.shutdown_timeout_ms. Less when the stop's budget
 * leaves less before the providers' own stop (stopActionsShutdownWaitMs), or once a second stop
 * signal hurried it. Past it one WARN names the providers whose poll was still in flight, and
 * nothing those polls end with is taken (StateCache.abandonPolls): the providers' stop ends them.
 */
export const CACHE_STOP_POLLS_MS = 500;

/**
 * Longest wait at a stop for the incident records and the history's last rows (and its disk's
 * close) before the providers are stopped: an SD card whose writes stall must not keep them
 * running until the process's shutdown budget ends and kills them (no safe state of their own).
 * What is not written by then goes on being written while they stop and the journals close, and is
 * waited for last, with telemetry's last flush, within what the stop's budget leaves past
 * TELEMETRY_STOP_RESERVE_MS (runtime.shutdown_timeout_ms without a process deadline): a fixed share
 * kept for the stages after it (the journals' bounds) left a slow disk's rows ~0 ms of a 3 s budget
 * that those stages did not use. The rows still not written then are counted in one WARN.
 */
export const HISTORY_STOP_BEFORE_PROVIDERS_MS = 1000;

/**
 * Longest wait at a stop for the audit journal's close (its open entry and closing record written,
 * fsync'd, the file closed), and for the run records' (what is pending written, fsync'd, the files
 * closed): a disk that hangs (a hung mount, a dying SD card) must not hold the stop until the
 * process's shutdown budget ends (exit 4) with telemetry's last flush never run. Past it the stop
 * goes on (one WARN naming the bound); what the journal had handed the disk (a write the disk holds,
 * the lines queued behind it) is written if the disk answers before the process ends, and the
 * data_dir lock is kept until then (a process that exits first releases it with its files): no
 * second runtime on the folder while this one may still write there. Each also ends with what the
 * stop's budget leaves past TELEMETRY_STOP_RESERVE_MS (after a second stop signal, the hurried
 * budget's: StopDeadline.hurried cuts a wait under way).
 */
export const AUDIT_STOP_MS = 1000;
/** See {@link AUDIT_STOP_MS}: the run records' close. */
export const RUNS_STOP_MS = 1000;

/**
 * How long a stop waits, after the providers' stop, for the e-stop's read-backs still under way
 * (one a second stop signal or its bound left unwaited for) to end (Estop.endReadBacks: their read
 * in flight answered, a stopped provider's at once): said, published and audited before the
 * journals close and before `runtime stopped`, not after it. Less when the stop's budget leaves
 * less past TELEMETRY_STOP_RESERVE_MS.
 */
export const READ_BACKS_END_AT_STOP_MS = 500;

/**
 * What a stop keeps of its whole budget (the process's deadline, {@link StopDeadline}) past the
 * providers' own stop (runtime.shutdown_timeout_ms) when it waits for the stop actions still
 * running on them before it stops them (stopActionsShutdownWaitMs), and what the providers' stop
 * itself leaves of it (providersStopBudgetMs): the stages after the providers -- the audit
 * journal's close, the run records, telemetry's last flush with its reserve
 * (TELEMETRY_STOP_RESERVE_MS) and the data_dir lock's release.
 */
export const STOP_ACTIONS_SHUTDOWN_RESERVE_MS = 500;

/**
 * The least a stop's providers' stop gets (ProviderSession.terminate: 60 % of it for stdin's close,
 * the ADPP stop signal on which a provider applies its own safe state, before SIGTERM) when the
 * stop's whole budget leaves less past STOP_ACTIONS_SHUTDOWN_RESERVE_MS (a disk or drain that took
 * the time before it): taken from that reserve, never past the process's deadline itself. Not
 * after a second stop signal: the operator asked for the kill (Kernel.stop kills at once).
 */
export const PROVIDERS_STOP_MIN_MS = 200;

/**
 * The budget of a stop's providers' stop (ProviderSession.terminate: stdin closed, then SIGTERM,
 * then SIGKILL, in shares of it): runtime.shutdown_timeout_ms (`budgetMs`), no more than what the
 * stop's whole budget (`deadline`) leaves past STOP_ACTIONS_SHUTDOWN_RESERVE_MS, and no less than
 * PROVIDERS_STOP_MIN_MS (nor than what the deadline leaves, when that is less): a provider always
 * gets its chance to reach its safe state on stdin's close, not SIGKILL at once. `hurried` (a
 * second stop signal: StopDeadline.hurried) takes the floor away: the process killed the providers
 * then alive, and Kernel.stop kills at once one it did not reach (a start-up spawn still queued at
 * that kill, started after it: none is restarted once the stop has begun), as one a reload is
 * still retiring (ProviderRegistry.stopAll's `hurried`); this budget bounds them only should that
 * kill miss one. `budgetMs` without a process deadline (a test). Read when the providers' stop
 * begins.
 */
export function providersStopBudgetMs(
  budgetMs: number,
  deadline: StopDeadline | undefined,
  hurried = false,
): number {
  if (deadline === undefined) return budgetMs;
  const leftMs = Math.max(0, deadline.leftMs());
  const share = Math.min(budgetMs, Math.max(0, leftMs - STOP_ACTIONS_SHUTDOWN_RESERVE_MS));
  return hurried ? share : Math.max(share, Math.min(PROVIDERS_STOP_MIN_MS, budgetMs, leftMs));
}

/**
 * The longest wait of a stop, before it stops the providers, for the stop actions still running
 * on them (an e-stop's safe-state calls, the hook calls into FAULT: Estop.stopActionsSettled, each
 * provider's wait also within its own bound): what the stop's whole budget (`deadline`) leaves
 * past the providers' own stop (`budgetMs`, runtime.shutdown_timeout_ms) and
 * STOP_ACTIONS_SHUTDOWN_RESERVE_MS, so that the providers still get their whole stop before the
 * process gives up on it; `budgetMs` without a process deadline (a test). Read when the wait
 * begins.
 */
export function stopActionsShutdownWaitMs(
  budgetMs: number,
  deadline: StopDeadline | undefined,
): number {
  return deadline === undefined
    ? budgetMs
    : Math.max(0, deadline.leftMs() - budgetMs - STOP_ACTIONS_SHUTDOWN_RESERVE_MS);
}

/**
 * What a stop keeps of its whole budget (the process's deadline, {@link StopDeadline}) after
 * telemetry's last flush: the abort of a write still in flight, the WARN that counts the rows left
 * unwritten, and the data_dir lock's release, all before the process gives up on the stop.
 */
export const TELEMETRY_STOP_RESERVE_MS = 200;

/**
 * Telemetry's flush budget at a stop without a process deadline (a stop after a failed start-up,
 * a test): half of runtime.shutdown_timeout_ms, at least this.
 */
export const TELEMETRY_STOP_MIN_MS = 200;

/**
 * Longest wait of a reload for each file it reads again: a TLS file (to say whether it changed;
 * past it the file is reported `unreadable now` and the reload goes on), the behavior tree and
 * each of its includes (past it the tree's reload fails naming the file, the tree in force kept).
 * Off the event loop's thread, so a hung mount holds neither the API nor the e-stop.
 */
export const RELOAD_FILE_READ_TIMEOUT_MS = 2000;

/**
 * Bound on the WARN lines naming the behavior tree's calls the providers' declarations refuse in
 * AUTO, one per call, each time they are said (Kernel#sayRefusedTreeCalls: a provider's new
 * inventory, start-up, a reload's end -- across every provider it started or that came back
 * meanwhile -- a tree swapped in): the rest are counted in one line.
 */
export const MAX_REFUSED_TREE_CALL_LINES = 20;

/** What a reload says of a file-system question that did not answer within its bound. */
const NO_ANSWER_IN_TIME =
  `no answer within ${RELOAD_FILE_READ_TIMEOUT_MS} ms (a hung mount or a failing disk?)`;

/**
 * How a reload reads a regular file (its configuration file, in main.ts): as `read` (default host
 * readRegularFile, off the event loop's thread), within RELOAD_FILE_READ_TIMEOUT_MS; one that does
 * not answer by then is refused saying so -- `no answer within 2000 ms (a hung mount or a failing
 * disk?)`. A read left waiting holds one of Deno's worker threads until it returns: `abandoned`
 * counts it (process-wide), and none is asked while RELOAD_ABANDONED_READS_MAX are left waiting
 * (refused saying which).
 */
export function reloadRegularFileReader(
  clock: Pick<Clock, "setTimer" | "clearTimer">,
  read: (path: string, maxBytes: number) => Promise<RegularFileRead> = readRegularFile,
  abandoned: AbandonedReloadReads = new AbandonedReloadReads(),
): (path: string, maxBytes: number) => Promise<RegularFileRead> {
  return async (path, maxBytes) => {
    const got = await abandoned.ask(
      clock,
      RELOAD_FILE_READ_TIMEOUT_MS,
      () => path,
      () => read(path, maxBytes),
    );
    if (got.kind === "answered") return got.value;
    return { ok: false, message: got.kind === "late" ? NO_ANSWER_IN_TIME : notAsked(got.why) };
  };
}

/** What a reload says of a question it did not ask (RELOAD_ABANDONED_READS_MAX left waiting). */
function notAsked(why: string): string {
  return `not asked: ${why}`;
}

/**
 * How a reload reads a file again (the behavior tree and each of its includes: the reload's
 * configuration checks in main.ts, whose reads the kernel loads; the kernel's reloadTree when
 * given none, a reload called directly): as reloadRegularFileReader over
 * `read` (default host readRegularFile) and `abandoned`, at most READ_FILE_MAX_BYTES. Rejects
 * saying why, which the tree's load reports naming the file: a RuntimeError DEADLINE_EXCEEDED --
 * `no answer within 2000 ms (a hung mount or a failing disk?)` -- for one that does not answer,
 * UNAVAILABLE for one not asked (RELOAD_ABANDONED_READS_MAX left waiting); readTreeFiles asks no
 * further read after either.
 */
export function reloadFileReader(
  clock: Pick<Clock, "setTimer" | "clearTimer">,
  read: (path: string, maxBytes: number) => Promise<RegularFileRead> = readRegularFile,
  abandoned: AbandonedReloadReads = new AbandonedReloadReads(),
): (path: string) => Promise<Uint8Array> {
  return async (path) => {
    const got = await abandoned.ask(
      clock,
      RELOAD_FILE_READ_TIMEOUT_MS,
      () => path,
      () => read(path, READ_FILE_MAX_BYTES),
    );
    if (got.kind === "late") throw deadlineExceeded(NO_ANSWER_IN_TIME);
    if (got.kind === "refused") throw unavailable(notAsked(got.why));
    if (!got.value.ok) throw new Error(got.value.message);
    return got.value.bytes;
  };
}

/**
 * How a reload's configuration checks ask the file system (main.ts, loadConfigFileAsking): what
 * is at each path the file names (`stat`, default host statPath) and whether each bare provider
 * command is on PATH (`onPath`, default host commandOnPath), off the event loop's thread, each
 * question within RELOAD_FILE_READ_TIMEOUT_MS. One that does not answer by then is `unanswered`
 * (a command's names the PATH entry it was at): the key naming it gets an error, the reload is
 * refused, the configuration in force kept. A stat left waiting holds one of Deno's worker threads
 * until it returns (the loader asks PATH_QUESTIONS_IN_FLIGHT at a time, no more once one hung):
 * `abandoned` counts it, and none is asked while RELOAD_ABANDONED_READS_MAX are left waiting.
 */
export function reloadPathAnswers(
  clock: Pick<Clock, "setTimer" | "clearTimer">,
  stat: (path: string) => Promise<PathStat> = statPath,
  onPath: (command: string, asking: (path: string) => void) => Promise<boolean> = commandOnPath,
  abandoned: AbandonedReloadReads = new AbandonedReloadReads(),
): PathQuestions {
  return {
    stat: async (path) => {
      const got = await abandoned.ask(
        clock,
        RELOAD_FILE_READ_TIMEOUT_MS,
        () => path,
        () => stat(path),
      );
      if (got.kind === "answered") return got.value;
      return {
        kind: "unanswered",
        why: got.kind === "late" ? NO_ANSWER_IN_TIME : notAsked(got.why),
      };
    },
    commandExists: async (command) => {
      let asking = "";
      const got = await abandoned.ask(
        clock,
        RELOAD_FILE_READ_TIMEOUT_MS,
        () => asking,
        () => onPath(command, (path) => (asking = path)),
      );
      if (got.kind === "late") {
        return { kind: "unanswered", why: `${asking}: ${NO_ANSWER_IN_TIME}` };
      }
      if (got.kind === "refused") return { kind: "unanswered", why: notAsked(got.why) };
      return { kind: got.value ? "found" : "none" };
    },
  };
}

/**
 * The budget of the flush to the old database when a reload retargets telemetry: half of
 * runtime.shutdown_timeout_ms, at least TELEMETRY_STOP_MIN_MS (a stop meanwhile cuts it short to
 * its own budget: TelemetryWriter.stop).
 */
function telemetryReloadFlushMs(shutdownTimeoutMs: number): number {
  return Math.max(TELEMETRY_STOP_MIN_MS, shutdownTimeoutMs / 2);
}

/**
 * The end of a stop's whole budget as the process enforces it (app/process.ts shutDown: the
 * shutdown budget, or what a second stop signal left of it): read when a stage starts.
 */
export interface StopDeadline {
  /** Milliseconds left until the process gives up on the stop (0 or less: none). */
  leftMs(): number;
  /**
   * Resolves when a second stop signal hurries the stop (the providers are killed, what is left
   * is HURRIED_SHUTDOWN_MS): a wait bounded when it began ends then. Absent: it never hurries.
   */
  readonly hurried?: Promise<void>;
}

/** Reloads since start when there is no reloader. */
const NO_RELOADS = { success: 0, failure: 0, lastSuccessEpochSeconds: null } as const;

/** Why the calls of a tree a reload swapped in are said (#warnRefusedTreeCallsOf). */
const TREE_RELOADED = "reloaded";

/**
 * The running service: every subsystem, built from the configuration and the host ports, with
 * their start and stop order, and the configuration in effect.
 */
export class Kernel {
  #config: Config;
  readonly host: KernelHost;
  readonly bus: EventBus;
  readonly registry: ProviderRegistry;
  /** The runtime's session priority while providers start (absent without host.setSessionPriority). */
  readonly #sessionPriority?: SessionPriority;
  /** The registry as the upper layers may see it: read-only, no frame (state/inventory.ts). */
  readonly inventory: Inventory;
  readonly cache: StateCache;
  /** Whether each device is failing or down (AUTO gate, device-loss latch, alarms). */
  readonly outages: DeviceOutages;
  readonly router: CallRouter;
  /** Kernel mode (IDLE at start); its gate is on the router. */
  readonly modes: ModeManager;
  /** Automation parameters; absent when automation is disabled (HTTP answers 503). */
  readonly parameters?: ParameterStore;
  /** Software e-stop latch and safe-state ladder; its gate is on the router. */
  readonly estop: Estop;
  /** Behavior-tree automation; absent when automation is disabled (HTTP answers 503). */
  readonly automation?: AutomationEngine;
  /** Alarms and interlocks: always present (empty without configured ones). */
  readonly alarms: AlarmEngine;
  /** Who applies each live section of a reload (app/live_config.ts). */
  readonly #owners = new Map<SectionKey, SectionApply>();
  /** Audit trail of every actuating decision (docs/http-api.md "Audit trail"), journaled under
   * runtime.data_dir from start(). */
  readonly audit: AuditTrail;
  /** Run records (journal under runtime.data_dir). */
  readonly runs: RunRegistry;
  /** Telemetry writer; a reload that changes `telemetry` retargets it in place. */
  readonly telemetry: TelemetryWriter;
  /** The full-rate ring and the disk tier (docs/history.md); absent when history.enabled is false. */
  readonly history?: History;
  /** Incident records around every stop; absent when history.enabled is false. */
  readonly incidents?: IncidentRecorder;
  /** What the HTTP API is handed: the kernel's services, read-only ports where they exist. */
  readonly services: HttpServices;
  /** The HTTP API (served from start() when http.enabled and the host can serve). */
  readonly api: HttpApi;
  /** Serializes SIGHUP reloads; absent when the host cannot re-read the file. */
  readonly reloader: ConfigReloader | null;
  #http: HttpServerHandle | null = null;
  /**
   * The TLS files as read at start, by configuration key (FILES_READ_AT_START): a reload compares
   * them, as a renewal rewrites them in place (same paths) and only a restart reads them again.
   */
  readonly #filesRead = new Map<
    string,
    { readonly path: string; readonly bytes: Uint8Array; readonly maxBytes: number }
  >();
  #sparkplug: SparkplugHandle | null = null;
  /** SPARKPLUG_USERNAME / SPARKPLUG_PASSWORD as read at construction (only when enabled). */
  #sparkplugCredentials: { username?: string | undefined; password?: string | undefined } = {};
  #startedAtMono = 0;
  /** runtime.data_dir's lock while this runtime holds it (KernelHost.lockDataDir). */
  #dataDirLock: { readonly release: () => void } | null = null;
  /**
   * The opening of runtime.data_dir a start abandoned on a hung mount (#openFiles), settled once
   * its call answered and what that late call made was removed again (JournalWriter.open); null
   * when none was abandoned there. The stop keeps the data_dir lock until it settles.
   */
  #abandonedOpening: Promise<unknown> | null = null;
  /**
   * Calls the audit journal's opening records `interrupted` (at most what its recovery scan
   * finds), kept for the run registry's start; null once it started.
   */
  #interruptedCalls: InterruptedCall[] | null = [];
  /**
   * The number of the last call written ahead when the open run opened or the last one closed
   * (AuditTrail.runBoundary): the outcomes of calls written ahead up to it, recorded later,
   * are no events of the open run, however many were in flight (AUDIT_MAX_UNSETTLED bounds only
   * the calls inFlightCalls lists).
   */
  #lastIntentBeforeRun = 0;
  /**
   * The write-ahead numbers (from, to] of the calls decided while a close of the open run was
   * under way that then failed, or null: they name no run, and the run, which stays open, counts
   * them (events_not_recorded) whenever their outcome comes, never records them
   * (docs/http-api.md, "Runs"). Cleared at the next run boundary, which is past them.
   */
  #failedCloseCalls: { readonly from: number; readonly to: number } | null = null;
  /**
   * True while a close that failed closes the audit entry still collapsing (cutEntries): what
   * it settles was decided during that close, refusals without a write-ahead id included.
   */
  #flushingFailedClose = false;
  /**
   * Names of the section a reload applies (`polling.interval_ms`, `automation.behavior_tree`) that
   * its owner recorded as a run event of their own (polling_change, automation_change: with the
   * values and versions): left out of the section's config_change, one event per fact.
   */
  readonly #sectionFactsRecorded = new Set<string>();
  #starting: Promise<void> | null = null;
  /** Once start() resolved: a stop before it is a failed start's (#failedStartStopsProviders). */
  #startedUp = false;
  /** What failed the start before stop() was called (its own cause), or null: startFailedOnItsOwn. */
  #startFailedOnItsOwn: { readonly error: unknown } | null = null;
  #stopping: Promise<void> | null = null;
  /**
   * The stop's stages that failed after stop() had settled: one the stop went on without past its
   * bound (the audit journal's, the run records', the history's and incident records' last wait)
   * whose disk answered at last with an error, or the data_dir lock's release after them.
   */
  readonly #stopStagesFailedLate: string[] = [];
  /** Resolved by stop(): ends the wait of the opening of runtime.data_dir at once. */
  readonly #stopAsked = Promise.withResolvers<"stopping">();
  /**
   * The journals' file port as every journal of this kernel uses it, watched while start-up
   * opens runtime.data_dir (a call that never returns is named when its bound runs out).
   */
  readonly #files: WatchedJournalFiles;
  /** The file-system questions of reloads left waiting (KernelHost.abandonedReloadReads). */
  readonly #abandonedReads: AbandonedReloadReads;
  /** Start-up has said which hooks veto arming: an inventory change from then on says it again. */
  #hooksChecked = false;
  /** The units the protections' signals were last seen in: a rediscovery's change is said. */
  readonly #protectionUnits: ProtectionUnits;
  /** A reload is applying its sections (Kernel.reload, one at a time: another is refused). */
  #reloading = false;
  /**
   * The running reload's polling or health section left judging the alarms to a later section
   * that the same reload changes -- health after polling, alarms after either -- so they are
   * judged once, under the bounds and the alarms the file gives; the reload's end judges them if
   * that section never ran.
   */
  #alarmsJudgedLater = false;
  /** During a reload: the tree's files as its checks read them (Kernel.reload), else null. */
  #reloadTreeFiles: ReloadTreeFiles | null = null;
  /** Settles the wait of hook calls into FAULT a reload changed for its safety section's ladder. */
  #ladderApplied: (() => void) | null = null;
  /**
   * A provider the reload starts changed its inventory, or it started one: AUTO's gate and the
   * vetoing hooks are judged again once it has applied.
   */
  #inventoryChangedInReload = false;
  /**
   * The e-stop's rung as last judged on every provider (#judgeRung): from start-up's plan on;
   * null before it, or until a judgement can read the devices when start-up's could not.
   */
  #rungSeen: SoftwareSafeState | null = null;
  /**
   * What the e-stop's ladder covered when last judged (#judgeRung): a provider restarted with a
   * function its rung can no longer reach is a weaker stop as a rung that drops is.
   */
  #coverageSeen: LadderCoverage | null = null;
  /**
   * Providers whose inventory changed while the running reload ran (a crash-restart of one it
   * does not start, or of one it was to start but held back; and those it started): their declared
   * calls and the vetoing hooks are checked once, at the reload's end, with what it left in force
   * -- not now and again then (one line per problem).
   */
  #inventoryChangedDuringReload = new Set<string>();
  /**
   * The running reload swapped the tree in (automation.behavior_tree): its calls AUTO refuses are
   * said once, all of them, at its end (not per provider it started).
   */
  #treeSwappedInReload = false;
  /**
   * Providers the running reload starts (added, changed, a failed start or an open circuit
   * retried): their inventory is judged by AUTO's gate once the reload has applied (the hook its
   * file brings for them applies in a later section). Any other provider's rediscovery is judged at once.
   */
  #reloadStarting: ReadonlySet<string> = new Set();
  /**
   * What the running reload decided, at its start, to do with each provider entry
   * (ProviderRegistry.plan): #reloadStarting, #retireEarly and the providers section's reconcile
   * all act on this one decision. Null outside a reload.
   */
  #reloadPlan: ProviderPlan | null = null;
  /** Providers a reload is stopping or restarting now (AUTO is refused meanwhile). */
  #reloadRestarting: readonly string[] = [];
  /**
   * The alarms and interlocks this reload took out before its providers section
   * (#retireEarly): accepted then, so a refused alarms section still puts in force the file's
   * version of each (a protection on a provider that runs on must not be left in neither form).
   */
  #retiredEarly: { alarms: readonly string[]; interlocks: readonly string[] } | null = null;
  /** INFLUXDB_TOKEN as read at construction (the environment no longer has it). */
  #influxToken: string | undefined;
  #secret: (name: string) => string | undefined;
  /**
   * host.log whose lines never throw: for lines said after what they announce is done (a reload
   * that applied, a FAULT forced, a stop), which a logger that throws must not take away.
   */
  readonly #lines: Logger;

  constructor(config: Config, host: KernelHost) {
    this.#config = config;
    this.host = host;
    this.#lines = neverThrowing(host.log);
    const log = host.log;
    const lines = this.#lines;
    this.#files = new WatchedJournalFiles(host.files ?? journalFiles);
    this.#abandonedReads = host.abandonedReloadReads ?? new AbandonedReloadReads();
    // A listener's failure is said through lines that never throw: a logger that throws on it
    // must not skip the listeners after it (nor the bus's publisher, nor the outages' own state).
    this.bus = new EventBus({
      onListenerError: (err) => lines.error(`event listener failed: ${errorMessage(err)}`),
    });
    this.registry = new ProviderRegistry(config.providers, {
      spawn: host.spawn,
      clock: host.clock,
      log: log.child("provider"),
      bus: this.bus,
      cwd: config.configDir,
      shutdownTimeoutMs: config.runtime.shutdownTimeoutMs,
    });
    // The runtime's session ahead of the machine's others while a provider starts, restarts or
    // is down (docs/deployment.md, "The runtime runs ahead of its providers while they start").
    if (host.setSessionPriority) {
      this.#sessionPriority = new SessionPriority(
        host.setSessionPriority,
        {
          // A configured provider with no host (a reload restarting or starting it, or one it
          // could not register) is down too (ProviderRegistry.allAvailable).
          anyDown: () => !this.registry.allAvailable(),
          onChange: (listener) => {
            // A host registered is down until it is up: told at once (one a reload adds).
            this.registry.eachHost((h) => {
              h.onAvailability(listener);
              listener();
            });
            this.registry.onHostRemoved(listener);
            this.registry.onUnconfigured(listener);
            // One a reload starts anew is down from the reload's start, before its host is
            // registered (the reload may first wait for the stops of the providers it removes).
            this.registry.onStarting(listener);
          },
        },
        // Its lines come after the setting is made: a logger that throws must not skip the one
        // asked meanwhile (nor leave its answer's rejection unhandled).
        lines,
        host.clock,
      );
    }
    this.cache = new StateCache({
      registry: this.registry,
      bus: this.bus,
      clock: host.clock,
      log,
      intervalMs: config.polling.intervalMs,
      staleness: config.health.staleness,
    });
    this.outages = new DeviceOutages({
      registry: this.registry,
      cache: this.cache,
      clock: host.clock,
      downAfterMs: deviceDownAfterMs(config.polling.intervalMs),
      onListenerError: (err) =>
        lines.error(`device condition listener failed: ${errorMessage(err)}`),
    });
    // After the cache and the outages: a provider's hosts tell their listeners in the order they
    // subscribed, so the upper layers' inventory listeners find both holding the new inventory.
    this.inventory = new Inventory(this.registry, log.child("inventory"));
    this.#protectionUnits = new ProtectionUnits({
      inventory: this.inventory,
      config: () => this.#config,
    });
    this.audit = new AuditTrail({
      clock: host.clock,
      log,
      mode: () => this.modes.current(),
      // Stamped on each call's write-ahead record: an interrupted call goes to its own run (the
      // run whose open is being written included: it has started).
      runId: () => this.runs.eventRunId(),
    });
    this.router = new CallRouter({
      registry: this.registry,
      cache: this.cache,
      log,
      clock: host.clock,
      audit: this.audit,
    });
    // Gates register on the router here, mode first
    const automation = config.automation;
    this.modes = new ModeManager({
      router: this.router,
      inventory: this.inventory,
      bus: this.bus,
      clock: host.clock,
      log,
      automationEnabled: automation.enabled,
      manualGatingPolicy: automation.manualGatingPolicy,
      hooks: automation.modeTransitionHooks,
      audit: this.audit,
      devices: this.outages,
    });
    // The AUTO rule of reloads is decided section by section, as each is applied; the providers
    // section decides it when it starts: entering AUTO while it is taking providers away would let
    // the tree start on devices about to go.
    this.modes.addArmCheck(
      (_from, to) =>
        to === "AUTO" && this.#reloadRestarting.length > 0
          ? `refusing AUTO: a configuration reload is stopping or restarting provider(s) ${
            this.#reloadRestarting.join(", ")
          }; retry when it has finished`
          : null,
      "reload",
    );
    // A failed start-up's stop (#failedStartStopsProviders) detached the cache: a POST /v0/mode
    // still answered in its HTTP drain would enter AUTO on device states no poll refreshes any
    // more, for a tree already halted. Refused, as the interlock gate refuses then. Any stop
    // halts the tree before that drain (its "automation" stage): AUTO entered then would be said
    // (mode_change, audit, telemetry) with nothing ticking. Refused as well.
    this.modes.addArmCheck(
      (_from, to) => {
        if (to !== "AUTO") return null;
        if (this.cache.providersDetached) {
          return "refusing AUTO: the runtime is stopping after a failed start-up; its devices " +
            "are no longer polled";
        }
        return this.#stopping !== null
          ? "refusing AUTO: the runtime is stopping; its behavior tree is halted"
          : null;
      },
      "stopping",
    );
    if (automation.enabled) {
      this.parameters = new ParameterStore({
        parameters: automation.parameters,
        bus: this.bus,
        clock: host.clock,
        log,
        audit: this.audit,
        modes: this.modes,
      });
    }
    const { safeState, adopted } = effectiveSafeState(config);
    if (adopted) {
      log.warn(
        `no safety section: ${safeState.hooks.length} call(s) of *->FAULT mode-transition hooks adopted as safety.safe_state.hooks`,
      );
    }
    // The e-stop always commits FAULT (with or without automation: a reset must never leave the
    // machine armed) and refuses arming while latched.
    this.estop = new Estop({
      router: this.router,
      inventory: this.inventory,
      reads: this.cache,
      clock: host.clock,
      log,
      safeState,
      modes: this.modes,
      bus: this.bus,
      audit: this.audit,
      devices: this.outages,
    });
    // Its devices' reason changes from "being restarted" to the failure: the plan is said again.
    this.registry.onStartFailed((id) => this.estop.providerStartFailed(id));
    // The stops a call asked before must not be carried out after (CallRouter.addStopCount): the
    // e-stop drains the calls admitted before its latch, but a FAULT entry drains nothing, nor
    // does disarming (MANUAL -> IDLE), and the re-arm after either may come while a call still
    // waits in its provider's queue.
    this.router.addStopCount(() => this.modes.faultEntries);
    this.router.addStopCount(() => this.modes.idleEntries);
    this.router.addStopCount(() => this.estop.triggerCount);
    // Evaluated after every poll, in every mode. Their
    // actions go through the same paths as an operator's: forceFault (hooks included) and the
    // e-stop's trigger (cause alarm:<id>). The interlock gate runs for every call but the stop
    // actions (origin safety: the ladder and the hooks into FAULT), which skip every gate.
    this.alarms = new AlarmEngine({
      alarms: config.alarms,
      interlocks: config.interlocks,
      cache: this.cache,
      inventory: this.inventory,
      outages: this.outages,
      audit: this.audit,
      bus: this.bus,
      clock: host.clock,
      log,
      actions: {
        fault: (reason, alarmId) =>
          this.modes.forceFault(reason, { kind: "alarm", alarm_id: alarmId }),
        estop: (reason, cause) =>
          this.estop.trigger(reason, {
            cause,
            source: { kind: "alarm", alarm_id: cause.replace(/^alarm:/, "") },
          }),
        retired: (alarmId, how) => this.estop.alarmRetired(alarmId, how),
      },
    });
    this.router.addGate(this.alarms.gate, "interlock");
    // A provider's health answer that changes which devices it reports UNREACHABLE changes their
    // inputs (the device outages, subscribed first, judged them already): not left to each
    // device's next poll.
    this.cache.onReportedUnreachable(() => this.alarms.evaluateAll());
    // A rediscovery may add actuating functions: AUTO must then still have its FAULT hook, and a
    // hook may now veto arming every time (said again). A provider a reload starts is judged once
    // the reload has applied every section (the hook for it comes in a later section); any other
    // at once, without the providers the reload starts (a crash-restart of another provider
    // while a reload awaits a start must not wait for it: up to its ready_timeout_ms).
    this.inventory.onChange((id, change) => {
      if (change !== "changed") return;
      if (this.#reloading && this.#reloadStarting.has(id)) {
        this.#inventoryChangedInReload = true;
        // Said at the reload's end also when the reload does not start it after all (its change
        // held back in AUTO, its section refused): its supervisor brought this inventory.
        this.#inventoryChangedDuringReload.add(id);
        return;
      }
      this.#recheckAutoGate(this.#reloading ? this.#reloadStarting : undefined);
      if (!this.#hooksChecked) return; // start-up's own checks come later
      // So is the e-stop's rung: a new actuating function the setpoints do not cover drops it.
      // Not before start-up's plan: a provider listing after another is no drop (none was in
      // force), and start-up judges the whole inventory once every provider has listed.
      this.#judgeRung(
        `inventory of ${id} changed`,
        this.#reloading ? this.#reloadStarting : undefined,
      );
      // During a reload: said once at its end, with the calls and hooks it leaves in force (its
      // own checks would say the same problem a second time).
      if (this.#reloading) return void this.#inventoryChangedDuringReload.add(id);
      // Lines only (as at a reload's end): one that throws (a custom logger) must not skip the
      // checks after it, nor the units they note as seen.
      const lines = this.#lines;
      this.#warnVetoingHooks(lines);
      // So is a call of the behavior tree that its device's new declaration keeps out of AUTO (in
      // AUTO the restart forced FAULT already: the tree names the device, which was lost).
      this.#warnRefusedTreeCalls([id], lines);
      // A ladder or hook call to this provider that no longer resolves (it came back without a
      // device, or with a function renamed) is said now, not at the next e-stop: once per change.
      this.#logUnresolvedCalls(id, lines);
      // So is a protection whose numbers now compare in another unit (a reload's: at its end).
      this.#protectionUnits.check(id, `inventory of ${id} changed`, lines);
    });
    // Ticks only in AUTO; an e-stop forces FAULT, which halts it
    if (automation.enabled) {
      this.automation = new AutomationEngine({
        behaviorTree: automation.behaviorTree,
        tickRateHz: automation.tickRateHz,
        cache: this.cache,
        router: this.router,
        inventory: {
          providerAvailable: (id) => this.registry.host(id)?.available ?? false,
          devicesOf: (id) => this.registry.host(id)?.devices.map((d) => d.device.deviceId) ?? [],
          capabilities: (p, d) => this.inventory.capabilities(p, d),
          // Removed for good: dropped from the configuration (ProviderRegistry.onUnconfigured),
          // with its host or one never registered. Not one a reload restarts (changed entry),
          // nor one whose start failed while the file keeps it.
          onProviderRemoved: (listener) =>
            this.inventory.onChange((id, change) => {
              if (change === "unconfigured") listener(id);
            }),
          // (Re)discovered: counted up then, its devices' conditions current (InventoryReader).
          onProviderListed: (listener) =>
            this.inventory.onChange((id, change) => {
              if (change === "changed" || change === "unchanged") listener(id);
            }),
        },
        outages: this.outages,
        ...(this.parameters ? { parameters: this.parameters } : {}),
        modes: this.modes,
        bus: this.bus,
        clock: host.clock,
        log,
        readFile: host.readFile ?? readFileBytes,
        // A reload's reads of the tree and its includes when its checks read none (Kernel.reload
        // `read.treeFiles`): off the event loop's thread, each within RELOAD_FILE_READ_TIMEOUT_MS.
        readFileAsync: reloadFileReader(host.clock, host.readRegularFile, this.#abandonedReads),
      });
    }
    // Read before any provider is spawned: reading a token_env variable also takes it out of the
    // environment the providers inherit.
    const secret = host.secret ?? (() => undefined);
    this.#influxToken = secret("INFLUXDB_TOKEN");
    if (config.sparkplug.enabled) {
      this.#sparkplugCredentials = {
        username: secret(SPARKPLUG_USERNAME_ENV),
        password: secret(SPARKPLUG_PASSWORD_ENV),
      };
    }
    const namedTokens = resolveNamedTokens(config.http, secret);
    const apiToken = resolveApiToken(config.http, secret("RUNTIME_API_TOKEN"));
    this.#secret = secret;
    // One writer for the life of the kernel: a reload retargets it in place.
    this.telemetry = new TelemetryWriter(this.#telemetryOptions(config));
    this.runs = new RunRegistry({
      dataDir: config.runtime.dataDir,
      runtimeName: config.runtime.name,
      pollingIntervalMs: config.polling.intervalMs,
      maxRunBytes: config.runs.maxRunBytes,
      maxRuns: config.runs.maxRuns,
      maxTotalBytes: config.runs.maxTotalBytes,
      files: this.#files,
      clock: host.clock,
      logger: log.child("runs"),
      automationVersion: () => this.automation?.automationVersion() ?? null,
      // A run opened in FAULT or under a latched e-stop says so in its run_opened.
      safetyState: () => ({ mode: this.modes.current(), estopLatched: this.estop.latched }),
      // A POST /v0/runs answered in a stop's HTTP drain (as AUTO is then: the 'stopping' arm
      // check) would open a run of a runtime whose tree is halted and whose providers go next,
      // left open by the run records' stop (closed as abandoned at the next start). Refused.
      openRefusal: () =>
        this.#stopping !== null
          ? "the runtime is stopping; a run opened now would record nothing and be left open"
          : null,
      telemetrySink: (event, run) => this.telemetry.recordRunEvent(event, run.experiment_label),
      // Identical calls still collapsing into one audit entry are closed (and recorded below)
      // before a run opens or closes: they are events of the run they were made in.
      settleCalls: () => this.#settleRunCalls(),
      // Incidents begun (and triggers joined) in this step, told a moment later otherwise: of the
      // run open when they came, not of the one opening now, nor cut from the one closing.
      settleEvents: () => this.incidents?.tellNow(),
      // The close began at the boundary its settle took; calls decided since are of that close.
      closeFailed: () => {
        this.#failedCloseCalls = {
          from: this.#lastIntentBeforeRun,
          to: this.audit.lastIntentNumber(),
        };
        // The entry still collapsing holds decisions made during that close only (its settle
        // closed the one before): counted, refusals (no write-ahead id) too; and no call decided
        // from now on joins an entry of calls decided during it.
        this.#flushingFailedClose = true;
        try {
          this.audit.cutEntries();
        } finally {
          this.#flushingFailedClose = false;
        }
      },
    });
    this.automation?.setOpenRunId(() => this.runs.openRunId());
    // An e-stop's reason read after the latch (an HTTP body) follows its trigger in the run.
    this.estop.onReasonArriving((reason, cause, latchedAtMs) =>
      this.runs.recordEstopReason(reason, cause, latchedAtMs)
    );
    if (config.history.enabled) {
      const files = this.#files;
      const historyLog = log.child("history");
      this.history = new History({
        config: config.history,
        dataDir: config.runtime.dataDir,
        files,
        clock: host.clock,
        log: historyLog,
        cache: this.cache,
      });
      this.incidents = new IncidentRecorder({
        config: config.history,
        history: this.history,
        files,
        dir: `${config.runtime.dataDir}/history/incidents`,
        clock: host.clock,
        log: historyLog,
        outages: this.outages,
        // The units a record keeps: as its samples were polled in when its incident began (the
        // inventory's for a signal never polled).
        inventory: this.inventory,
      });
      // An incident is an event of the run open when it begins (its record follows later).
      this.incidents.onIncident((i) => this.runs.recordIncident(i));
      // A trigger joining it later (an e-stop after an alarm's incident began) follows it.
      this.incidents.onIncidentJoined((j) => this.runs.recordIncidentTrigger(j));
      // An e-stop's reason read after the latch (an HTTP body) is the cause of its incident.
      const incidents = this.incidents;
      this.estop.onReasonArriving((reason) => incidents.estopReason(reason));
      // A provider a reload drops: its devices' outages end (one whose removal the device
      // outages do not tell, past MAX_UNLISTED_DEVICE_DATES, too).
      this.registry.onUnconfigured((id) => incidents.providerUnconfigured(id));
    }
    // Calls decided while a run is open are events of that run; those the audit journal's
    // opening finds interrupted by the end of the previous process, of the run it left open
    // (handed to the run registry's start, which closes that run). A call decided before the
    // open run began (in flight when it opened) is not one of its events.
    this.audit.onEntry((entry, intents, runId) => {
      if (entry.action !== "call") return;
      if (this.#interruptedCalls !== null && entry.outcome === "interrupted") {
        const call = runCallOf(entry);
        // Its write-ahead id: a close that listed it `in_flight` before the crash names it too.
        const intent = intents[0];
        this.#interruptedCalls.push({
          call,
          ...(runId === undefined ? {} : { runId }),
          ...(intent === undefined ? {} : { intent }),
        });
      } else if (
        // The registry keeps it when a run is open, or has started and its open is being
        // written (openRunId() is still null then); else it drops it.
        this.runs.acceptsEvents() &&
        !(intents.length > 0 &&
          intents.every((id) => this.#decidedBefore(id, this.#lastIntentBeforeRun)))
      ) {
        // Decided while a close of the open run that failed was under way: counted by it.
        if (
          this.#flushingFailedClose ||
          (intents.length > 0 && intents.every((id) => this.#decidedInFailedClose(id)))
        ) {
          this.runs.countCallsNotListed(1);
        } else this.runs.recordCall(runCallOf(entry));
      }
    });
    this.reloader = host.loadConfig
      ? new ConfigReloader({ runtime: this, load: host.loadConfig, log })
      : null;
    this.services = this.#httpServices(host.processStats ?? readProcessStats);
    this.api = new HttpApi(this.services, { apiToken, tokens: namedTokens });
    this.#ownKernelSections();
  }

  /**
   * Right before a run opens or closes: closes the audit entry still collapsing (its calls are
   * events of the run they were made in), and notes the calls still in flight, so that their
   * outcomes are not events of the next run. A run closing records those decided while it was
   * open as `call` events of outcome `in_flight` (their outcome is on the audit trail).
   */
  #settleRunCalls(): void {
    const before = this.#lastIntentBeforeRun;
    const { last, unlisted } = this.audit.runBoundary();
    this.#lastIntentBeforeRun = last;
    // Past this boundary: their outcomes are none of any run's events from now on.
    const failedClose = this.#failedCloseCalls;
    this.#failedCloseCalls = null;
    if (this.runs.openRunId() === null) return; // a run opens
    // Its calls in flight past AUDIT_MAX_UNSETTLED: not listed below, counted by the run.
    this.runs.countCallsNotListed(unlisted);
    let ofFailedClose = 0;
    for (const c of this.audit.inFlightCalls()) {
      // Decided before the run opened: none of its calls.
      if (this.#decidedBefore(c.intent, before)) continue;
      // Decided while an earlier close of it that failed was under way: counted, not listed.
      if (failedClose !== null && this.#decidedIn(c.intent, failedClose)) {
        ofFailedClose++;
        continue;
      }
      this.runs.recordCall({
        first_time_epoch_ms: c.time_epoch_ms,
        last_time_epoch_ms: c.time_epoch_ms,
        count: 1,
        origin: c.origin,
        action: "call",
        device_handle: c.device_handle,
        function: c.function,
        args: bigintsAsDigits(c.args),
        mode: c.mode,
        outcome: "in_flight",
        reason: "in flight when the run closed: its outcome is on the audit trail",
        refused_by: null,
        result: null,
        latency_ms: null,
        // Its write-ahead id: a start after a crash before the run_closed (the call then found
        // `interrupted`, naming this run) does not record it a second time.
        intent: c.intent,
      });
    }
    this.runs.countCallsNotListed(ofFailedClose);
  }

  /** Whether a call of this process was written ahead within write-ahead numbers (from, to]. */
  #decidedIn(intent: string, range: { readonly from: number; readonly to: number }): boolean {
    const n = this.audit.intentNumber(intent);
    return n !== null && n > range.from && n <= range.to;
  }

  /** Whether a call was decided while a close of the open run that then failed was under way. */
  #decidedInFailedClose(intent: string): boolean {
    return this.#failedCloseCalls !== null && this.#decidedIn(intent, this.#failedCloseCalls);
  }

  /** Whether a call of this process was written ahead up to write-ahead number `last`. */
  #decidedBefore(intent: string, last: number): boolean {
    const n = this.audit.intentNumber(intent);
    return n !== null && n <= last;
  }

  /** What the HTTP layer is handed (getters where a reload changes what is in effect). */
  #httpServices(processStats: () => Promise<ProcessStats>): HttpServices {
    const config = () => this.config;
    return {
      get config() {
        return config();
      },
      host: this.host,
      bus: this.bus,
      inventory: this.inventory,
      cache: this.cache,
      router: this.router,
      providerHealth: () => this.providerHealth(),
      uptimeSeconds: () => this.uptimeSeconds(),
      modes: this.modes,
      estop: this.estop,
      alarms: this.alarms,
      audit: this.audit,
      telemetry: this.telemetry,
      runs: this.runs,
      ...(this.history && this.incidents
        ? { history: this.history, incidents: this.incidents }
        : {}),
      processStats,
      configReloads: () => this.reloader?.counts() ?? NO_RELOADS,
      sparkplug: () => this.#sparkplug,
      ...(this.parameters ? { parameters: this.parameters } : {}),
      ...(this.automation ? { automation: this.automation } : {}),
    };
  }

  #telemetryOptions(c: Config): TelemetryWriterOptions {
    return telemetryOptionsFromConfig(c, {
      ...(this.#influxToken === undefined ? {} : { envToken: this.#influxToken }),
      clock: this.host.clock,
      logger: this.host.log.child("telemetry"),
      healthSnapshot: () => this.providerHealthLive(),
      polls: this.cache,
    });
  }

  /** The HTTP server, once start() has bound it (null: headless, not served, or not yet). */
  get http(): HttpServerHandle | null {
    return this.#http;
  }

  /** The configuration in effect (after a reload: what of the new file could be applied). */
  get config(): Config {
    return this.#config;
  }

  /**
   * Brings every provider up (fail-fast), primes the cache with one poll pass and starts polling.
   * What is read from disk before (#openFiles) has runtime.startup_timeout_ms, then provider
   * start-up and the first poll pass share it again; past either, or when stop() is called
   * meanwhile, everything started is stopped and start() throws.
   */
  start(): Promise<void> {
    this.#starting ??= this.#startOnce();
    return this.#starting;
  }

  /**
   * Whatever fails the start (a stage after the priming poll too: the API's bind refused, the
   * e-stop plan, the Sparkplug node) stops the providers already up on purpose: the stop after it
   * (app/process.ts stopAfterFailedStart) is a failed start's (#failedStartStopsProviders).
   */
  async #startOnce(): Promise<void> {
    try {
      await this.#start();
    } catch (err) {
      // Failed before any stop was asked: its own cause, not an end the stop put to it.
      if (this.#stopping === null) this.#startFailedOnItsOwn = { error: err };
      else this.#startFailedOnItsOwn ??= this.#providersFailedOnTheirOwn();
      try {
        this.#failedStartStopsProviders();
      } catch (detachErr) {
        // The start's own failure is the one thrown; this one is said (the stop detaches again).
        this.#lines.error(
          `start-up failed, and detaching its providers failed too: ${errorMessage(detachErr)}`,
        );
      }
      throw err;
    }
    this.#startedUp = true;
  }

  /**
   * The providers whose start failed on its own (a Hello refused) before the stop stopped them,
   * while another's start still held start-up (startAll waits for every start, to name every
   * failure) when the stop came: that failure is the start's own, not the stop's end of the
   * others (ProviderHost.startCutByStop). Null when there is none.
   */
  #providersFailedOnTheirOwn(): { readonly error: unknown } | null {
    const own = this.registry.hosts.filter((h) => h.startError !== null && !h.startCutByStop);
    if (own.length === 0) return null;
    return {
      error: new RuntimeError(
        "UNAVAILABLE",
        `provider start failed: ${own.map((h) => `${h.id}: ${h.startError}`).join("; ")}`,
      ),
    };
  }

  async #start(): Promise<void> {
    const clock = this.host.clock;
    this.#startedAtMono = clock.monoMs();
    const budgetMs = this.config.runtime.startupTimeoutMs;
    await this.#openFiles(budgetMs);
    this.#throwIfStopping();
    this.runs.attach(this.bus);
    // A tree that does not load fails the start before any spawn
    await this.automation?.load();
    this.#throwIfStopping();
    // Said the moment the budget runs out (launchers written for anolis wait for this phrase),
    // not once the providers are stopped, which takes up to shutdown_timeout_ms more. This timer
    // also ends the priming poll, and the registry's own (set after it) fires after it: what
    // is pending is read before anything is stopped. Its line never throws (unlike the start-up
    // lines around it): a logger that throws on it must not skip the end of the start (a hung
    // first poll kept waiting), nor throw in a timer; the start fails DEADLINE_EXCEEDED anyway.
    let expire: () => void = () => {};
    const expired = new Promise<"expired">((r) => (expire = () => r("expired")));
    const overrun = clock.setTimer(() => {
      this.#lines.error(
        `Runtime startup timeout exceeded: runtime.startup_timeout_ms (${budgetMs} ms) ran out, ${this.#startupPending()}; stopping`,
      );
      expire();
    }, budgetMs);
    try {
      // A failed start stops the providers already up: on purpose (#failedStartStopsProviders).
      await this.registry.startAll(
        budgetMs,
        this.config.runtime.shutdownTimeoutMs,
        () => this.#failedStartStopsProviders(),
      );
      this.#throwIfStopping();
      await this.#primeCache(budgetMs, expired);
    } finally {
      clock.clearTimer(overrun);
    }
    if (this.#stopping) {
      await this.cache.stop(); // the poll loops began after stop() had stopped the cache
      this.#throwIfStopping();
    }
    // Start-up preflight, log only (config.md sec. 6)
    this.#logUnresolvedCalls();
    // A hook that makes arming impossible is said now, not at the operator's first POST /v0/mode.
    this.#warnVetoingHooks();
    this.#hooksChecked = true;
    // The units the protections' numbers are judged in from now on (start-up says nothing).
    this.#protectionUnits.note();
    // The exact e-stop plan, its gaps and unverifiable devices; logged again on inventory change.
    // Not contained: a throw here (a logger that cannot write -- the process logger swallows its
    // own write failures -- or a plan that cannot be made) fails the start before the API is
    // served; the lines around it use the same logger, and a runtime whose e-stop plan cannot be
    // made or told must not come up.
    this.estop.logPlan("start-up");
    const startRung = this.estop.ladderRung();
    this.#rungSeen = startRung?.rung ?? null;
    this.#coverageSeen = startRung === null ? null : ladderCoverage(startRung, null);
    // Once the inventory is known: a tree that AUTO could never start is said now, not at the
    // operator's first POST /v0/mode.
    const autoProblem = this.config.automation.enabled ? this.modes.autoGateProblem() : null;
    if (autoProblem) {
      this.host.log.warn(
        `automation is enabled but POST /v0/mode AUTO will answer 409: ${autoProblem}`,
      );
    }
    // So is each call of the tree that a provider's declaration keeps out of AUTO from the start.
    this.#warnRefusedTreeCallsOf("at start-up");
    // Alarms saw the priming poll already; now what no poll reaches (an unknown
    // device or signal) is evaluated too.
    this.alarms.start();
    this.automation?.start();
    this.host.log.info(
      `runtime up: ${this.registry.hosts.length} provider(s), ${this.registry.devices().length} device(s)`,
    );
    // The Sparkplug edge node follows the runtime from before the API is served: an e-stop
    // latched and cleared through the API before the node starts reaches the host's history
    // after the first births, as one while the births wait does (docs/sparkplug.md).
    const startSparkplug = this.config.sparkplug.enabled ? await this.#watchSparkplug() : null;
    // The API (and its e-stop route) before the Sparkplug edge node starts: nothing of the plant
    // link (its bdSeq file under a hung data_dir, the broker) may keep it from being served.
    await this.#serve();
    this.#throwIfStopping();
    // After the priming poll, so the births carry values; connecting goes on in the background.
    if (startSparkplug !== null) await startSparkplug();
    this.#throwIfStopping(); // stop() during the node's start (its bdSeq store hung): not started up
  }

  /**
   * What start-up reads from disk before any provider is spawned: the opening of runtime.data_dir
   * -- its lock, the audit journal, telemetry's start, the run records (their journal replayed),
   * the history disk tier, the incident records -- then the TLS files (#startFiles), in that
   * order; then what the HTTP server would refuse (checkServe: the certificate, a port probe).
   * Bounded by runtime.startup_timeout_ms, all of it together: a disk that hangs (an NFS mount
   * gone, a dying SD card: an open, read or stat that never returns) fails the start
   * (DEADLINE_EXCEEDED) naming the stage and the call that hung, instead of keeping the runtime
   * from ever coming up; stop() meanwhile ends the wait at once. The stage left waiting is
   * abandoned: should its call ever return, it goes no further than the step it is in. Its own
   * failures (a data_dir another runtime holds, a TLS file that cannot be read, a certificate or
   * port the server would refuse) fail the start as they are. Nothing runs yet: a start failed
   * here leaves no hardware driven.
   */
  async #openFiles(budgetMs: number): Promise<void> {
    const config = this.config;
    const dir = config.runtime.dataDir;
    const readRegular = this.host.readRegularFile ?? readRegularFile;
    /**
     * The stage under way: what it does, the call it waits for when not a file port's, and what
     * it waits on (runtime.data_dir, another file, or no disk at all).
     */
    let stage: { what: string; call?: string; on: "data_dir" | "file" | "none" } = {
      what: "taking the runtime.data_dir lock",
      call: `lock ${dir}/${DATA_DIR_LOCK_FILE}`,
      on: "data_dir",
    };
    let abandoned = false;
    const next = (what: string, on: "data_dir" | "file" | "none" = "data_dir", call?: string) => {
      if (abandoned) throw unavailable(`start-up abandoned while ${stage.what}`);
      this.#throwIfStopping();
      stage = { what, on, ...(call === undefined ? {} : { call }) };
    };
    const opening = (async () => {
      await this.#lockDataDir();
      // The audit journal first: every decision from the first call on is journaled. It never
      // fails the start (a folder that cannot be written is reported in health and metrics).
      next("opening the audit journal");
      await this.audit.openJournal({
        dir: `${dir}/audit`,
        files: this.#files,
        maxFileBytes: config.audit.maxFileBytes,
        maxFiles: config.audit.maxFiles,
      });
      // Subscribed before the providers start: the priming poll's first samples must be written
      // too (a signal that never changes is never published again). Before the run registry: the
      // run_closed of a run the previous process left open (closed by its start) is a row too.
      next("loading the InfluxDB client", "none");
      if (config.telemetry.enabled) await loadInfluxClient(); // else never loaded
      next("opening the run records");
      this.telemetry.start(this.bus);
      // Those an earlier start recorded whose run registry did not start (then the runtime
      // ended) first: they were decided before the calls this start found.
      const earlier = this.audit.earlierInterrupted().map(({ entry, intent, runId }) => ({
        call: runCallOf(entry),
        intent,
        ...(runId === undefined ? {} : { runId }),
      }));
      const interruptedCalls = [...earlier, ...(this.#interruptedCalls ?? [])];
      this.#interruptedCalls = null;
      await this.runs.start({ interruptedCalls, onStarted: () => this.audit.interruptedTaken() });
      // Subscribed before the providers start: the priming poll is the ring's first sample.
      next("opening the history disk tier");
      await this.history?.start();
      next("opening the incident records");
      await this.incidents?.start(this.bus);
      // The TLS files, read here and only here (the server and the edge node are handed their
      // bytes): before any provider is spawned, as a start that cannot serve its API must not
      // leave hardware driven; off the event loop's thread, so a hung mount holds no timer, signal
      // or stop. A file that cannot be read (grown past its bound, or replaced since the
      // configuration was checked) stops the start, naming its key and path.
      for (const { key, path, maxBytes } of this.#startFiles()) {
        next(`reading ${key}`, "file", `read ${path}`);
        const read = await readRegular(path, maxBytes);
        if (!read.ok) throw failedPrecondition(`${key}: cannot read '${path}': ${read.message}`);
        this.#filesRead.set(key, { path, bytes: read.bytes, maxBytes });
      }
      // What the HTTP server would refuse once the providers are up and primed, found now, on the
      // bytes just read: the certificate's dates, a key that is not the certificate's, an
      // address or port that cannot be bound (a probe: bound and released). Refused, the start
      // ends as it would have there (same line, exit 3), with no provider spawned.
      const serving = this.#serveOptions();
      if (serving !== null) {
        next("checking the HTTP server's certificate and port", "none");
        await (this.host.checkServe ?? checkServe)(serving);
      }
    })();
    opening.catch(() => {}); // abandoned: what it still does fails no one (awaited below else)
    try {
      const outcome = await raceTimeout(
        this.host.clock,
        Promise.race([opening.then(() => "opened" as const), this.#stopAsked.promise]),
        budgetMs,
        "expired" as const,
      );
      if (outcome === "opened") return;
      abandoned = true;
      // Left waiting on the folder (not on a TLS file, nor on no disk at all): should its call
      // answer, what it made is removed again -- under this runtime's lock, not a later one's.
      if (stage.on === "data_dir") this.#abandonedOpening = opening.catch(() => {});
      if (this.#stopping !== null) {
        // Ended by the stop; what the abandoned stage answers later and refuses of its own (the
        // data_dir lock held by another runtime, a TLS file or the port the server would refuse:
        // FAILED_PRECONDITION, never an error the stop puts to a stage) is the start's failure
        // all the same: noted, said by runService once the stop has ended (if it answered then).
        opening.catch((err) => {
          if (err instanceof RuntimeError && err.code === "FAILED_PRECONDITION") {
            this.#startFailedOnItsOwn ??= { error: err };
          }
        });
      }
      this.#throwIfStopping();
      const call = stage.call ?? this.#files.oldestUnderWay();
      const waiting = call === undefined || call === null
        ? "never finished"
        : `${typeof call === "string" ? call : `${call.op} ${call.path}`} never returned`;
      const disk = stage.on === "none" ? "" : " (a hung mount or a failing disk?)";
      throw new RuntimeError(
        "DEADLINE_EXCEEDED",
        `${
          stage.on === "data_dir" ? "runtime.data_dir did not answer" : "start-up did not finish"
        } within runtime.startup_timeout_ms (${budgetMs} ms): ${stage.what}: ${waiting}${disk}; ` +
          "start-up stopped",
      );
    } finally {
      // Watched for start-up only: from now on each call goes straight to the host.
      this.#files.unwatch();
    }
  }

  /**
   * The TLS files this start reads (#openFiles), by configuration key, with each one's bound:
   * the HTTP server's certificate and key (when it serves HTTPS here), the Sparkplug link's
   * (when enabled). FILES_READ_AT_START lists the same keys for a reload's comparison.
   */
  #startFiles(): { key: string; path: string; maxBytes: number }[] {
    const { http, sparkplug } = this.config;
    const out: { key: string; path: string; maxBytes: number }[] = [];
    const add = (key: string, path: string | null, maxBytes: number) => {
      if (path !== null) out.push({ key, path, maxBytes });
    };
    if (http.enabled && this.host.serve !== undefined) {
      if (http.tlsCertPath !== null && http.tlsKeyPath !== null) {
        add("http.tls_cert_path", http.tlsCertPath, TLS_FILE_MAX_BYTES);
        add("http.tls_key_path", http.tlsKeyPath, TLS_FILE_MAX_BYTES);
      }
    }
    if (sparkplug.enabled) {
      add("sparkplug.tls.ca_file", sparkplug.tls.caPath, READ_FILE_MAX_BYTES);
      add("sparkplug.tls.cert_file", sparkplug.tls.certPath, READ_FILE_MAX_BYTES);
      add("sparkplug.tls.key_file", sparkplug.tls.keyPath, READ_FILE_MAX_BYTES);
    }
    return out;
  }

  /**
   * The Sparkplug B edge node (on demand: its code and MQTT.js are loaded here, only here),
   * following the runtime from now on; returns its start (the bdSeq store, the broker).
   */
  async #watchSparkplug(): Promise<() => Promise<void>> {
    const { SparkplugEdgeNode } = await import("../sparkplug/mod.ts");
    this.#throwIfStopping(); // stop() meanwhile found no node to stop
    const config = this.config;
    // Read before any provider was spawned (#openFiles), bounded; none is read here.
    const tlsFile = (key: string) => this.#filesRead.get(key)?.bytes;
    const node = new SparkplugEdgeNode({
      config: config.sparkplug,
      ...sparkplugIds(config),
      connect: this.host.mqttConnect ?? connectMqttJs,
      ...this.#sparkplugCredentials,
      tls: {
        ca: tlsFile("sparkplug.tls.ca_file"),
        cert: tlsFile("sparkplug.tls.cert_file"),
        key: tlsFile("sparkplug.tls.key_file"),
      },
      bus: this.bus,
      inventory: this.inventory,
      reads: this.cache,
      status: () => {
        const alarms = this.alarms.alarms();
        const up = this.registry.hosts.filter((h) => h.available).length;
        // A configured provider no host is registered under (a reload restarting or starting it,
        // or one it failed to register) is down, as GET /v0/providers/health and /metrics say.
        const unhosted = this.registry.configuredWithoutHost().length;
        return {
          mode: this.modes.current(),
          estopLatched: this.estop.latched,
          alarmsActive: alarms.filter((a) => a.state === "active" || a.state === "active_acked")
            .length,
          alarmsUnacked: alarms.filter((a) => a.state === "active").length,
          providersUp: up,
          providersDown: this.registry.hosts.length - up + unhosted,
        };
      },
      // A change whose event a failing clock kept off the bus still reaches the host.
      statusChanges: (listener) => {
        const offMode = this.modes.onModeChange(() => listener());
        const offLatch = this.estop.onLatchChange(() => listener());
        return () => {
          offMode();
          offLatch();
        };
      },
      // Commands only when enabled: ordinary routed calls (every gate) and the e-stop's trigger;
      // nothing can clear the latch or re-arm from the broker.
      ...(config.sparkplug.commands
        ? {
          commands: {
            call: (req: CallRequest) => this.router.call(req),
            estop: (reason: string, source: AuditOrigin, onLatched?: () => void) =>
              this.estop.trigger(reason, {
                cause: "sparkplug",
                source,
                ...(onLatched ? { onLatched } : {}),
              }),
          },
        }
        : {}),
      // Store and forward replays the history ring when there is one (no queue of its own).
      ...(this.history ? { replay: historyReplay(this.history) } : {}),
      bdSeqStore: (this.host.bdSeqStore ?? bdSeqFile)(`${config.runtime.dataDir}/sparkplug/bdseq`),
      runtimeVersion: RUNTIME_VERSION,
      clock: this.host.clock,
      log: this.host.log.child("sparkplug"),
    });
    this.#sparkplug = node;
    node.watch();
    return () => node.start();
  }

  /** The Sparkplug B edge node (null: sparkplug.enabled is false, or not started yet). */
  get sparkplug(): SparkplugHandle | null {
    return this.#sparkplug;
  }

  /** Binds the HTTP server (http.enabled, and a host that serves); says where. */
  async #serve(): Promise<void> {
    const serve = this.host.serve;
    if (!this.config.http.enabled) {
      this.host.log.info("http.enabled is false: running headless");
      return;
    }
    const options = this.#serveOptions();
    if (serve === undefined || options === null) return;
    // The certificate's dates were judged before any spawn (#openFiles: checkServe), its warnings
    // said then; the pair and the port are what the server takes now.
    const server = await serve({ ...options, certificateChecked: true });
    this.#http = server;
    // The bound in force may be lower than http.max_connections (the open-file limit).
    this.api.fitConnections(server.maxConnections);
    this.#throwIfStopping(); // stop() meanwhile: it shuts this server down once start() settles
    const origin = `${server.tls ? "https" : "http"}://${server.hostname}:${server.port}`;
    this.host.log.info(`API listening on ${origin}/v0`);
    if (this.config.http.consoleEnabled) this.host.log.info(`Operator console on ${origin}/`);
  }

  /** What the HTTP server is started with (checkServe too); null when none is served here. */
  #serveOptions(): ServeOptions | null {
    const { http } = this.config;
    if (!http.enabled || this.host.serve === undefined) return null;
    // Read before any provider was spawned (#openFiles), bounded: the server reads no file.
    const cert = this.#filesRead.get("http.tls_cert_path");
    const key = this.#filesRead.get("http.tls_key_path");
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    return {
      hostname: http.bind,
      port: http.port,
      tlsCertPath: http.tlsCertPath,
      tlsKeyPath: http.tlsKeyPath,
      ...(cert && key ? { tlsFiles: { cert: text(cert.bytes), key: text(key.bytes) } } : {}),
      authEnabled: http.authEnabled,
      allowInsecureBind: http.allowInsecureBind,
      tlsAllowExpiredCert: http.tlsAllowExpiredCert,
      maxConnections: http.maxConnections,
      requestHeaderTimeoutMs: http.requestHeaderTimeoutMs,
      keepAliveTimeoutMs: http.keepAliveTimeoutMs,
      reservedFds: httpReservedFds(this.config.providers.length),
      handler: this.api.handle,
      log: this.host.log.child("http"),
      onShutdown: () => this.api.close(),
      // An answer the server makes in place of the API's (the 504 at shutdown, the 500 of a
      // failed handler) carries that answer's CORS headers.
      standInHeaders: (req) => this.api.standInHeaders(req),
    };
  }

  /**
   * A failed start is about to stop the providers already up (startAll's failures, a first poll
   * not answered within runtime.startup_timeout_ms: #primeCache, any later stage that fails the
   * start: #startOnce, or a stop() before start() resolved: #stop): on purpose, as the stop does (its
   * "device outages" and "history detach" stages) -- no device loss (no incident, no device-loss
   * latch), no UNAVAILABLE samples of their going in the history. The history's detach and the
   * outage monitor's stop are idempotent: the kernel's stop after the failed start does them
   * again. Nor is their devices' going published: the cache is detached from the providers first
   * (StateCache.detachProviders), so neither the priming polls their stop fails (#primeCache stops
   * the cache only after them) nor their availability flips put an UNAVAILABLE sample or a
   * device_availability on the bus (telemetry); their own provider_health_change still is.
   * The alarms stop with the detach: the detached cache keeps its last samples and they go stale,
   * so an alarm still running (started once primed: a stop during the Sparkplug node's start, or
   * while the stop's HTTP drain waits) would raise for bad input and run its action (an e-stop)
   * of the runtime's own stop. Idempotent as well ("alarms" stage of the stop).
   * The Sparkplug edge node's start still under way (its bdSeq store hung) ends too: a store
   * answering while the stop's HTTP drain waits must not have it connect and publish births of
   * the detached cache's frozen values (SparkplugEdgeNode.endStart; its stop comes in turn).
   */
  #failedStartStopsProviders(): void {
    this.cache.detachProviders();
    this.#sparkplug?.endStart();
    this.alarms.stop();
    this.outages.stop();
    this.history?.detach();
  }

  /**
   * The first poll pass, bounded by what is left of the start-up budget (`expired` resolves when
   * it runs out). A provider whose first poll has not answered by then fails the start: providers
   * are stopped (which ends the polls still waiting), then the poll loops the pass started.
   */
  async #primeCache(budgetMs: number, expired: Promise<"expired">): Promise<void> {
    const priming = this.cache.start();
    const outcome = await Promise.race([priming, expired]);
    if (outcome !== "expired") return;
    const unanswered = this.registry.hosts.filter((h) =>
      this.cache.providerDevices(h.id).some((d) => d.pollable.length > 0 && d.lastPollMs === 0)
    ).map((h) => h.id);
    this.#failedStartStopsProviders();
    await this.registry.stopAll(this.config.runtime.shutdownTimeoutMs);
    await priming;
    await this.cache.stop();
    throw new RuntimeError(
      "DEADLINE_EXCEEDED",
      `start-up not complete within runtime.startup_timeout_ms (${budgetMs} ms): first poll ${
        unanswered.length > 0 ? `of ${unanswered.join(", ")} ` : ""
      }not answered`,
    );
  }

  /** What start-up still waits for: providers not up, else first polls not answered. */
  #startupPending(): string {
    const down = this.registry.hosts.filter((h) => !h.available).map(describeNotReady);
    if (down.length > 0) return `providers not ready: ${down.join(", ")}`;
    const unanswered = this.registry.hosts.filter((h) =>
      this.cache.providerDevices(h.id).some((d) => d.pollable.length > 0 && d.lastPollMs === 0)
    ).map((h) => h.id);
    return `first poll not answered by: ${unanswered.join(", ")}`;
  }

  /**
   * Calls `listener` once, as soon as every configured provider is AVAILABLE (at once when they
   * all are now); never after stop(). The service says "Runtime Ready" with it. A configured
   * provider with no host is not (ProviderRegistry.allAvailable): one a reload is restarting or
   * starting, or could not register.
   */
  whenAllProvidersAvailable(listener: () => void): void {
    let called = false;
    const check = () => {
      if (called || this.#stopping || !this.registry.allAvailable()) return;
      called = true;
      listener();
    };
    // Providers a reload adds are waited for too; one it removes (down, say) no longer is, nor
    // one it drops that had no host (the reload before could not register it).
    this.registry.eachHost((h) => h.onAvailability(check));
    this.registry.onHostRemoved(check);
    this.registry.onUnconfigured(check);
    check();
  }

  #throwIfStopping(): void {
    if (this.#stopping) throw unavailable("start-up aborted: the runtime is stopping");
  }

  /** Seconds since start() began. */
  uptimeSeconds(): number {
    return Math.floor((this.host.clock.monoMs() - this.#startedAtMono) / 1000);
  }

  /** The restart policy of a provider's entry in the configuration in effect (health views). */
  readonly #restartPolicyOf = (providerId: string) =>
    this.config.providers.find((p) => p.id === providerId)?.restartPolicy;

  /** GET /v0/providers/health from the cached view. */
  providerHealth(): ProviderHealthView[] {
    return providerHealthViews(this.registry, this.cache, {
      pollingIntervalMs: this.config.polling.intervalMs,
      staleness: this.config.health.staleness,
      nowMono: this.host.clock.monoMs(),
      restartPolicy: this.#restartPolicyOf,
    });
  }

  /** Health with a live GetHealth round-trip per available provider (telemetry snapshots). */
  async providerHealthLive(): Promise<ProviderHealthView[]> {
    const live = new Map(
      await Promise.all(
        this.registry.hosts.map(async (h) =>
          [h.id, await this.cache.fetchReportedHealth(h)] as const
        ),
      ),
    );
    return providerHealthViews(this.registry, this.cache, {
      pollingIntervalMs: this.config.polling.intervalMs,
      staleness: this.config.health.staleness,
      nowMono: this.host.clock.monoMs(),
      restartPolicy: this.#restartPolicyOf,
    }, live);
  }

  /**
   * A configuration reload (app/live_config.ts): the difference from the configuration in effect,
   * section by section, each changed live section applied in place by its owner; restart-only keys
   * reported. While AUTO runs, a section that would weaken a protection or change the running
   * recipe is refused (app/run_gate.ts), and so are provider removals and changes (additions
   * apply). A refused or failed section keeps its old value in `config`, so the next reload tries
   * it again. Outside AUTO a weakened protection applies and is recorded on the audit trail. Once
   * stop() has begun, no further section is applied (each is reported failed). One at a time:
   * while one applies, another is refused (FAILED_PRECONDITION); the ConfigReloader serializes the
   * process's own. `read.treeFiles`: the tree's files as the reload's checks read them (main.ts
   * configReload), loaded as they are when they are of next's tree; without them (or for another
   * path) the tree is read here (AutomationEngine.reloadTree).
   */
  async reload(
    next: Config,
    read: { readonly treeFiles?: ReloadTreeFiles } = {},
  ): Promise<ReloadReport> {
    if (this.#stopping) throw unavailable("reload refused: the runtime is stopping");
    // One at a time (#reloading is one flag): the ConfigReloader, the only caller in the process,
    // serializes them; a second direct call would end the running one's state early.
    if (this.#reloading) {
      throw failedPrecondition(
        "reload refused: a configuration reload is already running; retry when it has finished",
      );
    }
    this.#reloading = true;
    this.#reloadTreeFiles = read.treeFiles ?? null;
    this.#inventoryChangedInReload = false;
    this.#inventoryChangedDuringReload = new Set();
    this.#treeSwappedInReload = false;
    this.#retiredEarly = null;
    try {
      // A protection the file adds is judged against the units declared now (said at the end).
      this.#protectionUnits.noteAhead(next);
      return await this.#reload(next);
    } finally {
      this.#reloading = false;
      this.#reloadTreeFiles = null;
      // The health or alarms section did not judge the alarms after the polling or health section
      // (the runtime stopping, a throw, or the alarms section refused before its owner ran): the
      // bounds applied are judged now (a no-op once the alarm engine stopped).
      if (this.#alarmsJudgedLater) {
        this.#alarmsJudgedLater = false;
        this.alarms.evaluateAll();
      }
      // A reload that threw before its own checks: what changed meanwhile is said all the same.
      const changed = this.#inventoryChangedDuringReload;
      this.#inventoryChangedDuringReload = new Set();
      const treeSwapped = this.#treeSwappedInReload;
      this.#treeSwappedInReload = false;
      if (changed.size > 0 && this.#stopping === null) {
        // Lines only (as at the reload's end).
        this.#warnVetoingHooks(this.#lines);
        for (const id of changed) this.#logUnresolvedCalls(id, this.#lines);
        if (!treeSwapped) this.#warnRefusedTreeCalls(changed, this.#lines);
      }
      if (treeSwapped && this.#stopping === null) {
        this.#warnRefusedTreeCallsOf(TREE_RELOADED, this.#lines);
      }
      // A protection whose numbers now compare in another unit (a provider it restarted, or one
      // rediscovered meanwhile): said once, on what the reload left in force.
      if (this.#stopping === null) {
        this.#protectionUnits.check(undefined, "configuration reload", this.#lines);
      }
      // The safety section did not run (the runtime stopping): its wait ends with the reload.
      this.#settleLadderApplied();
      this.#reloadStarting = new Set();
      this.#reloadPlan = null;
      // AUTO's gate (a hook into FAULT while anything actuates) is judged on what the whole
      // reload left in force: a provider it started may actuate, and the hook the same file adds
      // for it applies in a later section (refused, AUTO is left without it: FAULT).
      // Not once stop() has begun: its providers are ending, no hook call may start then.
      if (this.#inventoryChangedInReload && this.#stopping === null) this.#recheckAutoGate();
      // So is the e-stop's rung, on every provider and the safety section the reload left.
      if (this.#stopping === null) this.#judgeRung("configuration reload");
    }
  }

  /**
   * AUTO's gate judged again (ModeManager.recheckAutoGate: FAULT when it now fails), not awaited:
   * FAULT is committed at once, its hooks run on. A rejection (its wait for the hooks could not
   * begin: the clock's setTimer threw) is one ERROR line, never an unhandled rejection that ends
   * the runtime. `except`: as recheckAutoGate's.
   */
  #recheckAutoGate(except?: ReadonlySet<string>): void {
    const log = this.#lines;
    void this.modes.recheckAutoGate(except).catch((err) => {
      log.error(`re-checking AUTO's gate (a hook into FAULT) failed: ${errorMessage(err)}`);
    });
  }

  /**
   * The e-stop's rung never drops unseen (docs/safety.md, "The ladder"): setpoints apply only
   * while they cover every actuating function, so a provider added or restarted with one they do
   * not cover takes every setpoint call away (zeroing or nothing instead). A drop since the rung
   * last judged is one WARN line; in AUTO it forces FAULT (AUTO is not kept on a weaker stop than
   * the one it ran with: the reload's own rule for a ladder call taken away), and a MANUAL -> AUTO
   * transition under way is refused at its commit. So is, within the rung, a function of a device
   * the ladder reached that it no longer reaches (coverageLost: a provider back with bounds that
   * refuse the zero, a function renamed). `except`: providers a running reload starts, judged at
   * its end (a setpoint for them may come in a later section).
   */
  #judgeRung(cause: string, except?: ReadonlySet<string>): void {
    // Not once stop() has begun: its providers are ending, no FAULT nor hook call may start then.
    if (this.#stopping !== null) return;
    const now = this.estop.ladderRung(except);
    if (now === null) return;
    const before = this.#rungSeen;
    const rungDrop = before !== null && rungDropped(before, now.rung);
    // Within its rung too: a function of a device listed before that the ladder reached then and
    // no longer does (a provider restarted with bounds that refuse the zero, a function renamed).
    const lost = rungDrop ? [] : coverageLost(this.#coverageSeen, now);
    const dropped = rungDrop || lost.length > 0;
    // Leaving providers out never drops the rung: a judgement without them is no rung in force,
    // so it only ever lowers the rung seen (a higher one would make the reload's end, judging
    // every provider, call the rung in force all along a drop).
    if (except === undefined || except.size === 0 || dropped) this.#rungSeen = now.rung;
    this.#coverageSeen = ladderCoverage(now, this.#coverageSeen, except);
    if (!dropped) return;
    const why = rungDrop
      ? rungDropText(before, now, cause)
      : coverageLostText(now.rung, lost, cause);
    const auto = this.modes.current() === "AUTO";
    // The FAULT (or the refusal) first, its line after, lost if the logger throws: a line never
    // takes the action it announces away, nor rejects a reload that applied.
    const log = this.#lines;
    if (auto) {
      void this.modes.forceFault(why).catch((err) => {
        log.error(`forcing FAULT after the e-stop's rung dropped failed: ${String(err)}`);
      });
    } else {
      this.modes.invalidateAutoEntry(
        why,
        "request AUTO again to enter it with the e-stop ladder now in force",
        "estop",
      );
    }
    log.warn(
      `${why}${auto ? "; AUTO is not kept on a weaker e-stop: FAULT" : ""} ` +
        "(GET /v0/runtime/status -> estop.plan)",
    );
  }

  async #reload(next: Config): Promise<ReloadReport> {
    // The TLS files read at start, read again (none: no wait, not even a turn of the loop).
    const changedTls = new Map<string, Uint8Array>();
    const filesChanged = this.#filesRead.size === 0
      ? []
      : await this.#filesChanged(next, changedTls);
    const diff = diffSections(this.#config, next);
    const restart = [...diff.needsRestart, ...filesChanged];
    // Only a reload that changed them waits for the judgement of the TLS files.
    const withTls = restart.some(tlsJudgedKey)
      ? await this.#withTlsProblem(next, restart, changedTls)
      : restart;
    // So does a change of the Sparkplug section, for the judgement of its TLS files' reads.
    const needsRestart = withTls.some(sparkplugRestartKey)
      ? await this.#withSparkplugFileProblem(next, withTls)
      : withTls;
    // A provider the last reload failed to start is started again only if this file still has
    // it; one the file drops is removed for good (its records are forgotten at the removal).
    const nextIds = new Set(next.providers.map((p) => p.id));
    // What the reconcile will do with each entry (one whose circuit is open is retried, after an
    // in-place update of its entry if any: ProviderRegistry.plan).
    // Made once: the providers section carries out this plan (#reloadPlan), not a fresh one, so a
    // circuit that opens (or a provider that comes back) meanwhile does not make it restart a
    // provider whose alarms were not retired early and whose AUTO check is not deferred.
    const providerPlan = this.registry.plan(this.#config.providers, next.providers);
    this.#reloadPlan = providerPlan;
    this.#reloadStarting = new Set([
      ...providerPlan.added.map((p) => p.id),
      ...providerPlan.changed.map((p) => p.id),
      ...providerPlan.retried.map((p) => p.id),
      ...this.#notRunningAfterReload().filter((id) => nextIds.has(id)),
    ]);
    // The liveness bounds and poll periods as the reload starts: its health section is judged
    // against them, not against those its polling section left in between (a shorter interval's
    // own bound or period, under the staleness it replaces, is no configuration's: a staleness
    // laxer than that one but not than the start's weakens nothing, and refused it would leave
    // that state in force). The polling section, judged before it applies, sees the start's.
    const boundsAtStart = {
      staleness: this.#config.health.staleness,
      intervalMs: this.#config.polling.intervalMs,
    };
    // Judged as each section applies, against the configuration then in effect and the machine
    // as it runs then: a provider an earlier section added may actuate (the AUTO -> FAULT hook
    // rule), and protections retired with their providers are no longer in effect.
    const withProviders = () =>
      providerWeakenings(this.#config, next, {
        actuatingFunctions: actuatingFunctionCount(this.inventory),
        longerStaleBounds: (staleness) => this.cache.longerStaleBounds(staleness, boundsAtStart),
        slowerPolls: (intervalMs, staleness) =>
          this.cache.slowerPolls(intervalMs, staleness, boundsAtStart),
      });
    const weakeningsNow = (): Weakening[] =>
      withProviders().map(({ section, what }) => ({ section, what }));
    const report = startedReloadReport(
      next.providers.map((p) => p.id),
      needsRestart,
    );
    // Providers the last reload failed to start -- listed down, or configured with no host (not
    // registered) -- stay so until a reload reconciles again (it takes them out, and starts them
    // again if the file still has them, or drops them: their entries are not in effect, so a file
    // without them may equal the entries in effect); providers whose circuit is open are retried:
    // the providers section runs although the file did not change it.
    const retry = (this.#notRunningAfterReload().length > 0 || providerPlan.retried.length > 0) &&
      !diff.live.includes("providers");
    // Each section is applied once: what it changed is measured from the reload's start (the
    // providers section may take alarms out before the alarms section applies).
    const started = this.#config;
    const recordChange = (key: SectionKey) => {
      const changes = sectionChanges(key, started, this.#config);
      const own = this.#sectionFactsRecorded;
      if (changes === null) return;
      const left = (names: string[]) => names.filter((n) => !own.has(n));
      const rest = {
        added: left(changes.added),
        removed: left(changes.removed),
        changed: left(changes.changed),
        omitted: changes.omitted,
      };
      if (rest.added.length + rest.removed.length + rest.changed.length + rest.omitted === 0) {
        return;
      }
      this.runs.recordConfigChange(key, rest);
    };
    for (
      const key of sectionsToOffer(retry ? { ...diff, live: [...diff.live, "providers"] } : diff)
    ) {
      // stop() may have begun while an earlier section awaited: its subsystems are ending.
      if (this.#stopping) {
        // Offered only to read its file again (the configuration did not change it) with nothing
        // to read it for (automation disabled: no tree runs): the stop keeps nothing from it.
        if (key === "automation.behavior_tree" && !diff.live.includes(key) && !this.automation) {
          continue;
        }
        report.interrupted = true;
        // Not reached: what its plan would have done is named, never counted as unchanged.
        if (key === "providers") {
          report.providers = { ...report.providers, unchanged: [...providerPlan.unchanged] };
          const notReached = planNotReached(providerPlan);
          report.failed.push({
            section: key,
            why: notReached === ""
              ? RELOAD_STOPPING
              : `${RELOAD_STOPPING} (not reached: ${notReached})`,
          });
          continue;
        }
        report.failed.push({ section: key, why: RELOAD_STOPPING });
        continue;
      }
      const section = sectionOf(key);
      const weakensOf = withProviders().filter((w) => w.section === key);
      let weakens: Weakening[] = weakensOf.map(({ section, what }) => ({ section, what }));
      // What this section applies: the file's, or the file's narrowed to keep the protections of
      // providers that still run (alarms, below).
      let sectionNext = next;
      /** Why part of the section was refused, when the rest applied. */
      let partlyRefused: string | null = null;
      const apply = this.#owners.get(key);
      if (apply === undefined) {
        report.failed.push({ section: key, why: "no owner applies this section" });
        continue;
      }
      // The mode as this section is applied, not as the reload started: the operator may have
      // entered AUTO while an earlier section awaited (a provider starting), and the AUTO rule
      // holds for every section applied from then on.
      const auto = this.modes.current() === "AUTO";
      // The providers section comes before alarms: an alarm the file drops along with the
      // provider it reads would see that provider go and raise (and run its action) before its
      // own removal, and such an interlock would block its functions (bad input) until the alarms
      // section -- whether the provider goes for good (removed) or comes back (its entry changed:
      // restarted). Outside AUTO (where removals and restarts apply: decided here, with the mode
      // the providers section applies in, as they are) those alarms and interlocks go first; the
      // weakening is recorded now (not when the section is refused for want of open files).
      if (
        key === "providers" && !auto && diff.live.includes("alarms") &&
        this.#openFilesShortfall(next, auto) === null
      ) {
        const stopped = [...providerPlan.removed, ...providerPlan.changed.map((p) => p.id)];
        this.#retireEarly(next, stopped, weakeningsNow(), report);
      }
      // A protection of a provider the file removes or changes, but which still runs (the
      // providers section was refused, or held the removal back while AUTO ran and AUTO was left
      // since), stays: the operator took it away with the provider, and the provider stayed.
      // In AUTO the owner refuses every weakening already (run_gate).
      // Alarms and interlocks are entries that stand on their own: only those of the kept
      // providers are refused (left as they are), the rest of the file's applies. Hooks and the
      // e-stop's ladder are refused whole: their calls are ordered lists judged as a whole (the
      // AUTO -> FAULT rule, a ladder's order within a provider), not separate entries.
      if (!auto && key !== "providers" && weakens.length > 0) {
        const keptIds = this.#providersKept(started, next, report);
        const kept = keptProviderRefusal(weakensOf, keptIds);
        if (kept !== null) {
          const narrowed = key === "alarms"
            ? keptAlarmsNarrowed(this.#config, next, weakensOf, keptIds)
            : null;
          const strip = (ws: readonly Weakening[]) =>
            ws.map(({ section, what }) => ({ section, what }));
          if (narrowed === null) {
            report.refused.push({ section: key, why: kept });
            this.#recordReload(key, "refused", kept, weakens);
            continue;
          }
          partlyRefused = `${kept}; the section's other changes applied`;
          report.refused.push({ section: key, why: partlyRefused });
          this.#recordReload(key, "refused", partlyRefused, strip(narrowed.kept));
          sectionNext = narrowed.next;
          weakens = strip(narrowed.rest);
        }
      }
      // Outside AUTO a weakening applies: a MANUAL -> AUTO transition running its before-hooks
      // now was judged with the protection it takes away, and is refused at its commit.
      if (!auto && weakens.length > 0) this.#invalidateAutoEntry(weakens);
      let result: SectionResult | void;
      this.#sectionFactsRecorded.clear();
      try {
        const applied = apply(sectionNext, {
          auto,
          weakens,
          report,
          changed: diff.live.includes(key),
          changedSections: diff.live,
        });
        // A section that does not await is not awaited either: polling, health and alarms apply
        // in one turn (CONFIG_SECTIONS), no poll's answer or timer of the alarm engine between.
        result = applied instanceof Promise ? await applied : applied;
      } catch (err) {
        report.failed.push({ section: key, why: errorMessage(err) });
        this.#recordReload(key, "failed", errorMessage(err), weakens);
        recordChange(key); // what took effect before it threw (providers started)
        continue;
      }
      // A section that names a file, offered although the configuration did not change it, whose
      // file did not change either.
      if (result?.unchanged === true) continue;
      if (result?.failed !== undefined) {
        report.failed.push({ section: key, why: result.failed });
        if (result.effective !== undefined) this.#config = result.effective;
        recordChange(key); // what took effect before it failed (providers started)
        continue;
      }
      if (result?.refused !== undefined) {
        report.refused.push({ section: key, why: result.refused });
        this.#recordReload(key, "refused", result.refused, weakens, result.refusedBy);
        if (result.effective === undefined) continue;
      }
      this.#config = result?.effective ?? section.take(this.#config, sectionNext);
      // A run open now says its limits, providers or safe state changed under it.
      recordChange(key);
      if (result?.refused === undefined && partlyRefused === null) report.applied.push(key);
      if (result?.note) report.notes.push(result.note);
      if (weakens.length > 0) {
        report.weakened.push(...weakens);
        this.#recordReload(key, "accepted", null, weakens);
      }
    }
    // What the reload left as it was now names the file as it is (a hook's line, for a message).
    this.#config = withCurrentSources(this.#config, next);
    // The file's providers this reload did not get running (its providers section refused, or a
    // start that failed): the alarms and interlocks in force on them read an input that is not
    // there, a bad input (fail safe: raised, their action run; engaged), which the summary says,
    // or the e-stop or FAULT that follows would not say the reload's part in it.
    report.notes.push(
      ...protectionsNotRunning(this.#config, this.#providersNotRunning(next, report)),
    );
    const p = report.providers;
    if (p.added.length + p.restarted.length + p.retried.length > 0) {
      this.#inventoryChangedInReload = true;
    }
    // A hook that vetoes arming every time is said again when the hooks or the inventory they
    // call changed (a provider started: its functions may actuate, or its allowed_modes refuse),
    // once, with the hooks in force.
    // A provider the reload does not start whose inventory changed while it ran is said here too
    // (its listener left it to this check), once.
    const changedMeanwhile = this.#inventoryChangedDuringReload;
    this.#inventoryChangedDuringReload = new Set();
    // Lines only, once everything applied: one that throws (a custom logger) must not reject
    // the reload, nor keep the judgements at its end (AUTO's gate, the e-stop's rung) from running.
    const log = this.#lines;
    // The devices the liveness bounds in force now leave no WARNING stage: said of what the whole
    // reload left (polling, then health), not of the new interval under the old stale bound.
    this.cache.tellNoWarningStage();
    if (
      this.#inventoryChangedInReload || changedMeanwhile.size > 0 ||
      report.applied.includes("automation.mode_transition_hooks")
    ) this.#warnVetoingHooks(log);
    // The start-up preflight, again for what the reload changed: the declared calls in force
    // (hooks, the e-stop's ladder) or the devices they resolve against. Once, at the end: the
    // calls and the inventory as the whole reload left them (not once stop() has begun: its
    // providers are ending, their devices leaving).
    if (this.#stopping !== null) return report;
    if (
      p.added.length + p.restarted.length + p.retried.length + p.removed.length > 0 ||
      report.applied.includes("automation.mode_transition_hooks") ||
      report.applied.includes("safety")
    ) this.#logUnresolvedCalls(undefined, log);
    else for (const id of changedMeanwhile) this.#logUnresolvedCalls(id, log);
    // And the calls of the behavior tree that the new declaration of a provider it started (or of
    // one rediscovered meanwhile) keeps out of AUTO; all of them when it swapped the tree in.
    if (this.#treeSwappedInReload) {
      this.#treeSwappedInReload = false;
      this.#warnRefusedTreeCallsOf(TREE_RELOADED, log);
      return report;
    }
    // One saying: MAX_REFUSED_TREE_CALL_LINES across the providers, as for a tree swapped in.
    this.#warnRefusedTreeCalls(
      new Set([...p.added, ...p.restarted, ...p.retried, ...changedMeanwhile]),
      log,
    );
    return report;
  }

  /**
   * The configured providers with no running host that only a reload brings back: the hosts the
   * last reload failed to start (listed down) and the configured ids no host is registered under
   * (not registered: a host listener failed). Their entries are not in effect.
   */
  #notRunningAfterReload(): string[] {
    return [
      ...this.registry.failedStarts().map((h) => h.id),
      ...this.registry.configuredWithoutHost(),
    ];
  }

  /**
   * The declared-call preflight (contract config.md sec. 6, log only): each hook or safe-state
   * call in force that does not resolve against the devices discovered, one ERROR line each;
   * with `providerId`, only the calls to that provider's devices (its inventory changed).
   */
  #logUnresolvedCalls(providerId?: string, log: Logger = this.host.log): void {
    for (const problem of validateDeclaredCalls(this.#config, this.inventory, providerId)) {
      log.error(`declared call does not resolve: ${problem}`);
    }
  }

  /**
   * The providers of `started` (the configuration when the reload began) that `next` removes or
   * changes but that still run as they were (registered, their entry in effect unchanged): the
   * providers section was refused, or held the removal or change back (AUTO). Id -> why, in words.
   */
  #providersKept(
    started: Config,
    next: Config,
    report: MutableReloadReport,
  ): Map<string, string> {
    const kept = new Map<string, string>();
    for (const was of started.providers) {
      const wanted = next.providers.find((p) => p.id === was.id);
      if (wanted !== undefined && same(wanted, was)) continue;
      const now = this.#config.providers.find((p) => p.id === was.id);
      if (now === undefined || !same(now, was) || this.registry.host(was.id) === undefined) {
        continue;
      }
      const what = wanted === undefined ? "removal" : "change";
      kept.set(
        was.id,
        report.providers.held.includes(was.id)
          ? `the file's ${what} of it was held back while AUTO ran`
          : report.refused.some((r) => r.section === "providers")
          ? `the file's ${what} of it was not applied: the providers section was refused`
          : `the file's ${what} of it was not applied`,
      );
    }
    return kept;
  }

  /**
   * The providers `next` lists that the reload left not running, id -> why: refused (the providers
   * section kept the providers in effect) or failed to start.
   */
  #providersNotRunning(next: Config, report: MutableReloadReport): Map<string, string> {
    const out = new Map<string, string>();
    if (report.refused.some((r) => r.section === "providers")) {
      for (const p of next.providers) {
        if (!this.#config.providers.some((q) => q.id === p.id)) {
          out.set(p.id, "its providers entry was refused");
        }
      }
    }
    // The ids as the registry reported them: an id may hold ": " (never parsed from a text).
    for (const { id } of report.providers.failed) {
      if (next.providers.some((p) => p.id === id)) out.set(id, "failed to start");
    }
    return out;
  }

  /** Logs each before_transition hook that vetoes its transition every time (WARN, one line each). */
  #warnVetoingHooks(log: Logger = this.host.log): void {
    const hooks = this.#config.automation.modeTransitionHooks;
    for (const problem of vetoingHookProblems(hooks, this.inventory)) {
      log.warn(`mode transition hook: ${problem}`);
    }
  }

  /**
   * Logs each literal call of the behavior tree to a device of `providerIds` (their inventory
   * changed) that entering AUTO is refused for, by what the device declares now -- its policy
   * (allowed_modes without AUTO, requires_lease), a function it no longer declares, args its
   * bounds refuse: WARN, one line each, naming the provider, the call and the refusal (up to
   * MAX_REFUSED_TREE_CALL_LINES across them all: one saying; the rest counted in one line).
   */
  #warnRefusedTreeCalls(providerIds: Iterable<string>, log: Logger = this.host.log): void {
    this.#sayRefusedTreeCalls(
      [...providerIds].map((id) => ({
        why: `inventory of ${id} changed`,
        calls: this.automation?.refusedCallsOf(id) ?? [],
      })),
      log,
    );
  }

  /**
   * #warnRefusedTreeCalls for `why` (start-up, a reload that swapped the tree in): every literal
   * call of the tree AUTO refuses by what its device declares now; up to
   * MAX_REFUSED_TREE_CALL_LINES, the rest counted in one line.
   */
  #warnRefusedTreeCallsOf(why: string, log: Logger = this.host.log): void {
    this.#sayRefusedTreeCalls([{ why, calls: this.automation?.refusedCallsOf() ?? [] }], log);
  }

  /**
   * One saying of the tree's calls AUTO refuses (a reload's end, start-up, an inventory change),
   * each group under its own `why`: up to MAX_REFUSED_TREE_CALL_LINES lines across the groups, the
   * rest counted in one line naming the groups they belong to.
   */
  #sayRefusedTreeCalls(
    groups: readonly { why: string; calls: readonly string[] }[],
    log: Logger,
  ): void {
    let left = MAX_REFUSED_TREE_CALL_LINES;
    let more = 0;
    const cut: string[] = [];
    for (const { why, calls } of groups) {
      for (const call of calls.slice(0, left)) {
        log.warn(`behavior tree: ${why}: entering AUTO is refused while the tree calls ${call}`);
      }
      if (calls.length > left) {
        more += calls.length - left;
        cut.push(why);
      }
      left = Math.max(0, left - calls.length);
    }
    // A generated tree may call one function from thousands of nodes: the rest in one line.
    if (more > 0) {
      log.warn(
        `behavior tree: ${cut.join("; ")}: and ${more} more call(s) of the tree refused in AUTO ` +
          `(named up to ${MAX_REFUSED_TREE_CALL_LINES}: MAX_REFUSED_TREE_CALL_LINES; a request ` +
          "for AUTO names them all)",
      );
    }
  }

  /**
   * Outside AUTO, right before the providers section: takes out the alarms and interlocks that
   * read a provider the reload stops (removes or restarts) and that the file removes or changes
   * (#retireProtectionsOfStoppedProviders) and records their weakening as applied (the alarms
   * section, judged later against the configuration then in effect, no longer finds them).
   */
  #retireEarly(
    next: Config,
    stopped: readonly string[],
    weakenings: readonly Weakening[],
    report: MutableReloadReport,
  ): void {
    const early = this.#retireProtectionsOfStoppedProviders(next, stopped);
    if (early.alarms.length + early.interlocks.length === 0) return;
    this.#retiredEarly = early;
    const done = weakenings.filter((w) =>
      w.section === "alarms" &&
      (early.alarms.some((id) => w.what.startsWith(`alarm ${id} (`)) ||
        early.interlocks.some((id) =>
          w.what === `interlock ${id} removed` || w.what === `interlock ${id} changed`
        ))
    );
    if (done.length > 0) this.#invalidateAutoEntry(done);
    report.weakened.push(...done);
    this.#recordReload("alarms", "accepted", null, done);
    if (early.alarms.length > 0) {
      report.notes.push(
        `alarms retired before their providers were stopped: ${early.alarms.join(", ")}`,
      );
    }
    if (early.interlocks.length > 0) {
      report.notes.push(
        `interlocks retired before their providers were stopped: ${early.interlocks.join(", ")}`,
      );
    }
  }

  /** Refuses a pending MANUAL -> AUTO (its gate judged what `weakens` takes away). */
  #invalidateAutoEntry(weakens: readonly Weakening[]): void {
    this.modes.invalidateAutoEntry(
      `a configuration reload weakened protections (${weakens.map((w) => w.what).join("; ")})`,
    );
  }

  /**
   * Takes out of the alarm engine (and of the configuration in effect) every alarm and every
   * interlock that reads a provider in `stopped` and that `next` removes or changes; returns their
   * ids. The alarms section applies the rest of the file's alarms and interlocks later, as usual.
   */
  #retireProtectionsOfStoppedProviders(
    next: Config,
    stopped: readonly string[],
  ): { alarms: string[]; interlocks: string[] } {
    const gone = new Set(stopped);
    const running = this.#config;
    const retiredAlarms = running.alarms.filter((a) =>
      gone.has(a.providerId) && !next.alarms.some((b) => b.id === a.id && sameAlarm(a, b))
    );
    const retiredInterlocks = running.interlocks.filter((il) =>
      il.signals.some((s) => gone.has(s.providerId)) &&
      !next.interlocks.some((b) => b.id === il.id && sameInterlock(il, b))
    );
    if (retiredAlarms.length + retiredInterlocks.length === 0) {
      return { alarms: [], interlocks: [] };
    }
    const alarms = running.alarms.filter((a) => !retiredAlarms.includes(a));
    const interlocks = running.interlocks.filter((il) => !retiredInterlocks.includes(il));
    // One the file keeps under its id comes back changed with the alarms section: said so now.
    const changing = new Set(
      retiredAlarms.filter((a) => next.alarms.some((b) => b.id === a.id)).map((a) => a.id),
    );
    const changingInterlocks = new Set(
      retiredInterlocks.map((il) => il.id).filter((id) => next.interlocks.some((b) => b.id === id)),
    );
    this.alarms.reconfigure({ alarms, interlocks }, changing, changingInterlocks);
    this.#config = { ...this.#config, alarms, interlocks };
    return {
      alarms: retiredAlarms.map((a) => a.id),
      interlocks: retiredInterlocks.map((il) => il.id),
    };
  }

  /**
   * The keys whose file a reload finds changed under the same path (a renewed certificate, the
   * HTTP server's or the Sparkplug link's): read only at start, so reported as needing a restart.
   * A changed path is the diff's, and so is a link the reload turns off (its files are not read
   * again: FILES_READ_AT_START). Read off the event loop's thread, together, each within
   * RELOAD_FILE_READ_TIMEOUT_MS: a hung mount holds neither the API nor the e-stop meanwhile.
   * `changedTls` is given the HTTP server's files that changed, as read now.
   */
  async #filesChanged(next: Config, changedTls: Map<string, Uint8Array>): Promise<string[]> {
    const checked = [...this.#filesRead].map(async ([key, read]) => {
      if (FILES_READ_AT_START[key]?.(next) !== read.path) return null;
      const got = await this.#readBounded(read.path, read.maxBytes);
      if (got.kind === "late") {
        return `${key} (unreadable now: no answer within ${RELOAD_FILE_READ_TIMEOUT_MS} ms)`;
      }
      if (got.kind === "refused") return `${key} (not checked now: ${got.why})`;
      const now = got.value;
      if (!now.ok) return `${key} (unreadable now)`;
      if (sameBytes(now.bytes, read.bytes)) return null;
      if (key.startsWith("http.")) changedTls.set(key, now.bytes);
      return `${key} (file changed)`;
    });
    return (await Promise.all(checked)).filter((k) => k !== null);
  }

  /** A file read as a reload reads: off the event loop's thread, within the reload's bound. */
  #readBounded(path: string, maxBytes: number) {
    const readRegular = this.host.readRegularFile ?? readRegularFile;
    return this.#abandonedReads.ask(
      this.host.clock,
      RELOAD_FILE_READ_TIMEOUT_MS,
      () => path,
      () => readRegular(path, maxBytes),
    );
  }

  /**
   * `needsRestart` with what the next start would refuse in the HTTP server's TLS files, when a
   * reload changed them (renewed in place: `changedTls`; a new path; tls_allow_expired_cert; the
   * server turned on, `http.enabled`, said on that line unless a file's own line is there):
   * judged with the start's check (checkTlsFiles) and said on the line of the key the start's
   * message names (`http.tls_cert_path (file changed; a restart refuses it: ...)`). TLS is applied
   * only at a restart: the reload goes on. A file read at start that cannot be read now is not
   * judged (its own line says so); one at a new path that the start could not read (too large,
   * not readable: the loader's check only saw that it exists) is what a restart refuses.
   */
  async #withTlsProblem(
    next: Config,
    needsRestart: readonly string[],
    changedTls: ReadonlyMap<string, Uint8Array>,
  ): Promise<string[]> {
    const out = [...needsRestart];
    const { enabled, tlsCertPath, tlsKeyPath, tlsAllowExpiredCert } = next.http;
    const judged = out.findIndex(tlsJudgedKey);
    if (
      judged < 0 || !enabled || this.host.serve === undefined || tlsCertPath === null ||
      tlsKeyPath === null
    ) {
      return out;
    }
    /** A new path's read that failed, by key: a start cannot read that file either. */
    const unreadable = new Map<string, string>();
    const now = async (key: string, path: string): Promise<Uint8Array | null> => {
      const changed = changedTls.get(key);
      if (changed !== undefined) return changed;
      const read = this.#filesRead.get(key);
      if (read?.path === path) {
        // The same bytes as at start, unless its own line says it could not be read now.
        return out.some((k) => k.startsWith(`${key} (`)) ? null : read.bytes;
      }
      const got = await this.#readBounded(path, TLS_FILE_MAX_BYTES);
      if (got.kind !== "answered") return null;
      if (got.value.ok) return got.value.bytes;
      unreadable.set(key, `${key}: cannot read '${path}': ${got.value.message}`);
      return null;
    };
    const [cert, key] = await Promise.all([
      now("http.tls_cert_path", tlsCertPath),
      now("http.tls_key_path", tlsKeyPath),
    ]);
    const text = (b: Uint8Array) => new TextDecoder().decode(b);
    // The start reads the certificate first: its failure is the one a start names.
    const refusal = unreadable.get("http.tls_cert_path") ?? unreadable.get("http.tls_key_path") ??
      (cert === null || key === null ? null : (await checkTlsFiles({
        tlsCertPath,
        tlsKeyPath,
        tlsAllowExpiredCert,
        tlsFiles: { cert: text(cert), key: text(key) },
      })).refusal);
    if (refusal === null) return out;
    // The start's messages begin with the key they are about.
    const named = refusal.startsWith("http.tls_key_path:")
      ? "http.tls_key_path"
      : "http.tls_cert_path";
    const why = refusal.replace(/^http\.tls_(cert|key)_path(?: \/ http\.tls_key_path)?: /, "");
    const own = out.findIndex((k) => k === named || k.startsWith(`${named} (`));
    const i = own >= 0 ? own : judged;
    out[i] = restartRefuses(out[i]!, why);
    return out;
  }

  /**
   * `needsRestart` with what the next start would refuse in the Sparkplug link's TLS files, when a
   * reload changed the section: a file at a path the start has not read (a new path, or the link
   * enabled) that cannot be read within its bound (too large, not readable: the loader's check
   * only saw that it exists) stops the next start whole (#openFiles), naming its key and path --
   * said on the section's line (`sparkplug.tls (a restart refuses it: ...)`), the first such file
   * in the order the start reads them. A late or refused read is not judged; the reload goes on.
   */
  async #withSparkplugFileProblem(
    next: Config,
    needsRestart: readonly string[],
  ): Promise<string[]> {
    const out = [...needsRestart];
    if (!next.sparkplug.enabled) return out;
    const keys = SPARKPLUG_FILE_KEYS.filter((key) => {
      const path = FILES_READ_AT_START[key]!(next);
      return path !== null && this.#filesRead.get(key)?.path !== path;
    });
    const reads = await Promise.all(keys.map(async (key) => {
      const path = FILES_READ_AT_START[key]!(next)!;
      const got = await this.#readBounded(path, READ_FILE_MAX_BYTES);
      return got.kind === "answered" && !got.value.ok
        ? `${key}: cannot read '${path}': ${got.value.message}`
        : null;
    }));
    const refusal = reads.find((r) => r !== null);
    if (refusal === undefined) return out;
    const on = (k: string) => out.findIndex((e) => e === k || e.startsWith(`${k} (`));
    const own = on("sparkplug.tls");
    const i = own >= 0
      ? own
      : on("sparkplug.enabled") >= 0
      ? on("sparkplug.enabled")
      : out.findIndex(sparkplugRestartKey);
    out[i] = restartRefuses(out[i]!, refusal);
    return out;
  }

  /** Records a reload's decision on a section that weakens a protection, or that was refused. */
  #recordReload(
    key: SectionKey,
    outcome: "accepted" | "refused" | "failed",
    reason: string | null,
    weakens: readonly Weakening[],
    refusedBy = "run_gate",
  ): void {
    if (outcome === "accepted" && weakens.length === 0) return;
    // Lines only: the decision is taken (a section applied or refused); a logger that throws must
    // not take its audit record away, nor reject the reload.
    for (const w of weakens) {
      this.#lines.warn(
        `config reload: ${key}: ${w.what} (${outcome === "accepted" ? "applied" : outcome})`,
      );
    }
    this.audit.record({
      action: "config",
      origin: { kind: "reload", cause: "SIGHUP" },
      outcome,
      function: key,
      args: { weakens: weakens.map((w) => w.what) },
      reason,
      ...(outcome === "refused" ? { refused_by: refusedBy } : {}),
      latency_ms: 0,
    });
  }

  /** Ends the wait of the hook calls into FAULT for the reload's ladder (see the hooks section). */
  #settleLadderApplied(): void {
    const settle = this.#ladderApplied;
    this.#ladderApplied = null;
    settle?.();
  }

  /**
   * Why the providers `next` would run do not fit the open files the HTTP server leaves, or null.
   * Its connection bound was fitted at start to the open-file limit, keeping httpReservedFds of the
   * providers configured then: more providers would take descriptors the server may hold (a spawn
   * then fails with EMFILE once its connections are all open). Null when nothing is served or the
   * limit is unknown.
   */
  #openFilesShortfall(next: Config, auto: boolean): string | null {
    const http = this.#http;
    const limit = http?.openFileLimit ?? null;
    if (http === null || limit === null) return null;
    const ids = new Set(next.providers.map((p) => p.id));
    // In AUTO removals and changes are held back: those providers go on running.
    if (auto) { for (const h of this.registry.hosts) ids.add(h.id); }
    const reserved = httpReservedFds(ids.size);
    const fit = fittedMaxConnections(this.#config.http.maxConnections, limit, reserved, http.tls);
    if (fit >= http.maxConnections) return null;
    const added = next.providers.filter((p) => !this.#config.providers.some((q) => q.id === p.id))
      .map((p) => p.id);
    const perConnection = http.tls ? 3 : 1;
    return `the open-file limit ${limit} leaves ${
      limit - http.maxConnections * perConnection
    } descriptor(s) beside the HTTP server's ${http.maxConnections} connection(s) (its bound, ` +
      `fitted at start), and ${ids.size} provider(s) need ${reserved} kept free: not starting ` +
      `${added.join(", ")}; the providers in effect are kept (raise LimitNOFILE / ulimit -n, or ` +
      "lower http.max_connections, and restart)";
  }

  /**
   * Waits, before a reload stops provider `id`, for the stop actions in flight to it: the e-stop's
   * ladder calls and the hook calls into FAULT (bounded: Estop.stopActionsSettled), so that none is
   * cut off; one line when it waited, naming what it waited for.
   */
  async #stopActionsSettled(id: string): Promise<void> {
    const wait = await this.estop.stopActionsSettled(id);
    if (wait === null) return;
    const what = stopActionsWhat([wait]);
    const took = wait.waitedMs === null ? "" : ` ${wait.waitedMs} ms`;
    if (wait.settled) {
      this.host.log.info(`reload: waited${took} for ${what} to ${id}, then stopped it`);
    } else {
      this.host.log.warn(
        `reload: ${what} to ${id} had not finished within ${wait.boundMs} ms; ` +
          "stopped it all the same",
      );
    }
  }

  /**
   * Waits, before a stop stops the providers, for the stop actions in flight to them, as a reload
   * waits before it stops one (Estop.stopActionsSettled: each provider's wait within its own bound
   * and `capMs`, stopActionsShutdownWaitMs); one line when it waited: INFO when they finished, WARN
   * naming those that had not. `hurried` (StopDeadline.hurried) ends the wait at once: the
   * process kills the providers then alive (app/process.ts shutDown; one it did not reach is
   * killed at the providers' stop: ProviderRegistry.stopAll's `hurried`), and that deadline
   * leaves nothing past their stop. Then, in what `capMs` leaves, for the read-back of the
   * e-stop's stops under way (Estop.readBackSettled, its own line: #readBackBeforeStop). Never
   * rejects.
   */
  async #stopActionsBeforeStop(capMs: number, hurried?: Promise<void>): Promise<void> {
    // The providers configured and every one registered: a reload still running (another of its
    // starts pending) has started providers it adds, which the e-stop's ladder (the zero rung)
    // and their securing runs call, before their entries are in effect (#config: at its end).
    const ids = [
      ...new Set([
        ...this.#config.providers.map((p) => p.id),
        ...this.registry.hosts.map((h) => h.id),
      ]),
    ];
    const waits = await Promise.all(
      ids.map((id) => this.estop.stopActionsSettled(id, capMs, hurried)),
    );
    // Then the read-back that follows them (the stops under way, to their answer), within what
    // the cap leaves: a provider stopped under it would have it say `unreachable`.
    const spentMs = Math.max(0, ...waits.map((w) => w?.waitedMs ?? 0));
    const leftMs = capMs - spentMs;
    const late = waits.some((w) => w !== null && !w.settled);
    if (late && (leftMs <= 0 || waits.some((w) => w?.cut))) {
      // Nothing left for it (the calls' wait took the whole cap, or a second stop signal ended
      // it): not waited for, and said in the calls' one WARN, not in a second "within 0 ms".
      this.#stopActionsWaited(ids, waits, this.estop.readBackUnderWay);
      return;
    }
    this.#stopActionsWaited(ids, waits, false);
    this.#readBackBeforeStop(await this.estop.readBackSettled(leftMs, hurried));
  }

  /**
   * The line of a stop's wait for the stop actions (#stopActionsBeforeStop), when it waited;
   * `readBackLeft`: the e-stop's read-back is under way and not waited for (its WARN says so).
   */
  #stopActionsWaited(
    ids: readonly string[],
    waits: readonly (StopActionsWait | null)[],
    readBackLeft: boolean,
  ): void {
    const waited = ids.flatMap((id, i) => {
      const wait = waits[i];
      return wait === null || wait === undefined ? [] : [{ id, ...wait }];
    });
    if (waited.length === 0) return;
    const what = (ws: typeof waited) =>
      `${stopActionsWhat(ws)} to ${ws.map((w) => w.id).join(", ")}`;
    const late = waited.filter((w) => !w.settled);
    if (late.length === 0) {
      const took = waited.some((w) => w.waitedMs === null)
        ? ""
        : ` ${Math.max(...waited.map((w) => w.waitedMs ?? 0))} ms`;
      this.#lines.info(`stop: waited${took} for ${what(waited)}, then stopped the providers`);
      return;
    }
    const stopped = "the providers are stopped all the same" +
      (readBackLeft
        ? ", the e-stop's read-back of the safe state not waited for (a check it has not read " +
          "then says unreachable)"
        : "");
    if (late.some((w) => w.cut)) {
      const cutAt = late.flatMap((w) => w.cut && w.waitedMs !== null ? [w.waitedMs] : []);
      this.#lines.warn(
        `stop: ${what(late)} had not finished when a second stop signal hurried the stop` +
          `${cutAt.length === 0 ? "" : ` (after ${Math.max(...cutAt)} ms)`}; ${stopped}`,
      );
      return;
    }
    const bounds = [...new Set(late.map((w) => w.boundMs))];
    this.#lines.warn(
      `stop: ${what(late)} had not finished within ${
        bounds.length === 1
          ? `${bounds[0]} ms`
          : `their bounds (${late.map((w) => `${w.id} ${w.boundMs} ms`).join(", ")})`
      }; ${stopped}`,
    );
  }

  /**
   * The line of a stop's wait for the e-stop's read-back (Estop.readBackSettled) before it stops
   * the providers: INFO when it ended, WARN when its bound ran out or a second stop signal ended
   * it; none when no stop was under way.
   */
  #readBackBeforeStop(wait: ReadBackWait | null): void {
    if (wait === null) return;
    const what = "the e-stop's read-back of the safe state";
    if (wait.settled) {
      const took = wait.waitedMs === null ? "" : ` ${wait.waitedMs} ms`;
      this.#lines.info(`stop: waited${took} for ${what}, then stopped the providers`);
    } else if (wait.cut) {
      const after = wait.waitedMs === null ? "" : ` (after ${wait.waitedMs} ms)`;
      this.#lines.warn(
        `stop: ${what} had not finished when a second stop signal hurried the stop${after}; ` +
          "the providers are stopped all the same (a check it has not read then says unreachable)",
      );
    } else {
      this.#lines.warn(
        `stop: ${what} had not finished within ${wait.boundMs} ms; the providers are stopped ` +
          "all the same (a check it has not read then says unreachable)",
      );
    }
  }

  /** The owner of every live section (app/live_config.ts names them). */
  #ownKernelSections(): void {
    const own = (key: SectionKey, apply: SectionApply) => this.#owners.set(key, apply);
    // The e-stop's securing runs a section began while latched (providers it started, or secured
    // again under a ladder it changed): the reload waits for them and counts their calls. One
    // that fails is the e-stop's to report (its ERROR line) and to redo at the provider's next
    // return: the section did apply (its ladder, hooks or providers are in force), so it is not
    // failed (its old value kept in effect while the new one runs); the report names the failure.
    const secured = async (report: MutableReloadReport, runs: Promise<EstopAction[]>[]) => {
      for (const run of runs) {
        try {
          report.estopActions += (await run).length;
        } catch (err) {
          report.estopFailures.push(errorMessage(err));
        }
      }
    };
    own("providers", async (next, { auto, report }) => {
      const noRoom = this.#openFilesShortfall(next, auto);
      if (noRoom !== null) {
        report.providers = {
          ...report.providers,
          unchanged: this.#config.providers.map((p) => p.id),
        };
        return { refusedBy: "validation", refused: noRoom };
      }
      const budget = this.#config.runtime.shutdownTimeoutMs;
      const r = await this.registry.reconcile(this.#config.providers, next.providers, {
        holdRemovals: auto,
        stopBudgetMs: budget,
        startBudgetMs: this.#config.runtime.startupTimeoutMs,
        ...(this.#reloadPlan === null ? {} : { plan: this.#reloadPlan }),
        stopping: () => this.#stopping !== null,
        beforeStop: (id) => this.#stopActionsSettled(id),
        restarting: (ids) => {
          this.#reloadRestarting = ids;
          // A MANUAL -> AUTO running its before-hooks was judged on these providers as they ran
          // (what its hooks set up on them starts over): refused at its commit, as AUTO would
          // hold these removals and changes back. One requested meanwhile is refused (arm check).
          if (ids.length > 0) {
            this.modes.invalidateAutoEntry(
              `a configuration reload stopped or restarted provider(s) ${ids.join(", ")}`,
            );
          }
        },
      });
      report.providers = {
        added: r.added,
        restarted: r.restarted,
        retried: r.retried,
        updated: r.updated,
        removed: r.removed,
        unchanged: r.unchanged,
        failed: r.failed,
        addFailed: r.addFailed,
        restartFailed: r.restartFailed,
        held: r.held,
      };
      const effective = { ...this.#config, providers: r.effective };
      // The registry has changed: the entries in effect follow it now, even if what comes next
      // throws (the section is then reported failed), or the next reload would diff against
      // providers no longer running and add again one already registered.
      this.#config = effective;
      // stop() began while providers started: those it cut short are not running (the rest of
      // the runtime is ending too); the section did not apply, whatever did stays in effect.
      // Each one cut short, and why, is in report.providers.failed (the summary's "failed to
      // start"), said once: not again in the section's why.
      if (this.#stopping !== null && r.failed.length > 0) {
        report.interrupted = true;
        return { effective, failed: RELOAD_STOPPING };
      }
      // A provider that came up while the e-stop is latched is brought to the safe state by the
      // e-stop itself (it follows every provider's availability); the report counts its calls
      // (one that fails: named, and its devices are polled below all the same). Each one is
      // asked for once the one before has ended (the run in force for it then).
      for (const host of r.started) {
        const run = this.estop.securing(host);
        if (run !== null) await secured(report, [run]);
      }
      // Each device of a provider this reload started is polled once before the next sections
      // apply (as the priming poll does at start): an alarm the same reload adds on its signals
      // judges a sample, not "no sample yet" (which would raise it and run its action).
      // pollDevice never throws and each poll is bounded by the provider's timeout_ms.
      await Promise.all(
        r.started.flatMap((host) =>
          host.devices.map((d) => this.cache.pollDevice(host.id, d.device.deviceId))
        ),
      );
      // The configured ids (any length) cut as namedProviderId, as the summary names them.
      const failed = r.failed.length > 0
        ? `; failed to start: ${namedFailedStarts(r.failed).join("; ")}`
        : "";
      const gone = r.cleared.filter((id) => !next.providers.some((p) => p.id === id));
      return {
        ...(gone.length > 0
          ? {
            note: `no longer listed (failed to start before): ${
              gone.map(namedProviderId).join(", ")
            }`,
          }
          : {}),
        effective,
        ...(r.held.length > 0
          ? {
            refused: `mode is AUTO: removal or change of ${
              r.held.map(namedProviderId).join(", ")
            } held back${failed}`,
          }
          : {}),
      };
    });
    own("polling", (next, { auto, weakens, changedSections }) => {
      if (auto && weakens.length > 0) return { refused: refusal(weakens) };
      this.cache.setIntervalMs(next.polling.intervalMs);
      this.runs.setPollingIntervalMs(next.polling.intervalMs); // its polling_change
      this.#sectionFactsRecorded.add("polling.interval_ms");
      this.outages.setDownAfterMs(deviceDownAfterMs(next.polling.intervalMs));
      // Every stale bound may have moved: judged now, not at the next poll or the old bound --
      // by the health section when this reload changes it too, or by the alarms section (both
      // next, nothing awaited between: CONFIG_SECTIONS): the new interval under the old
      // staleness, or under the alarms the file removes or changes, is no configuration's, and an
      // alarm raised on a sample stale only there would run its action (an e-stop) for nothing.
      if (changedSections.includes("health") || changedSections.includes("alarms")) {
        this.#alarmsJudgedLater = true;
      } else this.alarms.evaluateAll();
      return { note: `polling ${this.#config.polling.intervalMs}->${next.polling.intervalMs} ms` };
    });
    own("health", (next, { auto, weakens, changedSections }) => {
      // When this reload changes the alarms too, their section judges them, applied or refused:
      // not the alarms the file removes or changes under the new bounds. It comes next, nothing
      // awaited between (CONFIG_SECTIONS): no poll or wake-up of the alarm engine judges them
      // under these bounds first.
      const alarmsNext = changedSections.includes("alarms");
      const judge = () => {
        if (alarmsNext) return void (this.#alarmsJudgedLater = true);
        this.#alarmsJudgedLater = false;
        this.alarms.evaluateAll();
      };
      if (auto && weakens.length > 0) {
        // The interval the polling section applied, under the staleness kept.
        if (this.#alarmsJudgedLater) judge();
        return { refused: refusal(weakens) };
      }
      this.cache.setStaleness(next.health.staleness);
      // Every stale bound may have moved: judged now (or by the alarms section), not at the next
      // poll or the old bound.
      judge();
      return {};
    });
    own("telemetry", async (next, { report }) => {
      if (next.telemetry.enabled) await loadInfluxClient();
      // stop() began while the client loaded (its first import): the writer stops, or has
      // stopped, and is not retargeted (it would refuse once stopped).
      if (this.#stopping !== null) {
        report.interrupted = true;
        return { failed: RELOAD_STOPPING };
      }
      // Only this section of `next`: runtime.name (the rows' runtime_name) needs a restart.
      await this.telemetry.retarget(
        this.#telemetryOptions(sectionOf("telemetry").take(this.#config, next)),
        telemetryReloadFlushMs(this.#config.runtime.shutdownTimeoutMs),
      );
      return {
        note: next.telemetry.enabled
          ? `telemetry retargeted (writing to ${urlWithoutPassword(next.telemetry.influxdb.url)})`
          : "telemetry retargeted (disabled)",
      };
    });
    // A removed token is refused from the next request on; its open event streams end.
    // Who may act changed: on the audit trail (names and roles, never a token) and in the note.
    // Both sections set every token from `next`: the first of them to apply records the changes.
    const retoken = (key: SectionKey) => async (next: Config): Promise<SectionResult> => {
      const apiToken = resolveApiToken(next.http, this.#secret("RUNTIME_API_TOKEN"));
      const named = resolveNamedTokens(next.http, this.#secret);
      // Authentication stays as it started (http.auth_enabled needs a restart): a file that turns
      // it off and drops every token would leave the running API refusing every request, the
      // e-stop included, a state start-up refuses ("auth_enabled is true but no token is set").
      const running = this.#config.http;
      if (
        running.enabled && running.authEnabled && apiToken === "" &&
        named.every((t) => t.token === "")
      ) {
        return {
          refusedBy: "validation",
          refused: "http.auth_enabled stays true until a restart and the file sets no token " +
            "(http.auth_token, http.tokens, RUNTIME_API_TOKEN): every request would be refused; " +
            "the tokens in force are kept",
        };
      }
      // A file that turns auth off judges its tokens as ignored (a token no client can send is
      // only a warning there), but authentication stays on until a restart: it would admit nobody.
      if (running.enabled && running.authEnabled) {
        // The first of the file's tokens no client can send; else an http.tokens entry with such
        // a token, left out at load (not a token removed).
        let unsendable = next.http.unsendableTokens?.[0];
        for (const t of withDefaultToken(apiToken, named)) {
          const why = t.token === "" ? null : unsendableToken(t.token);
          if (why === null) continue;
          unsendable = { name: t.name, why };
          break;
        }
        if (unsendable !== undefined) {
          return {
            refusedBy: "validation",
            refused: `http.auth_enabled stays true until a restart and token ` +
              `'${unsendable.name}' ${unsendable.why}; the tokens in force are kept`,
          };
        }
      }
      // Recorded in the step the tokens take effect: before any request they admit.
      const { ended, changes } = await this.api.setTokens(
        running,
        apiToken,
        named,
        (changes) =>
          this.audit.record({
            action: "config",
            origin: { kind: "reload", cause: "SIGHUP" },
            outcome: "accepted",
            function: key,
            args: { tokens: changes },
            reason: null,
            latency_ms: 0,
          }),
      );
      const notes: string[] = [];
      // Nobody gained or lost anything (the other token section, applied first, took it all; or
      // the file's auth_token, which RUNTIME_API_TOKEN overrides): nothing was replaced.
      if (changes !== null) {
        notes.push(`API tokens replaced: ${tokenChangesText(changes)}`);
        if (ended > 0) notes.push(`${ended} event stream(s) of removed tokens ended`);
      }
      if (key === "http.auth_token" && (this.#secret("RUNTIME_API_TOKEN") ?? "") !== "") {
        notes.push("http.auth_token not in effect: RUNTIME_API_TOKEN overrides it");
      }
      return notes.length === 0 ? {} : { note: notes.join("; ") };
    };
    own("http.auth_token", retoken("http.auth_token"));
    own("http.tokens", retoken("http.tokens"));
    own("logging", (next) => {
      const from = this.#config.logging.level;
      this.host.setLogLevel(next.logging.level);
      return { note: `log level ${from}->${next.logging.level}` };
    });
    own("automation.behavior_tree", async (next, { changed }) => {
      const na = next.automation;
      // Automation disabled: nothing runs a tree; the setting is only kept.
      if (!this.automation) return changed ? {} : { unchanged: true };
      // reloadTree compares path, rate and the file's digest: it says "unchanged" for the same.
      // A new tree reads only parameters of this file (offered before automation.parameters).
      // The files the reload's checks read are the ones loaded: no second read, so what was
      // checked is what runs, and a read that hung there fails this section naming the file.
      const files = this.#reloadTreeFiles;
      const checked = files !== null && files.path === na.behaviorTree ? files.readFile : undefined;
      const before = this.automation.automationVersion();
      const r = await this.automation.reloadTree(
        na.behaviorTree,
        na.tickRateHz,
        na.parameters,
        checked,
      );
      // Without a tree, a changed rate is only kept (as with automation disabled).
      if (r === "unchanged") return changed ? {} : { unchanged: true };
      if (r === "refused_auto") {
        return { refused: "mode is AUTO: the running tree is never swapped" };
      }
      if (typeof r === "object") {
        return {
          refused: `mode is AUTO: the running tree is never swapped, and the new one does not ` +
            `load: ${r.refused_auto.does_not_load}`,
        };
      }
      // The same tree at another tick rate: its version is the same, no run records a swap.
      if (r === "retimed") return { note: `behavior tree tick rate now ${na.tickRateHz} Hz` };
      // A run open now keeps the version it opened with; the swap is one of its events.
      this.runs.recordAutomationChange(before, this.automation.automationVersion());
      this.#sectionFactsRecorded.add("automation.behavior_tree");
      // Its calls that policies in force refuse are said at the reload's end (#reload).
      this.#treeSwappedInReload = true;
      return {
        note: na.behaviorTree === null ? "behavior tree removed" : "behavior tree reloaded",
      };
    });
    own("automation.parameters", (next, { auto }) => {
      const params = this.parameters;
      if (!params) return {};
      const changes = params.valueChanges(next.automation.parameters);
      if (auto && changes.length > 0) {
        return {
          refused: `mode is AUTO: it would change the running recipe: ${changes.join(", ")}`,
        };
      }
      // The tree in force (the one this reload loaded, if any) would fail at every tick.
      const reads = this.automation?.parameterReadProblems(next.automation.parameters) ?? [];
      if (reads.length > 0) {
        return {
          refusedBy: "validation",
          refused: `the behavior tree in force reads parameters it would not declare: ${
            reads.join("; ")
          }`,
        };
      }
      // The recipe a pending MANUAL -> AUTO was requested with changes under it.
      if (changes.length > 0) {
        this.modes.invalidateAutoEntry(
          `a configuration reload changed the recipe (${changes.join(", ")})`,
        );
      }
      params.redeclare(next.automation.parameters);
      return {};
    });
    // The providers this reload started (up): they came back before a later section applied,
    // under the hooks and safe state in force then.
    const returned = (report: MutableReloadReport) =>
      [...report.providers.added, ...report.providers.restarted, ...report.providers.retried]
        .map((id) => this.registry.host(id))
        .filter((h): h is ProviderHost => h?.available === true);
    own("automation.mode_transition_hooks", async (next, ctx) => {
      const { auto, weakens, report } = ctx;
      if (auto && weakens.length > 0) return { refused: refusal(weakens) };
      const na = next.automation;
      const back = returned(report);
      // Without a safety: section the e-stop adopts the *->FAULT hooks: they changed. First: a
      // provider secured again with them, the hooks into FAULT made again leave those calls out.
      const candidate = sectionOf("automation.mode_transition_hooks").take(this.#config, next);
      const runs = candidate.safety.present
        ? []
        : this.estop.reconfigure(effectiveSafeState(candidate).safeState, back);
      // The safety section of the same reload comes next and may change the ladder: the hook
      // calls into FAULT this changes are made again after its securing runs have begun (a
      // stop's order: ladder, then hooks), settled by that section (or by the end of the reload).
      // Whether it comes is the reload's own list of changed sections: the one that offers it.
      const ladderNext = ctx.changedSections.includes("safety");
      let ladderFirst: Promise<void> | undefined;
      if (ladderNext) {
        const settled = Promise.withResolvers<void>();
        this.#ladderApplied = settled.resolve;
        ladderFirst = settled.promise;
      }
      this.modes.reconfigure(na.modeTransitionHooks, na.manualGatingPolicy, ladderFirst);
      await secured(report, runs);
      return {};
    });
    own("safety", async (next, { auto, weakens, report }) => {
      let runs: Promise<EstopAction[]>[];
      try {
        if (auto && weakens.length > 0) return { refused: refusal(weakens) };
        const candidate = sectionOf("safety").take(this.#config, next);
        runs = this.estop.reconfigure(effectiveSafeState(candidate).safeState, returned(report));
      } finally {
        // The new ladder's securing runs have begun (or nothing changed): the hook calls into
        // FAULT the hooks section changed may follow, each waiting for its provider's run.
        this.#settleLadderApplied();
      }
      await secured(report, runs);
      return {};
    });
    own("alarms", (next, { auto, weakens }) => {
      const early = this.#retiredEarly;
      this.#retiredEarly = null;
      // The stale bounds the polling or health section applied are judged here, once, with the
      // alarms in force after this section (reconfigure judges them all; refused: below).
      const judge = this.#alarmsJudgedLater;
      this.#alarmsJudgedLater = false;
      if (auto && weakens.length > 0) {
        if (early === null) {
          if (judge) this.alarms.evaluateAll();
          return { refused: refusal(weakens) };
        }
        // AUTO was entered after the providers section took these out (their change accepted
        // then): the rest of the section is refused, the file's version of these applies.
        const alarms = [
          ...this.#config.alarms,
          ...next.alarms.filter((a) => early.alarms.includes(a.id)),
        ];
        const interlocks = [
          ...this.#config.interlocks,
          ...next.interlocks.filter((il) => early.interlocks.includes(il.id)),
        ];
        this.alarms.reconfigure({ alarms, interlocks });
        return { refused: refusal(weakens), effective: { ...this.#config, alarms, interlocks } };
      }
      this.alarms.reconfigure({ alarms: next.alarms, interlocks: next.interlocks });
      return {};
    });
  }

  /**
   * runtime.data_dir's lock, before anything is written there or spawned: held by another process,
   * the start is refused (FAILED_PRECONDITION: exit 3). A lock that cannot be taken for another
   * reason (a read-only folder) is said and the start goes on, as the journals do there.
   */
  async #lockDataDir(): Promise<void> {
    const take = this.host.lockDataDir;
    if (take === undefined) return;
    const dir = this.config.runtime.dataDir;
    let lock: DataDirLock;
    try {
      lock = await take(dir);
    } catch (err) {
      this.host.log.warn(
        `runtime.data_dir ${dir}: its lock could not be taken (${errorMessage(err)}): ` +
          "a second runtime on this folder would not be refused",
      );
      return;
    }
    if ("heldBy" in lock) {
      throw new RuntimeError(
        "FAILED_PRECONDITION",
        `runtime.data_dir ${dir} is in use by another runtime (${lock.heldBy}): two runtimes on ` +
          "one folder would overwrite each other's run records, audit trail and history, and " +
          "drive the same hardware; stop the other one, or give this one its own runtime.data_dir",
      );
    }
    // Given only after the start was abandoned and stop() began (a hung mount that answered at
    // last): the stop may have passed its release already, and nothing of this start writes to
    // the folder any more -- released at once, never held by a runtime that has stopped.
    if (this.#stopping !== null) {
      try {
        lock.release();
      } catch (err) {
        this.#lines.error(
          `runtime.data_dir ${dir}: its lock, given after the stop began, could not be ` +
            `released: ${errorMessage(err)}`,
        );
      }
      this.#throwIfStopping();
    }
    // Held before its line: a logger that throws on it fails the start, and the stop after it
    // still releases the lock.
    this.#dataDirLock = lock;
    if (lock.holderNotWritten !== undefined) {
      this.host.log.warn(
        `runtime.data_dir ${dir}: locked, but ${lock.holderNotWritten}: a second runtime is ` +
          "refused without this one's pid",
      );
    }
  }

  /**
   * The error of a start() that failed for a cause of its own, before stop() was called (a
   * provider that crashed as a stop signal came, say), or null: none did, or the stop ended it
   * (whatever it then rejected with: a provider session "closed by the runtime" is the stop's).
   * A provider's start that failed of its own before the stop stopped it, another's then holding
   * start-up, is named too (#providersFailedOnTheirOwn). A failure this names is the start's, to
   * be said even when the process exits as a stop. A stage the stop abandoned (the data_dir lock
   * under way) that then fails of its own (the folder in use by another runtime) is named once it
   * answers: after start() rejected, maybe after the stop resolved, or never (a mount that never
   * answers).
   */
  get startFailedOnItsOwn(): { readonly error: unknown } | null {
    return this.#startFailedOnItsOwn;
  }

  /**
   * The stop's stages that failed after stop() had settled (a stage on a hung disk it went on
   * without, whose disk answered at last with an error): a stage failed all the same, and the
   * process that learns of it before it exits says so (exit 4, as for one that failed within).
   */
  get stopStagesFailedLate(): readonly string[] {
    return this.#stopStagesFailedLate;
  }

  /**
   * Stops polling and ends every provider within runtime.shutdown_timeout_ms, or within what
   * `deadline` leaves past STOP_ACTIONS_SHUTDOWN_RESERVE_MS when that is less, never less than
   * PROVIDERS_STOP_MIN_MS (providersStopBudgetMs); after a second stop signal (`deadline.hurried`,
   * before or during the providers' stop) the providers still being ended are killed at once.
   * Idempotent. During start() it acts at once: ending the providers
   * ends whatever start-up stage waits on them.
   * Every stage runs whatever an earlier one did: one that throws is logged (ERROR, naming it) and
   * the stop goes on, so the providers are always stopped and the data_dir lock always released
   * (last); the stop then rejects, naming the stages that failed. `deadline`: the end of the whole
   * stop's budget as the process enforces it; telemetry's last flush takes what is left of it.
   */
  stop(deadline?: StopDeadline): Promise<void> {
    this.#stopAsked.resolve("stopping");
    this.#stopping ??= this.#stop(deadline);
    return this.#stopping;
  }

  async #stop(deadline: StopDeadline | undefined): Promise<void> {
    const budget = this.config.runtime.shutdownTimeoutMs;
    // A logger that throws must not end the stop either.
    const log = this.#lines;
    const failed: string[] = [];
    // Whether the stop has settled: a stage failing after it (one it went on without past its
    // bound) is no longer in `failed`, which the stop has already judged.
    let settled = false;
    const report = (stage: string, err: unknown) => {
      if (settled) {
        this.#stopStagesFailedLate.push(stage);
        log.error(
          `stop: ${stage} failed after the stop had ended without it: ${errorMessage(err)}`,
        );
        return;
      }
      failed.push(stage);
      log.error(`stop: ${stage} failed: ${errorMessage(err)}; the stop goes on`);
    };
    // The synchronous stages stay synchronous: the tree is halted in stop()'s own call.
    const step = (stage: string, run: () => void) => {
      try {
        run();
      } catch (err) {
        report(stage, err);
      }
    };
    const stepAsync = async (stage: string, run: () => Promise<unknown> | undefined) => {
      try {
        await run();
      } catch (err) {
        report(stage, err);
      }
    };
    // The stages on the disk still under way past their bound: the data_dir lock is released
    // once they end, not before (a second runtime on the folder is refused while this one may
    // still write there; a process that exits first releases it with its files).
    const late: Promise<unknown>[] = [];
    // What the stop's whole budget leaves past telemetry's reserve (with a process deadline).
    const leftPastReserve = (d: StopDeadline) =>
      Math.max(0, d.leftMs() - TELEMETRY_STOP_RESERVE_MS);
    // Whether `done` settled within `ms` -- or, once a second stop signal hurried the stop
    // (StopDeadline.hurried), within what the hurried deadline leaves past
    // TELEMETRY_STOP_RESERVE_MS when that ends sooner: a wait bounded when it began ends then.
    let hurried = false;
    const cutAtHurry = Promise.withResolvers<void>();
    void deadline?.hurried?.then(() => {
      hurried = true;
      cutAtHurry.resolve();
    });
    const boundedWait = async (done: Promise<unknown>, ms: number): Promise<boolean> => {
      const settled = done.then(() => true);
      const first = await raceTimeout(
        this.host.clock,
        Promise.race([settled, cutAtHurry.promise.then(() => "hurried" as const)]),
        ms,
        false,
      );
      if (first !== "hurried") return first;
      const leftMs = deadline === undefined ? 0 : leftPastReserve(deadline);
      return raceTimeout(this.host.clock, settled, leftMs, false);
    };
    // A stage on the disk after the providers' stop: waited for at most `boundMs` (less when the
    // stop's budget leaves less past telemetry's reserve), then the stop goes on without it.
    // `lines`: what its journal writes (JournalLineCount), read to say whether its disk answers.
    const boundedStep = async (
      stage: string,
      run: () => Promise<unknown>,
      boundMs: number,
      boundName: string,
      lines: JournalLineCount,
    ) => {
      const waitMs = deadline === undefined
        ? boundMs
        : Math.min(boundMs, leftPastReserve(deadline));
      // The lines of the writes begun from here on, never those of a write already under way:
      // one answered a moment after the wait began is no sign of a disk that answers when nothing
      // more is written (as the history's line, counted from the providers' stop), and one that
      // fails part-way takes nothing off the lines written after it. Some written by the time the
      // bound runs out say a disk that answers, slowly -- not one that does not.
      const underWay = lines.writing;
      const writtenSince = lines.since();
      const done = stepAsync(stage, run);
      const startedAt = this.host.clock.monoMs();
      if (!await boundedWait(done, waitMs)) {
        late.push(done);
        const waitedMs = Math.round(this.host.clock.monoMs() - startedAt);
        const writtenMeanwhile = writtenSince();
        // Cut by the stop's budget, not by its own bound: the stages before it (the providers'
        // stop) took the time, and a disk that answers at once may still not have made it.
        const why = waitedMs < boundMs
          ? `the time left was ${waitedMs} ms (what the stop's ${
            hurried ? "hurried " : ""
          }budget left past TELEMETRY_STOP_RESERVE_MS ${TELEMETRY_STOP_RESERVE_MS} after the ` +
            `stages before it); the disk may be fine`
          : writtenMeanwhile > 0
          ? `its disk answers, slowly: it wrote ${writtenMeanwhile} line(s) in the wait, and ` +
            `${boundName} ran out first`
          : `its disk does not answer (no line written in the wait${
            underWay > 0 ? `, the ${underWay} line(s) being written when it began not counted` : ""
          })`;
        log.warn(
          `stop: ${stage} not closed within ${waitedMs} ms (${boundName} ${boundMs}${
            hurried ? ", hurried by a second stop signal" : ""
          }): ${why}; the stop goes on without it (what it still writes is written if ` +
            `the disk answers before the process ends; the data_dir lock is kept until then)`,
        );
      }
    };
    // The cache's stop (no poll started from here on: pollsEnded), waiting for the polls in flight
    // at most CACHE_STOP_POLLS_MS, less when the budget leaves less (`leftMs`): a provider whose
    // read hangs must not hold the providers' stop until its timeout_ms.
    const stopCache = async (leftMs: number) => {
      const stopped = stepAsync("state cache", () => this.cache.stop());
      const waitMs = Math.min(CACHE_STOP_POLLS_MS, leftMs);
      const startedAt = this.host.clock.monoMs();
      if (await boundedWait(stopped, waitMs)) return;
      const inFlight = this.cache.abandonPolls();
      const waitedMs = Math.round(this.host.clock.monoMs() - startedAt);
      log.warn(
        `stop: state cache: the poll(s) of ${
          inFlight.length === 0 ? "a provider" : namedList(
            inFlight,
            MAX_NAMED_IN_WARNING,
            (id) => quoteCutText(namedProviderId(id)),
          )
        } still in flight ${waitedMs} ms into the cache's stop (CACHE_STOP_POLLS_MS ${CACHE_STOP_POLLS_MS}${
          waitMs < CACHE_STOP_POLLS_MS ? `, the stop's budget left ${waitMs} ms` : ""
        }${hurried ? ", hurried by a second stop signal" : ""}): the stop goes on without it, ` +
          `nothing it ends with is taken (the providers' stop ends it)`,
      );
    };
    // A stop before start() resolved (a stop signal during the start-up, or the stop after a
    // failed one) stops the providers already up as a failed start does: nothing of their going
    // is published. In stop()'s own call, before any of them can go.
    if (this.#starting !== null && !this.#startedUp) {
      step("failed start's detach", () => this.#failedStartStopsProviders());
    }
    // No provider is restarted from here on (a crash during the HTTP drain or the stop actions,
    // one the second stop signal kills: spawned again mid-shutdown, its hardware initialised only
    // to be stopped): it stays down, its calls refused UNAVAILABLE as while it backed off. The
    // providers up are not touched: the stop actions still run on them until their stop below.
    step("provider restarts", () => this.registry.endRestarts());
    // The providers' going from here on is the runtime's end: no raise (and no fork) for it.
    step("session priority", () => this.#sessionPriority?.stop());
    // No e-stop plan is logged from here on, neither one waiting for its turn nor one a reload's
    // inventory change would log while the stop waits (HTTP drain, stop actions): the plan is of
    // a runtime that is ending. The plan itself stays current (status, a trigger in the drain).
    step("e-stop", () => this.estop.close());
    // The tree is halted first: from the HTTP listener's close on, only connections still held
    // reach the runtime over HTTP, and the drain may wait seconds for answers still being made
    // (HTTP_SHUTDOWN_ANSWER_MS); nothing may go on commanding the machine meanwhile.
    step("automation", () => this.automation?.stop());
    // Nor does a Sparkplug host: its DCMDs are refused from here on (the node publishes its NDEATH
    // only after the HTTP drain below, which may take seconds); its NCMD e-stop is still taken.
    step("Sparkplug commands", () => this.#sparkplug?.closeCommands());
    // Event streams end (they would keep the server's shutdown waiting), and new requests on the
    // connections still held are refused but the e-stop, its clear and runtime status.
    step("HTTP API", () => this.api.close());
    await stepAsync("HTTP server", () => this.#http?.shutdown());
    // NDEATH, bounded in time: a stalled broker does not hold the shutdown.
    await stepAsync("Sparkplug", () => this.#sparkplug?.stop());
    step("alarms", () => this.alarms.stop()); // no alarm action while the runtime shuts down
    step("device outages", () => this.outages.stop()); // nor a device-loss latch forcing FAULT
    // The stop actions still running or decided (an e-stop's safe-state calls, the hook calls into
    // FAULT) are waited for before the providers are stopped, as a reload waits before it stops
    // one: a provider stopped under them leaves the safe state half made. So is the read-back
    // that follows them (a provider stopped under it: `unreachable`). Meanwhile the stages
    // below run; bounded by what the budget leaves past the providers' own stop.
    const stopActions = stepAsync(
      "e-stop's stop actions",
      () =>
        this.#stopActionsBeforeStop(stopActionsShutdownWaitMs(budget, deadline), deadline?.hurried),
    );
    // From the cache's stop on no poll refreshes what it holds (StateCache.pollsEnded, set as its
    // stop begins): a call an interlock covers still queued (an HTTP call behind a slow one, past
    // the drain's 504; a Sparkplug DCMD; a mode change's hooks) is refused by the interlock gate,
    // not judged on frozen values while the stop actions or the history's wait below hold the
    // providers' stop (the failed start's detach does the same). Within what the budget leaves
    // before the providers' stop, as the stop actions' wait (stopActionsShutdownWaitMs).
    await stopCache(stopActionsShutdownWaitMs(budget, deadline));
    // Before the providers go: their going is the runtime's stop, not a device loss (no
    // incident, no UNAVAILABLE samples). Pending incidents are written with what the ring has,
    // open buckets are written, the disk tier closed -- waited for at most
    // HISTORY_STOP_BEFORE_PROVIDERS_MS: a disk that stalls must not hold the providers' stop
    // (their own safe state) until the process's budget ends and kills them. A failing one
    // does not hold it either (each stage reports its own failure; this never rejects).
    step("history detach", () => this.history?.detach());
    let incidentsWritten = false;
    let recordedEnded = false;
    const recordedFromMs = this.host.clock.monoMs();
    const recorded = (async () => {
      await stepAsync("incident records", () => this.incidents?.stop());
      incidentsWritten = true;
      await stepAsync("history", () => this.history?.stop());
      recordedEnded = true;
    })();
    // What of them is still not written, in a log line's words, counted where the code knows:
    // the incident records being written; the history's rows once its stop has written its open
    // buckets (after the incident records). With every row written, what is left is the files'
    // close (their last fsync): never said as "0 rows not written". `written`: rows or records.
    // Without a disk tier (history.disk_max_bytes 0) the history writes no rows: none are named.
    const hasDiskTier = (this.history?.config.diskMaxBytes ?? 0) > 0;
    const unwritten = (): { what: string; written: boolean } => {
      if (!incidentsWritten) {
        const records = this.incidents?.recordsPending ?? 0;
        return {
          what: `${
            records > 0
              ? `${records} incident record(s)`
              : `the incident ids (${INCIDENT_GONE_FILE})`
          }${hasDiskTier ? " and the history's last rows" : ""}`,
          written: true,
        };
      }
      const rows = this.history?.diskRowsPending ?? 0;
      return rows > 0 ? { what: `${rows} history row(s)`, written: true } : {
        what: "the history disk tier's close (every row written, its last fsync or close not " +
          "answered)",
        written: false,
      };
    };
    if (
      !await raceTimeout(
        this.host.clock,
        recorded.then(() => true),
        HISTORY_STOP_BEFORE_PROVIDERS_MS,
        false,
      )
    ) {
      const { what, written } = unwritten();
      log.warn(
        `stop: ${what} still ${written ? "being written" : "under way"} ` +
          `${HISTORY_STOP_BEFORE_PROVIDERS_MS} ms into the stop (HISTORY_STOP_BEFORE_PROVIDERS_MS): ` +
          `the providers are stopped meanwhile`,
      );
    }
    // The history's rows written from here on (the providers' stop): some written by the time its
    // wait runs out say a disk that answers, slowly -- not one that does not answer. Counted from
    // here, not from the stop's ask: a write already under way at the ask, answered a moment after
    // it, is no sign of a disk that answers when nothing more is written in the second that follows
    // or after it (a disk hung right after that write was said to answer, slowly).
    const writtenFromMs = this.host.clock.monoMs();
    const rowsWrittenBefore = this.history?.diskRowsWritten ?? 0;
    await stopActions;
    // From here on no read-back reads a device again: one still under way ends with the stop
    // (its read in flight answered), said before `runtime stopped` -- not at verify_timeout_ms
    // after it, its event and audit entry going nowhere.
    step("e-stop read-backs", () => this.estop.endReadBacks());
    // Within what the stop's budget leaves (a hurried one's too), never less than
    // PROVIDERS_STOP_MIN_MS unless hurried: providersStopBudgetMs. A second stop signal, before
    // or during it, kills the providers it is still ending at once (the process's own kill at that
    // signal may not have reached one), not when that budget runs out.
    await stepAsync(
      "providers",
      () =>
        this.registry.stopAll(
          providersStopBudgetMs(budget, deadline, hurried),
          cutAtHurry.promise,
        ),
    );
    await stepAsync("e-stop read-backs", async () => {
      const waitMs = deadline === undefined
        ? READ_BACKS_END_AT_STOP_MS
        : Math.min(READ_BACKS_END_AT_STOP_MS, leftPastReserve(deadline));
      const wait = await this.estop.readBackSettled(waitMs);
      if (wait !== null && !wait.settled) {
        log.warn(
          `stop: the e-stop's read-back of the safe state had not ended ${
            wait.waitedMs ?? waitMs
          } ms after the providers' stop (READ_BACKS_END_AT_STOP_MS ${READ_BACKS_END_AT_STOP_MS}` +
            `${waitMs < READ_BACKS_END_AT_STOP_MS ? `, the stop's budget left ${waitMs} ms` : ""}` +
            `); the stop goes on without it (it logs nothing after this stop's end)`,
        );
      }
    });
    // The stop's end is final: a read-back still under way writes no line after `runtime stopped`.
    step("e-stop read-back lines", () => this.estop.endReadBackLines());
    // The rest of the history's wait is the stop's last, with telemetry's flush (below): its rows
    // go on being written while the journals close.
    const providersStoppedAt = this.host.clock.monoMs();
    if (this.#starting) {
      await this.#starting.catch(() => {}); // settles once its providers are gone
      // Its polls ended with the providers (their sessions closed): bounded all the same.
      await stopCache(deadline === undefined ? CACHE_STOP_POLLS_MS : leftPastReserve(deadline));
      await stepAsync("HTTP server", () => this.#http?.shutdown()); // bound while stop() waited
    }
    // The open (collapsing) audit entry is closed and the journal written and closed; a call
    // still settling records on its own.
    await boundedStep(
      "audit journal",
      () => this.audit.close(),
      AUDIT_STOP_MS,
      "AUDIT_STOP_MS",
      this.audit.journalLineCount,
    );
    await boundedStep(
      "run records",
      () => this.runs.shutdown(),
      RUNS_STOP_MS,
      "RUNS_STOP_MS",
      this.runs.journalLineCount,
    );
    // Telemetry's last flush takes what the stages before it left of the stop's budget (less the
    // reserve the WARN of the rows it could not write needs), not a fixed share: after a provider
    // that needed SIGKILL, a fixed share outlasted the process's deadline (exit 4) and the rows
    // left were neither counted nor said.
    const telemetryBudget = deadline === undefined
      ? Math.max(TELEMETRY_STOP_MIN_MS, budget / 2)
      : leftPastReserve(deadline);
    // Meanwhile the rest of the history's wait, bounded too: a disk hung for good must not hold the
    // stop past the process's budget (exit 4), and rows the disk takes within it are all written
    // -- a slow disk's too, not cut off for a share of the budget the journals did not use.
    const recordedWaitMs = deadline === undefined ? budget : leftPastReserve(deadline);
    // Whether a second stop signal had hurried the stop when that wait ended (not later, during
    // telemetry's flush): its hurried budget, not the stop's own, cut it.
    let recordedCutHurried = false;
    const [recordedInTime] = await Promise.all([
      boundedWait(recorded, recordedWaitMs).then((inTime) => {
        recordedCutHurried = hurried;
        return inTime;
      }),
      stepAsync("telemetry", () =>
        this.telemetry.stop(
          telemetryBudget,
          // A second stop signal cuts the flush to what the hurried deadline leaves.
          deadline?.hurried?.then(() => leftPastReserve(deadline)),
        )),
    ]);
    // Ended meanwhile (telemetry's flush went on past the wait): written within the stop, not late.
    if (!recordedInTime && !recordedEnded) {
      late.push(recorded);
      const waitedMs = Math.round(this.host.clock.monoMs() - providersStoppedAt);
      const { what, written } = unwritten();
      // Cut by a second stop signal's hurried budget, not by the stop's own: the disk had only
      // what that left (a slow disk that answers may still not have made it), as the journals'
      // line says (boundedStep). The stop's whole budget run out is the disk's: one that wrote
      // none of the rows meanwhile does not answer; one that wrote some answers, too slowly.
      const sinceAskedMs = Math.round(this.host.clock.monoMs() - recordedFromMs);
      const writtenMeanwhile = (this.history?.diskRowsWritten ?? 0) - rowsWrittenBefore;
      const why = recordedCutHurried
        ? `the time left was ${waitedMs} ms (what the hurried budget left after the stages ` +
          `before it; ${sinceAskedMs} ms since the stop asked for them); the disk may be fine`
        : writtenMeanwhile > 0
        ? `the disk answers, slowly: it wrote ${writtenMeanwhile} row(s) in the ${
          Math.round(this.host.clock.monoMs() - writtenFromMs)
        } ms since the providers' stop began, and the stop's budget ran out first`
        : `the disk does not answer (no row written since the providers' stop began, ${
          Math.round(this.host.clock.monoMs() - writtenFromMs)
        } ms ago)`;
      log.warn(
        `stop: ${what} not ${
          written ? "written" : "ended"
        } within ${waitedMs} ms after the providers' stop (the stop's ${
          hurried ? "hurried " : ""
        }budget, less TELEMETRY_STOP_RESERVE_MS ${TELEMETRY_STOP_RESERVE_MS}): ${why}; the stop ` +
          `goes on without them (the data_dir lock is kept until they are written or dropped)`,
      );
    }
    // The incident writes IncidentRecorder.stop left behind (INCIDENT_STOP_WAIT_MS, said in its
    // WARN) may still land in the folder too: the lock is kept until they end -- once the history's
    // wait (above) ended, or meanwhile, as that wait's writes do.
    const incidents = this.incidents;
    if (incidents !== undefined && (!recordedEnded || incidents.writing)) {
      late.push(recorded.then(() => incidents.settled()).catch(() => {}));
    }
    // The opening of the folder a start abandoned on a hung mount: once its call answers, it
    // removes what that call made (an empty history/ or audit/, an empty file: JournalWriter.open).
    // Under this lock: released first, a runtime started right after could have its own fresh
    // folder removed under it.
    if (this.#abandonedOpening !== null) late.push(this.#abandonedOpening);
    // So is a Sparkplug bdSeq save the disk has not answered (the start waited BDSEQ_SAVE_WAIT_MS
    // only): landing after a later runtime's, it would put back an older bdSeq.
    const bdSeqSaving = this.#sparkplug?.bdSeqSaving ?? null;
    if (bdSeqSaving !== null) late.push(bdSeqSaving.catch(() => {}));
    // Last: nothing of this runtime writes to the folder any more -- or, with stages on the disk
    // still under way past their bound, once they end.
    const lock = this.#dataDirLock;
    this.#dataDirLock = null;
    if (late.length === 0 || lock === null) step("data_dir lock", () => lock?.release());
    else {
      void Promise.all(late).then(() => {
        try {
          lock.release();
          log.info(
            "stop: data_dir lock released: the disk calls the stop went on without ended",
          );
        } catch (err) {
          report("data_dir lock", err); // the stop has settled by now: a late failure
        }
      });
    }
    settled = true;
    if (failed.length > 0) {
      throw internal(
        `runtime stopped, but ${failed.length} stop stage(s) failed: ${failed.join(", ")}`,
      );
    }
    log.info("runtime stopped");
  }
}

/**
 * The reload's notes on the alarms and interlocks of `config` that read a provider of `notRunning`
 * (id -> why it is not running): their input is bad, so an alarm with `on_bad_quality: alarm`
 * raises (and runs its action) and an interlock engages (docs/safety.md sec. 9). Their ids (each
 * at most 64 characters, ALARM_ID_PATTERN) are named up to MAX_NAMED_IN_WARNING, the rest
 * counted: a configuration of thousands on one provider makes no note of any length.
 */
function protectionsNotRunning(
  config: Config,
  notRunning: ReadonlyMap<string, string>,
): string[] {
  if (notRunning.size === 0) return [];
  const alarms = config.alarms.filter((a) =>
    notRunning.has(a.providerId) && a.onBadQuality === "alarm"
  );
  const interlocks = config.interlocks.filter((il) =>
    il.signals.some((s) => notRunning.has(s.providerId))
  );
  const which = (ids: readonly string[]) =>
    [...notRunning].filter(([id]) => ids.includes(id)).map(([id, why]) =>
      `${namedProviderId(id)}: ${why}`
    )
      .join("; ");
  const notes: string[] = [];
  if (alarms.length > 0) {
    notes.push(
      `alarms on provider(s) not running (${which(alarms.map((a) => a.providerId))}), their ` +
        `input bad: ${
          namedList(alarms.map((a) => `${a.id} (action ${a.action})`), MAX_NAMED_IN_WARNING)
        }`,
    );
  }
  if (interlocks.length > 0) {
    const read = interlocks.flatMap((il) => il.signals.map((s) => s.providerId));
    notes.push(
      `interlocks on provider(s) not running (${which(read)}), engaged: ${
        namedList(interlocks.map((il) => il.id), MAX_NAMED_IN_WARNING)
      }`,
    );
  }
  return notes;
}

/** A refusal naming what the change would weaken. */
function refusal(weakens: readonly Weakening[]): string {
  return `mode is AUTO: it would weaken a protection: ${weakens.map((w) => w.what).join("; ")}`;
}

/** The Sparkplug bdSeq's store (the edge node's BdSeqStore, typed structurally here). */
export interface BdSeqFile {
  load(): Promise<number | null>;
  save(n: number): Promise<void>;
}

/**
 * The Sparkplug bdSeq kept in a one-line file under runtime.data_dir (docs/sparkplug.md): text
 * other than an integer 0-255 reads as none recorded.
 */
export function bdSeqFile(path: string): BdSeqFile {
  const file = smallStateFile(path);
  return {
    async load() {
      const text = (await file.read())?.trim() ?? "";
      return /^\d{1,3}$/.test(text) && Number(text) <= 255 ? Number(text) : null;
    },
    save: (n) => file.write(`${n}\n`),
  };
}

/**
 * The history ring as Sparkplug store and forward reads it (its HistoryReplay port, typed
 * structurally here: the kernel's static graph holds nothing of src/sparkplug/).
 */
export function historyReplay(history: History) {
  return {
    memorySeconds: history.config.memorySeconds,
    memoryMaxBytes: history.config.memoryMaxBytes,
    position: (providerId: string, deviceId: string) => history.nextPollSeq(providerId, deviceId),
    open(
      providerId: string,
      deviceId: string,
      signalIds: Iterable<string>,
      fromSeq: number,
      untilSeq: number,
    ) {
      const walk = history.changes(providerId, deviceId, signalIds, fromSeq, untilSeq);
      if (walk === null) return null;
      return {
        get reachFromSeq() {
          return walk.reachFromSeq;
        },
        get reachFromMs() {
          return walk.reachFromMs;
        },
        get overtaken() {
          return walk.overtaken;
        },
        get seq() {
          return walk.seq;
        },
        next(each: Parameters<ReplayWalk["next"]>[0]) {
          return walk.next((id, s) =>
            each(
              id,
              ringValue(s),
              qualityName(s.quality),
              s.timeMs,
              history.unitAt(providerId, deviceId, id, s.seq),
            )
          );
        },
      };
    },
  };
}

/** The HTTP server's TLS settings: a reload that changes one judges the files as a start would. */
const TLS_RESTART_KEYS = ["http.tls_cert_path", "http.tls_key_path", "http.tls_allow_expired_cert"];

/** Whether a needs-restart entry is one of TLS_RESTART_KEYS (`key` or `key (why)`). */
function tlsRestartKey(entry: string): boolean {
  return TLS_RESTART_KEYS.some((t) => entry === t || entry.startsWith(`${t} (`));
}

/**
 * Whether a reload with this needs-restart entry has the HTTP server's TLS files judged: one of
 * TLS_RESTART_KEYS, or `http.enabled` (the server turned on: a start reads files it has not read).
 */
function tlsJudgedKey(entry: string): boolean {
  return tlsRestartKey(entry) || entry === "http.enabled" || entry.startsWith("http.enabled (");
}

/** A needs-restart entry with what a restart would refuse added to its why (in parentheses). */
function restartRefuses(entry: string, why: string): string {
  return entry.endsWith(")")
    ? `${entry.slice(0, -1)}; a restart refuses it: ${why})`
    : `${entry} (a restart refuses it: ${why})`;
}

/** What a wait for stop actions waited for, in a log line's words (a reload's, a stop's). */
function stopActionsWhat(waits: readonly { ladder: boolean; hooks: boolean }[]): string {
  return [
    ...(waits.some((w) => w.ladder) ? ["the e-stop's safe-state calls"] : []),
    ...(waits.some((w) => w.hooks) ? ["the hook calls into FAULT"] : []),
  ].join(" and ");
}

/** Whether a needs-restart entry is of the Sparkplug section (`sparkplug.<key>`, with a why). */
function sparkplugRestartKey(entry: string): boolean {
  return entry.startsWith("sparkplug.");
}

/** The Sparkplug link's files of FILES_READ_AT_START, in the order a start reads them. */
const SPARKPLUG_FILE_KEYS = [
  "sparkplug.tls.ca_file",
  "sparkplug.tls.cert_file",
  "sparkplug.tls.key_file",
] as const;

/**
 * The files a configuration names that are read only at start, by key: the path each names, null
 * when its link is off (a start does not read it: a reload neither reads nor judges it).
 */
const FILES_READ_AT_START: Readonly<Record<string, (c: Config) => string | null>> = {
  "http.tls_cert_path": (c) => c.http.enabled ? c.http.tlsCertPath : null,
  "http.tls_key_path": (c) => c.http.enabled ? c.http.tlsKeyPath : null,
  "sparkplug.tls.ca_file": (c) => c.sparkplug.enabled ? c.sparkplug.tls.caPath : null,
  "sparkplug.tls.cert_file": (c) => c.sparkplug.enabled ? c.sparkplug.tls.certPath : null,
  "sparkplug.tls.key_file": (c) => c.sparkplug.enabled ? c.sparkplug.tls.keyPath : null,
};

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/**
 * What a provider plan would have done, for a reload stopped before its providers section ran
 * (`added sim1, sim3 / removed sim2`: ids apart by ", ", kinds by " / ", so neither reads as the
 * other); "" when it does nothing. At most MAX_PROVIDERS ids per list (one configuration's).
 */
function planNotReached(plan: ProviderPlan): string {
  const ids = (entries: readonly { readonly id: string }[]) => entries.map((p) => p.id);
  const parts: [string, readonly string[]][] = [
    ["added", ids(plan.added)],
    ["removed", plan.removed],
    ["restarted", ids(plan.changed)],
    ["retried", ids(plan.retried)],
    ["updated in place", plan.updated.map((u) => u.entry.id)],
  ];
  return parts.filter(([, list]) => list.length > 0).map(([what, list]) =>
    `${what} ${list.join(", ")}`
  ).join(" / ");
}

/**
 * An audit entry as a run's `call` event payload: within the entry's bounds, plain JSON, an
 * integer beyond 2^53 (an argument, a result) its decimal digits, never the neighbouring integer
 * a double would round it to.
 */
function runCallOf(entry: AuditEntry): RunCallEntry {
  return bigintsAsDigits(boundedEntry(entry).entry) as RunCallEntry;
}
