/**
 * AutomationEngine: the behavior-tree automation as the runtime runs it. Loads the configured
 * tree at start-up (every diagnostic fails the start), adapts the kernel (state cache, call router,
 * parameters, clock) to BtServices, ticks only in AUTO (every committed mode change toggles the
 * runner; leaving AUTO — including the FAULT an e-stop forces — halts the tree), turns a tick that
 * throws into a forced FAULT, and answers GET /v0/automation/tree and /status.
 */
import {
  type Clock,
  internal,
  invalidArgument,
  type Logger,
  notFound,
  parseDeviceHandle,
  type Quality,
  RuntimeError,
  type TypedValue,
} from "../common/mod.ts";
import { type Diagnostic, formatDiagnostic, type RuntimeMode } from "../config/mod.ts";
import type { CallRouter, ModeChangeListener, ParameterService } from "../control/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { StateCache } from "../state/mod.ts";
import {
  type AutomationStatus,
  type AutomationVersion,
  BtRunner,
  type TickScheduler,
} from "./bt/bt_runner.ts";
import { loadBehaviorTree } from "./bt/load.ts";
import type { BtQuality, BtServices, ReadFileFn } from "./bt/services.ts";

/** The part of the mode manager automation depends on (ModeManager satisfies it). */
export interface AutomationModes {
  current(): RuntimeMode;
  onModeChange(listener: ModeChangeListener): () => void;
  /** Un-vetoable transition to FAULT (automation faults). */
  forceFault(reason: string): Promise<boolean>;
}

/** Construction options of AutomationEngine. */
export interface AutomationEngineOptions {
  /** automation.behavior_tree (absolute path), or null when none is configured. */
  readonly behaviorTree: string | null;
  /** automation.tick_rate_hz. */
  readonly tickRateHz: number;
  readonly cache: Pick<StateCache, "signal">;
  readonly router: Pick<CallRouter, "call">;
  /** Absent: every GetParameter* node fails (no parameters declared). */
  readonly parameters?: Pick<ParameterService, "get">;
  readonly modes: AutomationModes;
  readonly bus: EventBus;
  readonly clock: Clock;
  readonly log: Logger;
  /** Reads a tree file (the composition root injects the host's file reading). */
  readonly readFile: ReadFileFn;
  /** Tick scheduling (default: global timers). */
  readonly scheduler?: TickScheduler;
}

/** Behavior-tree automation wired to the runtime kernel; satisfies the HTTP AutomationService. */
export class AutomationEngine {
  readonly #o: AutomationEngineOptions;
  readonly #log: Logger;
  readonly #services: BtServices;
  #runner: BtRunner | null = null;
  #openRunId: () => string | null = () => null;
  #unsubscribe: (() => void) | null = null;

  constructor(options: AutomationEngineOptions) {
    this.#o = options;
    this.#log = options.log.child("automation");
    this.#services = kernelServices(options);
  }

  /** The services the tree's custom nodes use (exposed for tests). */
  get services(): BtServices {
    return this.#services;
  }

  /** The runner once the tree is loaded; null before load() or with no tree configured. */
  get runner(): BtRunner | null {
    return this.#runner;
  }

  /**
   * Loads, verifies and builds the configured tree and computes its version. Throws
   * INVALID_ARGUMENT listing every diagnostic (`FILE:LINE:COL: error: ...`, one per line) when
   * the tree does not load; warnings are logged. Idempotent.
   */
  async load(): Promise<void> {
    if (this.#runner) return;
    const path = this.#o.behaviorTree;
    if (path === null) {
      this.#log.warn("automation enabled without a behavior tree: nothing will tick in AUTO");
      return;
    }
    const { tree, diagnostics } = loadBehaviorTree(path, this.#o.readFile);
    for (const d of diagnostics) {
      if (d.severity === "warning") this.#log.warn(formatDiagnostic(d));
    }
    if (!tree) throw treeLoadError(path, diagnostics);
    this.#runner = new BtRunner({
      parsed: tree,
      services: this.#services,
      events: this.#o.bus,
      tickRateHz: this.#o.tickRateHz,
      log: this.#log,
      onFault: (error) => this.#fault(error),
      ...(this.#o.scheduler ? { scheduler: this.#o.scheduler } : {}),
    });
    await this.#runner.ready;
    this.#log.info(
      `behavior tree ${path} loaded (main tree '${tree.mainTreeId}', ${tree.files.length} file(s))`,
    );
  }

