/**
 * BtRunner: owns one built tree and ticks it at tick_rate_hz only while active (AUTO). Leaving
 * AUTO (setActive(false)) halts the tree, cancelling asynchronous actions. Reports FAILURE and
 * exceptions as `bt_error` / `automation_fault` events and keeps the status of
 * GET /v0/automation/status (docs/automation.md, "Errors, status and events").
 */
import { type Clock, errorMessage, type Logger } from "../../common/mod.ts";
import { type GridInterval, gridInterval, RuntimeError } from "../../common/mod.ts";
import type { EventBus } from "../../events/mod.ts";
import { buildTree, type BuiltTree } from "./build.ts";
import { type ParsedTree, readBoth } from "./parse.ts";
import type { BtServices, ReadFileFn } from "./services.ts";
import { BtTickError, type NodeStatus } from "./tree_node.ts";

/** Identity of the loaded tree (`automation_version` of GET /v0/automation/status). */
export interface AutomationVersion {
  engine_kind: "behavior_tree";
  id: string;
  digest: string;
  /** `top_level_file` for a tree in one file; `include_closure` for one that includes others. */
  digest_scope: "top_level_file" | "include_closure";
}

/** Neutral automation status (GET /v0/automation/status); the runtime fills run_id. */
export interface AutomationStatus {
  execution_status: "idle" | "running" | "blocked" | "failed" | "completed" | "unknown";
  execution_reason?:
    | "mode_gate"
    | "waiting"
    | "terminal_failure"
    | "engine_fault"
    | "no_definition"
    | "stopped";
  automation_version: AutomationVersion | null;
  last_evaluation_at_epoch_ms: number;
  engine_diagnostics: {
    total_ticks: number;
    ticks_since_progress: number;
    error_count: number;
    stall_suspected: boolean;
    current_running_node: string | null;
    last_tick_status: NodeStatus | "THROWN" | null;
  };
  run_id: string | null;
  last_error: string | null;
}

