/**
 * What the HTTP layer needs from the rest of the runtime. The composition root provides it
 * (app/kernel.ts, Kernel.services: the kernel's subsystems, run registry and telemetry writer
 * included, process statistics and reload counts). Every service is always there but
 * `parameters` and `automation`, which are absent exactly when automation is disabled; the routes
 * then answer 503 (docs/http-api.md, "Parameters and automation").
 *
 * ModeService and ParameterService come from control/, EstopService from safety/; the
 * automation, telemetry and runs interfaces are declared here and their modules satisfy them
 * structurally.
 */
import type { AlarmService } from "../alarms/mod.ts";
import type { AuditTrail } from "../audit/mod.ts";
import type { Clock, Logger, ProcessStats, ProviderHealthView } from "../common/mod.ts";
import type { Config } from "../config/mod.ts";
import type { CallRouter, ModeService, ParameterService } from "../control/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { History, IncidentRecorder } from "../history/mod.ts";
import type {
  CloseRunRequest,
  EventPageRequest,
  MarkerRequest,
  OpenRunRequest,
  RunsPageRequest,
  StillAdmitted,
} from "../runs/mod.ts";
import type { EstopService } from "../safety/mod.ts";
import type { InventoryReader, StateCache } from "../state/mod.ts";

/**
 * Behavior-tree automation. `status()` returns GET /v0/automation/status without `status`; typed
 * `object` (not Record) so implementations returning a named interface satisfy it.
 */
export interface AutomationService {
  /** XML of the configured tree; NOT_FOUND when none is configured, INTERNAL when unreadable. */
  treeXml(): Promise<string>;
  status(): object;
  /** Ticks and tick errors since start (GET /metrics); absent: not exposed. */
  tickCounts?(): { ticks: number; errors: number };
}

/** Telemetry writer status (GET /v0/telemetry/status without `status`). */
export interface TelemetryService {
  status(): object;
}

/**
 * Run records (src/runs/ RunRegistry); each method may also return a Promise. Inputs are the
 * registry's typed requests: the HTTP layer parses bodies and queries (run_bodies.ts).
 */
export interface RunsService {
  /** `stillAdmitted`: asked at its turn in the registry's write queue (RunRegistry.open). */
  open(request: OpenRunRequest, stillAdmitted?: StillAdmitted): MaybePromise<{ run: unknown }>;
  list(page: RunsPageRequest): MaybePromise<{ runs: unknown[]; count: number }>;
  get(runId: string): MaybePromise<{ run: unknown }>;
  close(runId: string, request: CloseRunRequest): MaybePromise<{ run: unknown }>;
  listEvents(
    runId: string,
    page: EventPageRequest,
  ): MaybePromise<{ events: unknown[]; count: number }>;
  /** `stillAdmitted`: asked at its turn in the registry's write queue (RunRegistry.addMarker). */
  addMarker(
    runId: string,
    marker: MarkerRequest,
    stillAdmitted?: StillAdmitted,
  ): MaybePromise<{ event: unknown }>;
  /**
   * Availability (a start that failed and waits for its retry: `unavailable_reason`), the open
   * run and counters (GET /v0/runtime/status `runs`, GET /metrics).
   */
  info(): RunsStatusView;
}

/** What GET /v0/runtime/status (`runs`) and GET /metrics show of the run registry. */
export interface RunsStatusView {
  readonly available: boolean;
  readonly unavailable_reason: string | null;
  readonly open_run_id: string | null;
  readonly run_count: number;
  readonly dropped_bus_events: number;
}

type MaybePromise<T> = T | Promise<T>;

/** Everything the request handler reads or calls. */
export interface HttpServices {
  readonly config: Config;
  readonly host: { readonly clock: Clock; readonly log: Logger };
  readonly bus: EventBus;
  /** Providers and their devices, read-only (the core promise: no frame from here). */
  readonly inventory: InventoryReader;
  readonly cache: StateCache;
  readonly router: CallRouter;
  providerHealth(): ProviderHealthView[];
  uptimeSeconds(): number;
  readonly modes: ModeService;
  /** Absent (automation disabled): /v0/parameters answers 503. */
  readonly parameters?: ParameterService;
  readonly estop: EstopService;
  /** Absent (automation disabled): /v0/automation/* answers 503. */
  readonly automation?: AutomationService;
  /** The telemetry writer (its status says when telemetry is disabled). */
  readonly telemetry: TelemetryService;
  readonly runs: RunsService;
  readonly alarms: AlarmService;
  /** Signal history (history/); absent when history.enabled is false (503). */
  readonly history?: Pick<History, "query" | "knows" | "status" | "declaredUnits">;
  /** Incident records; absent when history.enabled is false (503). */
  readonly incidents?: Pick<IncidentRecorder, "list" | "page" | "get" | "jsonlRecord" | "status">;
  /** Audit trail (docs/http-api.md, "Audit trail"). */
  readonly audit: Pick<AuditTrail, "query" | "status" | "refused" | "refusedUntrusted">;
  /** This process's RSS and CPU time (GET /metrics). */
  processStats(): Promise<ProcessStats>;
  /** Configuration reloads since start (GET /metrics). */
  configReloads(): ConfigReloadCounts;
  /**
   * The Sparkplug B edge node's figures (GET /metrics); absent or null when sparkplug is off or
   * not started. Structural: http/ does not load the edge node (it is loaded on demand).
   */
  sparkplug?(): SparkplugMetricsView | null;
}

/** What GET /metrics reads of the Sparkplug B edge node (src/sparkplug/edge_node.ts). */
export interface SparkplugMetricsView {
  readonly connected: boolean;
  readonly online: boolean;
  readonly primaryHostOnline: boolean | null;
  readonly bdSeq: number;
  readonly stored: { readonly messages: number; readonly bytes: number };
  /**
   * With the history ring as store and forward: data not published waits in the ring for a
   * replay, or is being replayed (always false with the queue).
   */
  readonly replayPending: boolean;
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
}

/** Configuration reloads (SIGHUP) since start, by outcome. */
export interface ConfigReloadCounts {
  readonly success: number;
  readonly failure: number;
  /** Unix time in seconds of the last successful reload; null before the first. */
  readonly lastSuccessEpochSeconds: number | null;
}