  /**
   * Starts the tick engine (after load and after providers are up). Ticks happen only while the
   * mode is AUTO; every committed mode change is followed at once.
   */
  start(): void {
    const runner = this.#runner;
    if (!runner || this.#unsubscribe) return;
    this.#unsubscribe = this.#o.modes.onModeChange(({ current }) => {
      // Synchronous with the commit: a tree leaving AUTO is halted (its pending calls aborted)
      // before any after_transition hook runs.
      runner.setActive(current === "AUTO");
    });
    runner.start();
    runner.setActive(this.#o.modes.current() === "AUTO");
  }

  /** Halts the tree and stops ticking. Idempotent. */
  stop(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#runner?.stop();
  }

  /** Where status() finds the open run id (the run registry lives outside the kernel). */
  setOpenRunId(openRunId: () => string | null): void {
    this.#openRunId = openRunId;
  }

  /** automation_version of the loaded tree (run records), null without one. */
  automationVersion(): AutomationVersion | null {
    return this.#runner?.version ?? null;
  }

  /** GET /v0/automation/tree: the configured file, re-read from disk per request. */
  treeXml(): Promise<string> {
    const path = this.#o.behaviorTree;
    if (path === null) {
      return Promise.reject(notFound("No behavior tree configured (automation.behavior_tree)"));
    }
    try {
      const data = this.#o.readFile(path);
      return Promise.resolve(typeof data === "string" ? data : new TextDecoder().decode(data));
    } catch (err) {
      return Promise.reject(
        internal(
          `Cannot read behavior tree ${path}: ${err instanceof Error ? err.message : err}`,
          err,
        ),
      );
    }
  }

  /** GET /v0/automation/status (http-api.md §10, without `status`). */
  status(): AutomationStatus {
    const runId = this.#openRunId();
    if (this.#runner) return this.#runner.status(runId);
    return {
      execution_status: "idle",
      execution_reason: this.#o.behaviorTree === null ? "no_definition" : "stopped",
      automation_version: null,
      last_evaluation_at_epoch_ms: 0,
      engine_diagnostics: {
        total_ticks: 0,
        ticks_since_progress: 0,
        error_count: 0,
        stall_suspected: false,
        current_running_node: null,
        last_tick_status: null,
      },
      run_id: runId,
      last_error: null,
    };
  }

  #fault(error: string): void {
    // automation.md §5 (later anolis): a tick that throws forces FAULT, un-vetoably.
    void this.#o.modes.forceFault(`automation fault: ${error}`).catch((err) => {
      this.#log.error(`forcing FAULT after an automation fault failed: ${String(err)}`);
    });
  }
}

/** The load failure raised at start-up: every error diagnostic, one per line. */
function treeLoadError(path: string, diagnostics: readonly Diagnostic[]): RuntimeError {
  const errors = diagnostics.filter((d) => d.severity === "error");
  const lines = errors.map((d) => `  ${formatDiagnostic(d)}`).join("\n");
  return invalidArgument(
    `Failed to load behavior tree ${path}: ${errors.length} error(s)\n${lines}`,
    new RuntimeError("INVALID_ARGUMENT", "behavior tree diagnostics", {
      details: { diagnostics },
    }),
  );
}

/** BT quality names (automation.md §2): the runtime's UNAVAILABLE reads as UNKNOWN. */
function btQuality(q: Quality): BtQuality {
  return q === "UNAVAILABLE" ? "UNKNOWN" : q;
}

/** The BtServices adapter over the kernel: cache reads, router writes, parameters, clock. */
function kernelServices(o: AutomationEngineOptions): BtServices {
  return {
    clock: o.clock,
    readSignal(handle: string, signalId: string) {
      const dev = parseDeviceHandle(handle);
      if (!dev) return null;
      const s = o.cache.signal(dev.providerId, dev.deviceId, signalId);
      return s ? { value: s.value, quality: btQuality(s.quality) } : null;
    },
    async callDevice(
      handle: string,
      functionName: string,
      args: Record<string, TypedValue>,
      signal: AbortSignal,
    ): Promise<void> {
      const dev = parseDeviceHandle(handle);
      if (!dev) {
        throw invalidArgument(`device_handle must be 'provider/device', got '${handle}'`);
      }
      await o.router.call({
        providerId: dev.providerId,
        deviceId: dev.deviceId,
        functionName,
        args,
        origin: "automated",
        signal,
      });
    },
    getParameter(name: string) {
      const p = o.parameters?.get(name);
      return p ? { type: p.type, value: p.value } : null;
    },
  };
}