/** Periodic scheduling (defaults to a drift-free grid of real timers; tests pass a manual one). */
export interface TickScheduler {
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

/** Consecutive FAILURE ticks after which the engine reports blocked/STALLED (anolis: > 10). */
export const STALL_FAILURE_TICKS = 10;

/** Construction options of BtRunner. */
export interface BtRunnerOptions {
  /** A tree that loaded without errors (loadBehaviorTree). */
  readonly parsed: ParsedTree;
  readonly services: BtServices;
  readonly events: EventBus;
  /** automation.tick_rate_hz (1..1000): period = floor(1000 / rate) ms. */
  readonly tickRateHz: number;
  readonly log?: Logger | undefined;
  /** Called after a tick threw (the runtime forces FAULT). */
  readonly onFault?: (error: string) => void;
  readonly scheduler?: TickScheduler;
  /** Precomputed version; otherwise computed asynchronously (await `ready`). */
  readonly version?: AutomationVersion;
}

/**
 * The file basename and a digest: of a tree in one file, the SHA-256 hex of its bytes
 * (`top_level_file`); of a tree that includes other files, computeTreeContentDigest over all of
 * them (`include_closure`), so that an edited included subtree is another version (a run records
 * which tree it ran, and a reload's automation_change event tells the two apart).
 */
export async function computeAutomationVersion(parsed: ParsedTree): Promise<AutomationVersion> {
  if (parsed.files.length > 1) {
    const digest = await computeTreeContentDigest(parsed);
    return { engine_kind: "behavior_tree", id: parsed.id, digest, digest_scope: "include_closure" };
  }
  const digest = await sha256Hex(new Uint8Array(parsed.bytes));
  return { engine_kind: "behavior_tree", id: parsed.id, digest, digest_scope: "top_level_file" };
}

/**
 * SHA-256 hex over every file of the tree, its includes too (names and texts, top-level first):
 * what a configuration reload compares to decide whether the tree changed, and the version digest
 * of a tree that includes other files (computeAutomationVersion).
 */
export async function computeTreeContentDigest(parsed: ParsedTree): Promise<string> {
  return await filesContentDigest(parsed.files, parsed.texts);
}

/** computeTreeContentDigest of the files `files` whose texts are `texts` (same order). */
async function filesContentDigest(
  files: readonly string[],
  texts: readonly string[],
): Promise<string> {
  const text = JSON.stringify(files.map((file, i) => [file, texts[i]]));
  return await sha256Hex(new TextEncoder().encode(text));
}

/**
 * computeTreeContentDigest of the files `files` (a loaded tree's, includes too) as `readFile` reads
 * them now, without parsing them; null when one cannot be read. Equal to the digest of the tree
 * loaded from them when every text is the same: the includes are named by those texts, so the
 * same texts read the same files.
 */
export async function rereadContentDigest(
  files: readonly string[],
  readFile: ReadFileFn,
): Promise<string | null> {
  let texts: string[];
  try {
    texts = files.map((file) => readBoth(readFile, file).text);
  } catch {
    return null;
  }
  return await filesContentDigest(files, texts);
}

async function sha256Hex(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", bytes);
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/**
 * Ticks on a grid of the process's monotonic clock (common/grid.ts): `setInterval` stretches each
 * period by its callback's lateness and ticked 48.3-48.6 times a second at 50 Hz (bench workload
 * 8); the grid keeps the configured rate, and a tick that ran long skips the missed instants.
 */
function gridScheduler(clock: Clock): TickScheduler {
  return {
    setInterval: (fn, ms) => gridInterval(fn, ms, clock),
    clearInterval: (h) => (h as GridInterval).stop(),
  };
}

function checkTickRate(rate: number): void {
  if (!Number.isInteger(rate) || rate < 1 || rate > 1000) {
    throw new RangeError(`tickRateHz must be an integer 1..1000, got ${rate}`);
  }
}

/** Ticks a behavior tree while the runtime is in AUTO. */
export class BtRunner {
  readonly #tree: BuiltTree;
  readonly #opts: BtRunnerOptions;
  readonly #scheduler: TickScheduler;
  #periodMs: number;
  /** Resolves once the automation version (digest) is known. */
  readonly ready: Promise<void>;
  #version: AutomationVersion | null = null;
  #started = false;
  #active = false;
  #timer: unknown = undefined;
  #ticking = false;
  #totalTicks = 0;
  #ticksSinceProgress = 0;
  /** Consecutive RUNNING ticks (see tickOnce: what counts as progress). */
  #runningStreak = 0;
  #errorCount = 0;
  #lastError: string | null = null;
  #lastThrew = false;
  #failureReported = false;
  #lastEvalMs = 0;
  #lastStatus: NodeStatus | "THROWN" | null = null;

  constructor(options: BtRunnerOptions) {
    const rate = options.tickRateHz;
    checkTickRate(rate);
    const built = buildTree(options.parsed, {
      clock: options.services.clock,
      services: options.services,
      log: options.log,
    });
    if (!built.tree) {
      const first = built.diagnostics.find((d) => d.severity === "error");
      throw new RuntimeError(
        "INVALID_ARGUMENT",
        `Failed to load behavior tree: ${first?.message ?? "build failed"}`,
        { details: { diagnostics: built.diagnostics } },
      );
    }
    this.#tree = built.tree;
    this.#opts = options;
    this.#scheduler = options.scheduler ?? gridScheduler(options.services.clock);
    this.#periodMs = Math.max(1, Math.floor(1000 / rate));
    if (options.version) {
      this.#version = options.version;
      this.ready = Promise.resolve();
    } else {
      this.ready = computeAutomationVersion(options.parsed).then((v) => {
        this.#version = v;
      });
    }
  }

  /** The built tree (for inspection and tests). */
  get tree(): BuiltTree {
    return this.#tree;
  }

  /** Tick period in milliseconds. */
  get periodMs(): number {
    return this.#periodMs;
  }

  get active(): boolean {
    return this.#active;
  }

  /** automation_version, null until the digest is computed. */
  get version(): AutomationVersion | null {
    return this.#version;
  }

  /** Starts the engine; ticks happen only while active. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#syncTimer();
  }

  /** Stops the engine: halts the tree and clears the timer. */
  stop(): void {
    if (!this.#started) return;
    this.#started = false;
    this.#syncTimer();
    this.#halt();
  }

  /**
   * AUTO on/off. Turning it off halts the tree (cancels running calls); node state is kept.
   * Turning it on (a re-arm) starts the failure streak over: the tree starts from its root, so
   * its first FAILURE is a new bt_error and it is not stalled before it has ticked.
   */
  setActive(active: boolean): void {
    if (this.#active === active) return;
    this.#active = active;
    if (active) {
      this.rearm();
      this.#ticksSinceProgress = 0;
      this.#runningStreak = 0;
      this.#failureReported = false;
    }
    this.#syncTimer();
    if (!active) this.#halt();
  }

  /**
   * Ticks at `tickRateHz` from now on (a reload retiming the same tree): the tree, its blackboard
   * and node state are kept, as leaving and re-entering AUTO keeps them.
   */
  retime(tickRateHz: number): void {
    checkTickRate(tickRateHz);
    this.#periodMs = Math.max(1, Math.floor(1000 / tickRateHz));
    if (this.#timer !== undefined) {
      this.#scheduler.clearInterval(this.#timer);
      this.#timer = undefined;
      this.#syncTimer();
    }
  }

  /**
   * A re-arm (the FAULT a throwing tick forced was left, or AUTO entered again): status stops
   * saying `failed`/`terminal_failure` at once, not at the next tick. The throw stays counted
   * (`error_count`) and its error stays `last_error`.
   */
  rearm(): void {
    this.#lastThrew = false;
  }

  #syncTimer(): void {
    const want = this.#started && this.#active;
    if (want && this.#timer === undefined) {
      this.#timer = this.#scheduler.setInterval(() => this.tickOnce(), this.#periodMs);
    } else if (!want && this.#timer !== undefined) {
      this.#scheduler.clearInterval(this.#timer);
      this.#timer = undefined;
    }
  }

  #halt(): void {
    try {
      this.#tree.haltTree();
    } catch (err) {
      // An _onHalted script failed: the tree is halted anyway; report, do not rethrow.
      const message = errorMessage(err);
      this.#opts.log?.warn(`behavior tree halt: ${message}`);
    }
  }

  /**
   * One tick now (what the timer calls). Returns the root status, or null when the engine is
   * stopped, inactive, or already inside a tick.
   */
  tickOnce(): NodeStatus | null {
    if (!this.#started || !this.#active || this.#ticking) return null;
    this.#ticking = true;
    const clock = this.#opts.services.clock;
    this.#totalTicks++;
    this.#lastEvalMs = clock.nowMs();
    let status: NodeStatus;
    try {
      status = this.#tree.tickRoot();
    } catch (err) {
      this.#ticking = false;
      this.#onThrow(err);
      return null;
    }
    this.#ticking = false;
    this.#lastStatus = status;
    this.#lastThrew = false;
    if (status === "SUCCESS") this.#runningStreak = 0;
    if (status === "SKIPPED") {
      // The root was SKIPPED (its preconditions, or every child skipped): the tree did nothing,
      // which is neither progress nor a failure. Counting it as progress would clear the stall
      // (and re-arm bt_error) of a job that is skipped between attempts and fails at each one.
      this.#runningStreak = 0;
    } else if (status === "FAILURE") {
      this.#ticksSinceProgress++;
      if (!this.#failureReported) {
        this.#failureReported = true;
        const node = this.#tree.env.lastFailedLeaf;
        this.#opts.log?.warn(`behavior tree returned FAILURE${node ? ` at ${node}` : ""}`);
        this.#opts.events.publish({
          kind: "bt_error",
          node,
          error: "BT returned FAILURE",
          timestamp_ms: clock.nowMs(),
        });
      }
      this.#runningStreak = 0;
    } else if (status === "SUCCESS" || ++this.#runningStreak >= 2) {
      // Progress is SUCCESS, or RUNNING on consecutive ticks. A single RUNNING tick between
      // failures is an asynchronous action restarting (e.g. a CallDevice that keeps failing
      // alternates RUNNING/FAILURE): counting it as progress would hide the stall and repeat
      // bt_error every other tick.
      this.#ticksSinceProgress = 0;
      this.#failureReported = false;
    }
    return status;
  }

  #onThrow(err: unknown): void {
    const node = err instanceof BtTickError ? err.nodePath : "";
    const message = errorMessage(err);
    const error = node ? `${message} (at ${node})` : message;
    this.#lastStatus = "THROWN";
    this.#lastThrew = true;
    this.#errorCount++;
    this.#lastError = error;
    this.#opts.log?.error(`behavior tree tick failed: ${error}`);
    // The tree is in an undefined state: halt it so pending device calls are cancelled.
    this.#halt();
    const ts = this.#opts.services.clock.nowMs();
    this.#opts.events.publish({ kind: "bt_error", node, error: message, timestamp_ms: ts });
    this.#opts.events.publish({
      kind: "automation_fault",
      locus: "tick",
      error: message,
      timestamp_ms: ts,
    });
    this.#opts.onFault?.(error);
  }

  /** GET /v0/automation/status (run_id is filled by the runtime). */
  status(runId: string | null = null): AutomationStatus {
    const stalled = this.#ticksSinceProgress > STALL_FAILURE_TICKS;
    let execution_status: AutomationStatus["execution_status"];
    let execution_reason: AutomationStatus["execution_reason"];
    if (!this.#started) {
      execution_status = "idle";
      execution_reason = "stopped";
    } else {
      if (this.#lastThrew && this.#errorCount > 0) {
        execution_status = "failed";
        execution_reason = "terminal_failure";
      } else if (stalled) {
        execution_status = "blocked";
        execution_reason = "waiting";
      } else {
        execution_status = "running";
      }
      if (!this.#active) execution_reason = "mode_gate";
    }
    const out: AutomationStatus = {
      execution_status,
      automation_version: this.#version,
      last_evaluation_at_epoch_ms: this.#lastEvalMs,
      engine_diagnostics: {
        total_ticks: this.#totalTicks,
        ticks_since_progress: this.#ticksSinceProgress,
        error_count: this.#errorCount,
        stall_suspected: stalled,
        current_running_node: this.#tree.runningPath(),
        last_tick_status: this.#lastStatus,
      },
      run_id: runId,
      last_error: this.#lastError,
    };
    if (execution_reason !== undefined) out.execution_reason = execution_reason;
    return out;
  }
}
