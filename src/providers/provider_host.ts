import type {
  PayloadKind,
  PreparedRead,
  ReadReply,
  Reply,
  RequestPayloads,
  ResponsePayloads,
  SampleBatch,
} from "../adpp/mod.ts";
import {
  type Clock,
  type DeviceCapabilities,
  errorMessage,
  type HostCheckView,
  type LifecycleState,
  type Logger,
  namedList,
  namedProviderId,
  neverThrowing,
  type ProviderSupervisionView,
  quoteDeviceHandle,
  quoteProviderTextWithin,
  RuntimeError,
  type SpawnFn,
  tellEach,
  type TimerId,
  toRuntimeError,
  transitionDate,
  unavailable,
} from "../common/mod.ts";
import { differsOnlyInPlace, inPlaceFieldsChanged, type ProviderConfig } from "../config/mod.ts";
import type { EventBus } from "../events/mod.ts";
import { heldClaimDevices, MAX_UNLISTED_CLAIM_DEVICES } from "./claims.ts";
import { hostCheckOf, MAX_HOST_REQUIREMENT_CHARS } from "./host_check.ts";
import { ProviderSession } from "./provider_session.ts";
import type { SpawnQueue } from "./spawn_queue.ts";
import {
  INITIAL_SUPERVISOR_STATE,
  isAvailable,
  lifecycleOf,
  supervise,
  supervisionView,
  type SupervisorEvent,
  type SupervisorState,
} from "./supervisor.ts";

/**
 * Consecutive liveness probes (polls or heartbeats) that must time out before a provider is
 * declared unresponsive and restarted. One slow call never counts: only liveness probes do.
 */
export const LIVENESS_FAILURE_LIMIT = 2;
/**
 * Devices the `up:` line names (each as quoteDeviceHandle: `"provider/device"`, the device id cut
 * to QUOTED_DEVICE_ID_CHARS, as in every log line naming a device); the rest are counted.
 */
export const MAX_LOGGED_DEVICE_IDS = 20;

export interface ProviderHostDeps {
  readonly spawn: SpawnFn;
  readonly clock: Clock;
  readonly log: Logger;
  readonly bus: EventBus;
  /** Working directory of provider processes (the config file's folder). */
  readonly cwd: string;
  readonly shutdownTimeoutMs: number;
  /**
   * Where spawns wait for their turn (the registry's, shared by all its hosts); absent: a host
   * spawns in its own turn.
   */
  readonly spawnQueue?: SpawnQueue;
  /**
   * Asked, right before a discovered inventory is committed (start, restart, reload), whether it
   * may join the others: null, or why not (a resource claim another device holds). Refused: the
   * new process is ended and the start or restart attempt fails with that message.
   */
  readonly admit?: (providerId: string, devices: readonly DeviceCapabilities[]) => string | null;
}

/**
 * The budget of one bring-up: a restart attempt's (restart_policy.timeout_ms from its start, after
 * backoff) or a start's the caller bounds (StartBudget: a reload's, runtime.startup_timeout_ms).
 */
interface RestartBudget {
  readonly startedAt: number;
  readonly timeoutMs: number;
  /** The setting named when it runs out; absent: restart_policy.timeout_ms (anolis's phrase). */
  readonly setting?: string;
  /** Hears why the attempt failed, before its half-started process is ended. */
  readonly onFailure?: (err: unknown) => void;
}

/**
 * What a start may take in all, spawn turn, handshake and discovery together (ProviderHost.start):
 * `ms` from the call, `setting` the configuration key it comes from, named when it runs out.
 */
export interface StartBudget {
  readonly ms: number;
  readonly setting: string;
}

/** Supervision events of one provider since the runtime started. */
export interface ProviderHostCounts {
  /** Times the running provider was declared down: crash, unresponsive, protocol error. */
  failures: number;
  /** Restart attempts begun (after backoff). */
  restart_attempts: number;
}

/**
 * Listener for a provider's device inventory (after every successful discovery), told in the
 * order they subscribed, once the provider counts as up and before its availability listeners
 * are told. `changed` is
 * false when a rediscovery (a restart) found exactly the inventory the last one did: work that
 * depends on the inventory alone (an e-stop plan, bindings) need not be redone, and a restart
 * storm then costs no work per start that walks every provider.
 */
export type InventoryListener = (devices: readonly DeviceCapabilities[], changed: boolean) => void;
/** Listener for availability flips of a provider. */
export type AvailabilityListener = (available: boolean) => void;
/**
 * Listener for a change of lifecycle while the provider stays unavailable (its restarts used up:
 * RESTARTING -> CIRCUIT_OPEN; a reload's retry: CIRCUIT_OPEN -> RESTARTING), which no
 * availability flip tells.
 */
export type DownLifecycleListener = (lifecycle: LifecycleState) => void;

/**
 * One configured provider over its whole life: the current session, supervision (crash/hang ->
 * UNAVAILABLE -> backoff -> restart -> rediscovery, circuit breaker) and its device inventory.
 */
export class ProviderHost {
  #config: ProviderConfig;
  readonly #deps: ProviderHostDeps;
  /**
   * Its lines never throw: they are said in the middle of supervision (a session's end before the
   * supervisor hears of it, an attempt's outcome before its commit, a listener's failure between
   * two listeners). One that throws (a custom logger) is lost, never the step after it -- nor is
   * it thrown in a promise no one awaits.
   */
  readonly #log: Logger;
  #state: SupervisorState = INITIAL_SUPERVISOR_STATE;
  /** The date of the latest provider_health_change published (#emitAvailability); null before. */
  #lastFlipAt: number | null = null;
  #session: ProviderSession | null = null;
  /**
   * The session stop() is terminating: its provider may still carry out the calls it held until
   * its process exits (lateCallsWait).
   */
  #stoppingSession: ProviderSession | null = null;
  /** A session being brought up (initial start or restart attempt), not yet committed. */
  #starting: ProviderSession | null = null;
  #devices: readonly DeviceCapabilities[] = [];
  /**
   * The devices whose resource claims this provider holds (claimDevices): its inventory, then the
   * devices it listed before under this entry and no longer lists (heldClaimDevices).
   */
  #claimDevices: readonly DeviceCapabilities[] = [];
  /** The host check the last committed session reported at start-up (null: none reported). */
  #hostCheck: HostCheckView | null = null;
  /** Why start() failed (null: it did not, or was not called). */
  #startError: string | null = null;
  /**
   * Whether this host had been stopped when its bring-up failed (#bringUp, #reject: the moment
   * the failure is known, before its process is ended): null until a failure is noted.
   */
  #failedStopped: boolean | null = null;
  /** Whether the last retry() was ended by this host's stop (retryCutByStop). */
  #retryCutByStop = false;
  #livenessFailures = 0;
  #restartTimer: TimerId | undefined;
  /** The last restart attempt (settled once it is over; it never rejects). */
  #attempt: Promise<void> | null = null;
  /** The stop, once asked for (stop). */
  #stopping: Promise<void> | null = null;
  /** When the first stop's budget runs out (monotonic ms): a later, shorter one kills sooner. */
  #stopEndsAt = Infinity;
  /** The sessions the stop is ending (the running one, the one starting): a hurry kills them. */
  #ending: readonly ProviderSession[] = [];
  /** Whether the runtime's stop has begun (endRestarts): no restart is made from then on. */
  #restartsEnded = false;
  readonly #counts: ProviderHostCounts = { failures: 0, restart_attempts: 0 };
  readonly #inventoryListeners: InventoryListener[] = [];
  /**
   * Whether an inventory was committed yet (the first is a change). The last one is compared as
   * text when the next is committed, not kept as text: that text (12 KiB for the simulated
   * provider's four devices) would stay for the provider's life beside the objects it describes.
   */
  #discovered = false;
  readonly #availabilityListeners: AvailabilityListener[] = [];
  readonly #downLifecycleListeners: DownLifecycleListener[] = [];

  constructor(config: ProviderConfig, deps: ProviderHostDeps) {
    this.#config = config;
    this.#deps = deps;
    // The configured id, any length: every line of this provider is scoped by it, cut.
    this.#log = neverThrowing(deps.log.child(namedProviderId(config.id)));
  }

  get id(): string {
    return this.#config.id;
  }

  /** The entry in effect (a reload may replace it in place: updateInPlace). */
  get config(): ProviderConfig {
    return this.#config;
  }

  /**
   * Takes a reload's entry that differs from the one in effect only in IN_PLACE_PROVIDER_FIELDS
   * (restart_policy, hello/ready timeouts) without touching the process: the next supervision
   * decision and the next start use it. The failure streak counts on (attempt_count stays); a
   * restart pending in backoff keeps its due time, but is cancelled (circuit open) when the new
   * policy is disabled or its max_attempts is below the attempt due; an attempt already running
   * finishes and its outcome is judged by the new policy. Returns the fields that changed.
   * Throws TypeError (a programmer mistake) for another provider or another field.
   */
  updateInPlace(next: ProviderConfig): string[] {
    if (next.id !== this.id || !differsOnlyInPlace(this.#config, next)) {
      throw new TypeError(`provider ${this.id}: not an in-place change of its entry`);
    }
    const fields = inPlaceFieldsChanged(this.#config, next);
    if (fields.length === 0) return fields;
    this.#config = next;
    const p = next.restartPolicy;
    this.#log.info(
      `${fields.join(", ")} changed in place by a configuration reload (the process runs on): ` +
        `restart_policy ${
          p.enabled
            ? `enabled, max_attempts ${p.maxAttempts}, backoff_ms [${p.backoffMs.join(", ")}], ` +
              `timeout_ms ${p.timeoutMs}, success_reset_ms ${p.successResetMs}`
            : "disabled"
        }; hello_timeout_ms ${next.helloTimeoutMs}, ready_timeout_ms ${next.readyTimeoutMs}`,
    );
    this.#apply({ type: "policy" });
    // The pending restart the new policy cancelled (#apply left BACKOFF for CIRCUIT_OPEN).
    if (this.#state.phase !== "BACKOFF") this.#deps.clock.clearTimer(this.#restartTimer);
    return fields;
  }

  /** Up: a committed session exists exactly while the supervisor is UP (see #commit, #onSessionEnded). */
  get available(): boolean {
    return isAvailable(this.#state);
  }

  get state(): SupervisorState {
    return this.#state;
  }

  get devices(): readonly DeviceCapabilities[] {
    return this.#devices;
  }

  /**
   * Whether a session of this host listed its inventory (committed it), even none (its host
   * check unmet): its inventory is known then, also while it is down.
   */
  get listed(): boolean {
    return this.#discovered;
  }

  /**
   * The devices whose resource claims count for this provider (docs/http-api.md, "Resource
   * claims"): its inventory, then every device it listed since its entry was last changed and no
   * longer lists (its host unmet, one device failing its init), each once, with the keys of its
   * latest description no device before it here claims, at most MAX_UNLISTED_CLAIM_DEVICES of
   * them. Ownership follows the configuration: the holder's restart once the device is back must
   * not find its bus taken. A reload that changes the entry starts a new host, which holds none.
   */
  get claimDevices(): readonly DeviceCapabilities[] {
    return this.#claimDevices;
  }

  get lifecycle(): LifecycleState {
    return lifecycleOf(this.#state);
  }

  /** The current session (null while down); exposes GetHealth support and Hello data. */
  get session(): ProviderSession | null {
    return this.#session;
  }

  /** The last stderr lines of the process being started or running ([] without one). */
  get stderrTail(): readonly string[] {
    return (this.#session ?? this.#starting)?.stderrTail ?? [];
  }

  /**
   * What the provider reported of its host when it last came up (WaitReady `host_check` /
   * `host_unmet`); null when it reported nothing or never came up.
   */
  hostCheck(): HostCheckView | null {
    return this.#hostCheck;
  }

  /**
   * Why the initial bring-up (start) failed, e.g. a provider a reload added that did not come up;
   * null when it came up or has not been started.
   */
  get startError(): string | null {
    return this.#startError;
  }

  supervision(): ProviderSupervisionView {
    return supervisionView(this.#state, this.config.restartPolicy, this.#deps.clock.monoMs());
  }

  /** Supervision counts since start (GET /metrics), a copy. */
  counts(): ProviderHostCounts {
    return { ...this.#counts };
  }

  /** Seconds since the current process came up; 0 while unavailable. */
  uptimeSeconds(): number {
    if (!this.available) return 0;
    // Every transition into UP sets upSince.
    return Math.floor((this.#deps.clock.monoMs() - this.#state.upSince!) / 1000);
  }

  /**
   * The date of its latest provider_health_change (null before the first): a successor under its
   * id (a reload restarted the provider) is dated no earlier (follow).
   */
  get lastFlipAt(): number | null {
    return this.#lastFlipAt;
  }

  /**
   * Dates this host's availability flips no earlier than `at`, the last flip of its predecessor
   * under the same id (a reload that changed the provider's entry stopped that host): a step back
   * of the wall clock (NTP) must not date the provider's return before that stop.
   */
  follow(at: number): void {
    this.#lastFlipAt = Math.max(this.#lastFlipAt ?? at, at);
  }

  /** Milliseconds since the provider last answered anything; null while there is no session. */
  lastSeenAgoMs(): number | null {
    const s = this.#session;
    if (!s) return null;
    return Math.max(0, Math.round(this.#deps.clock.monoMs() - s.lastFrameAtMs));
  }

  /** A listener that threw: logged, and the others are told all the same (tellEach). */
  readonly #listenerFailed = (err: unknown): void => {
    this.#log.error(`listener failed: ${errorMessage(err)}`);
  };

  onInventory(listener: InventoryListener): void {
    this.#inventoryListeners.push(listener);
  }

  onAvailability(listener: AvailabilityListener): void {
    this.#availabilityListeners.push(listener);
  }

  /** Told each change of `lifecycle` while the provider stays unavailable (DownLifecycleListener). */
  onDownLifecycle(listener: DownLifecycleListener): void {
    this.#downLifecycleListeners.push(listener);
  }

  /**
   * Initial bring-up: spawn, handshake, discover. Throws when the provider cannot start, or when
   * it is not up within `budget` (a reload's start; start-up bounds all starts together instead).
   */
  async start(budget?: StartBudget): Promise<void> {
    this.#failedStopped = null;
    try {
      const up = await this.#bringUp(
        budget === undefined ? null : {
          startedAt: this.#deps.clock.monoMs(),
          timeoutMs: budget.ms,
          setting: budget.setting,
        },
      );
      const refused = this.#refusal(up.devices);
      if (refused) await this.#reject(up.session, refused, null);
      this.#commit(up);
    } catch (err) {
      this.#startError = errorMessage(err);
      // Not noted by #bringUp: thrown before a session was (its spawn refused once stopped).
      this.#failedStopped ??= this.#state.phase === "STOPPED";
      throw err;
    }
  }

  /**
   * Whether start() failed because this host was stopped under it (the runtime's stop: its Hello
   * "closed by the runtime", its discovery "runtime is stopping"), judged when the failure came --
   * not a start that failed on its own and was stopped while its process was being ended (a Hello
   * refused, then a stop within that process's exit): that one's own error stands.
   */
  get startCutByStop(): boolean {
    return this.#startError !== null && this.#failedStopped === true;
  }

  /**
   * Sends a request on the current session. Throws UNAVAILABLE while the provider is down.
   * `timeoutMs` defaults to the provider's `timeout_ms`.
   */
  request<K extends PayloadKind>(
    kind: K,
    payload: RequestPayloads[K],
    timeoutMs?: number,
  ): Promise<ResponsePayloads[K]> {
    const s = this.#session;
    if (!s || !this.available) {
      return Promise.reject(unavailable(`Provider unavailable: ${namedProviderId(this.id)}`));
    }
    return s.request(kind, payload, timeoutMs ?? this.config.timeoutMs);
  }

  /**
   * A wait for the calls sent to the provider so far (on its current session, or the one stop()
   * is terminating): the function resolves true once none of them that timed out unanswered is
   * still unanswered (the provider may carry it out late) and, when the session was closed while
   * the provider held one, once its process has exited; false when `signal` aborts first. Null
   * while the provider is down (its session ended on its own: its process exited or is killed).
   */
  lateCallsWait(): ((signal: AbortSignal) => Promise<boolean>) | null {
    return (this.#session ?? this.#stoppingSession)?.lateCallsWait() ?? null;
  }

  /**
   * `request` without a promise, for the poll path (the provider's `timeout_ms`): `reply` gets the
   * outcome once, never synchronously (see AdppClient.send).
   */
  send<K extends PayloadKind>(
    kind: K,
    payload: RequestPayloads[K],
    reply: Reply<K>,
  ): void {
    const s = this.#session;
    if (!s || !this.available) {
      const err = unavailable(`Provider unavailable: ${namedProviderId(this.id)}`);
      queueMicrotask(() => reply(err, undefined));
      return;
    }
    s.send(kind, payload, this.config.timeoutMs, reply);
  }

  /**
   * Poll reads sendRead takes now without refusing one for the session's bound on them
   * (AdppClient.readRoom); Infinity while the provider is down (each is refused for that).
   */
  get readRoom(): number {
    const s = this.#session;
    return s && this.available ? s.readRoom : Infinity;
  }

  /**
   * `send` of a ReadSignals whose answer is decoded into `into` (the poll path: no object per
   * sample; see AdppClient.sendRead).
   */
  sendRead(
    request: PreparedRead,
    into: SampleBatch,
    reply: ReadReply,
  ): void {
    const s = this.#session;
    if (!s || !this.available) {
      const err = unavailable(`Provider unavailable: ${namedProviderId(this.id)}`);
      queueMicrotask(() => reply(err, undefined));
      return;
    }
    s.sendRead(request, this.config.timeoutMs, into, reply);
  }

  /**
   * Records the outcome of a liveness probe (a poll or heartbeat). Timeouts in a row beyond
   * LIVENESS_FAILURE_LIMIT mark the provider unresponsive: its process is killed and supervision
   * takes over. Any answer (even an error status) proves liveness.
   */
  noteLiveness(answered: boolean): void {
    if (answered) {
      this.#livenessFailures = 0;
      // After a restart, the failure streak ends at the first answer once the provider has run
      // success_reset_ms: healthy running is proven by an answer, not by the time alone (a
      // provider that hangs soon after each start is found unresponsive only later, and its
      // failures must count in a row).
      if (this.#state.phase === "UP" && this.#state.attemptCount > 0) {
        this.#apply({ type: "tick", at: this.#deps.clock.monoMs() });
      }
      return;
    }
    if (++this.#livenessFailures >= LIVENESS_FAILURE_LIMIT && this.#session) {
      this.#log.error(
        `unresponsive: ${this.#livenessFailures} liveness checks in a row got no answer within ${this.config.timeoutMs} ms; killing it`,
      );
      this.#livenessFailures = 0;
      this.#session.kill();
    }
  }

  /**
   * Stops supervision and ends the provider process within `budgetMs`. A later call joins the
   * first (it resolves once the process has ended, not at once because the session is gone), its
   * budget bounding it too when that ends sooner (#hurryStop); a stopped host stays stopped
   * (start() refuses).
   */
  stop(budgetMs: number): Promise<void> {
    if (this.#stopping === null) {
      this.#stopEndsAt = this.#deps.clock.monoMs() + budgetMs;
      this.#stopping = this.#stop(budgetMs);
    } else {
      this.#hurryStop(budgetMs);
    }
    return this.#stopping;
  }

  /**
   * A later stop whose budget ends before the first one's (a hurried runtime stop joining a
   * failed start's or a reload's stop, begun with runtime.shutdown_timeout_ms): the processes
   * that stop is still ending are killed (SIGKILL) once `budgetMs` runs out, not when the first
   * budget does. A longer one changes nothing.
   */
  #hurryStop(budgetMs: number): void {
    const endsAt = this.#deps.clock.monoMs() + budgetMs;
    if (endsAt >= this.#stopEndsAt) return;
    this.#stopEndsAt = endsAt;
    const timer = this.#deps.clock.setTimer(() => {
      this.#killEnding(
        `not exited within a later stop's budget (${budgetMs} ms, shorter than the stop under ` +
          `way's)`,
      );
    }, Math.ceil(budgetMs));
    void this.#stopping!.finally(() => this.#deps.clock.clearTimer(timer));
  }

  /**
   * The runtime's stop was hurried (a second stop signal: Kernel.stop, StopDeadline.hurried)
   * while this host's stop is under way: the processes it is still ending are killed (SIGKILL)
   * now, not once its budget runs out -- the operator asked for the kill, and the process's own
   * kill at that signal may not have reached them (one spawned after it). Nothing before stop().
   */
  killStopping(): void {
    if (this.#stopping === null) return;
    this.#stopEndsAt = Math.min(this.#stopEndsAt, this.#deps.clock.monoMs());
    this.#killEnding("the runtime's stop was hurried by a second stop signal");
  }

  /** Kills (SIGKILL) the sessions the stop is still ending, saying `why` (one WARN), if any. */
  #killEnding(why: string): void {
    const alive = this.#ending.filter((s) => s.exitCode === null);
    if (alive.length === 0) return;
    this.#log.warn(`${why}: sending SIGKILL`);
    for (const s of alive) s.kill();
  }

  /**
   * The runtime's stop has begun (ProviderRegistry.endRestarts, before its HTTP drain and stop
   * actions, long before the providers' stop): no restart is made from now on. A restart pending
   * in backoff is cancelled; a provider that fails from now on (it crashed, or the second stop
   * signal killed it) stays down, STOPPED, as stop() leaves it; a restart attempt (or a reload's
   * retry) still waiting for its turn to spawn spawns nothing. One already spawned is ended by
   * stop(). The running provider is not touched: the stop actions still run on it.
   */
  endRestarts(): void {
    if (this.#restartsEnded) return;
    this.#restartsEnded = true;
    if (this.#state.phase === "BACKOFF") this.#stayDown();
  }

  /** Down for good, the runtime stopping: the restart pending is cancelled (STOPPED). */
  #stayDown(): void {
    this.#deps.clock.clearTimer(this.#restartTimer);
    this.#log.warn("not restarted: the runtime is stopping (the provider stays down)");
    this.#apply({ type: "stop" });
  }

  async #stop(budgetMs: number): Promise<void> {
    this.#apply({ type: "stop" });
    this.#deps.clock.clearTimer(this.#restartTimer);
    const attempt = this.#attempt;
    const session = this.#session;
    this.#session = null;
    this.#stoppingSession = session;
    // A session still handshaking would otherwise hold shutdown for its Hello/WaitReady deadline.
    const starting = this.#starting;
    this.#ending = [session, starting].filter((s) => s !== null);
    try {
      await Promise.all([session?.terminate(budgetMs), starting?.terminate(budgetMs)]);
    } finally {
      this.#stoppingSession = null;
    }
    await attempt;
    this.#ending = [];
  }

  // ---- internals ----

  /**
   * Spawns and brings a new session up to "discovered"; terminates it on failure. A restart
   * attempt passes its budget (restart_policy.timeout_ms from the attempt's start: a timer ends
   * the wait for its turn to spawn, the handshake or discovery it is still waiting for, and it is
   * checked again after each; a start whose budget ran out before its turn spawns nothing) and
   * hears of a failure before the half-started process is ended.
   */
  async #bringUp(budget: RestartBudget | null): Promise<
    { session: ProviderSession; devices: DeviceCapabilities[] }
  > {
    // Contains anolis's phrase, "Restart timeout exceeded for provider '<id>'": its tests and
    // launchers wait for it.
    const overrun = (when: string) => {
      const elapsed = Math.round(this.#deps.clock.monoMs() - budget!.startedAt);
      if (budget!.setting !== undefined) {
        return unavailable(
          `provider start not complete within ${budget!.setting} (${
            budget!.timeoutMs
          } ms) ${when} (${elapsed} ms)`,
        );
      }
      return unavailable(
        `Restart timeout exceeded for provider '${
          namedProviderId(this.id)
        }' ${when} (${elapsed} ms >= restart_policy.timeout_ms ${budget!.timeoutMs} ms)`,
      );
    };
    const checkBudget = (after: string) => {
      if (budget === null) return;
      if (this.#deps.clock.monoMs() - budget.startedAt < budget.timeoutMs) return;
      throw overrun(`after ${after}`);
    };
    // The budget's end, while its turn to spawn, a handshake or discovery is awaited: a provider
    // that hangs there, or answers each request just in time, is bounded by
    // restart_policy.timeout_ms (a reload's start: runtime.startup_timeout_ms), not only by its
    // hello/ready/request deadlines; a start queued behind a restart storm (MAX_QUEUED_SPAWNS
    // paced spawns) by it too, and one whose budget ran out there spawns nothing.
    let phase = "the wait for its turn to spawn";
    let budgetTimer: TimerId | undefined;
    const budgetEnd = budget === null ? null : new Promise<never>((_, reject) => {
      const left = budget.startedAt + budget.timeoutMs - this.#deps.clock.monoMs();
      budgetTimer = this.#deps.clock.setTimer(
        () => reject(overrun(`during ${phase}`)),
        Math.max(0, Math.ceil(left)),
      );
    });
    budgetEnd?.catch(() => {}); // heard through the race below; never an unhandled rejection
    const within = <T>(step: Promise<T>): Promise<T> =>
      budgetEnd === null ? step : Promise.race([step, budgetEnd]);
    const spawn = () => {
      // stop() came while this start waited for its turn: nothing is spawned.
      if (this.#state.phase === "STOPPED") throw unavailable("runtime is stopping");
      // Nor by a restart attempt once the runtime's stop has begun (endRestarts).
      if (this.#restartsEnded && this.#state.phase === "ATTEMPTING") {
        this.#stayDown();
        throw unavailable("runtime is stopping");
      }
      // Nor once its budget ran out in the queue (the wait already failed it).
      checkBudget("waiting for its turn to spawn");
      return new ProviderSession(this.config, this.config.command, {
        spawn: this.#deps.spawn,
        log: this.#log,
        clock: this.#deps.clock,
        cwd: this.#deps.cwd,
      });
    };
    const queue = this.#deps.spawnQueue;
    let session: ProviderSession;
    try {
      session = queue ? await within(queue.run(spawn)) : spawn();
    } catch (err) {
      this.#deps.clock.clearTimer(budgetTimer);
      throw err;
    }
    this.#starting = session;
    phase = "handshake";
    try {
      // A process that dies during bring-up fails the pending request through the session end.
      await within(session.handshake());
      checkBudget("handshake");
      phase = "discovery";
      const devices = await within(session.discover());
      checkBudget("discovery");
      if (this.#state.phase === "STOPPED") throw unavailable("runtime is stopping");
      return { session, devices };
    } catch (err) {
      this.#starting = null;
      // Stopped under it: its session ended by the stop when it failed (a failure of its own
      // found before the stop, its stderr still awaited when the stop came, is not the stop's).
      this.#failedStopped ??= this.#state.phase === "STOPPED" &&
        session.failedTerminating !== false;
      const exitCode = session.exitCode; // known only if the process died on its own
      const cause = toRuntimeError(err);
      const failure = exitCode === null ? err : new RuntimeError(
        cause.code,
        `${cause.message} (process exit code ${exitCode})`,
        { cause: err },
      );
      budget?.onFailure?.(failure); // said now: ending the process may take up to 2 s
      await session.terminate(Math.min(this.#deps.shutdownTimeoutMs, 2000));
      throw failure;
    } finally {
      this.#deps.clock.clearTimer(budgetTimer);
    }
  }

  /**
   * The admission check of a discovered inventory (deps.admit), synchronous so that nothing runs
   * between it and the commit that follows: null when admitted, else the refusal.
   */
  #refusal(devices: readonly DeviceCapabilities[]): RuntimeError | null {
    const why = this.#deps.admit?.(this.id, devices) ?? null;
    return why === null ? null : new RuntimeError("FAILED_PRECONDITION", why);
  }

  /** Ends a refused session (said first through `onFailure`), then throws the refusal. */
  async #reject(
    session: ProviderSession,
    err: RuntimeError,
    onFailure: ((err: unknown) => void) | null,
  ): Promise<never> {
    this.#starting = null;
    this.#failedStopped ??= this.#state.phase === "STOPPED";
    onFailure?.(err);
    await session.terminate(Math.min(this.#deps.shutdownTimeoutMs, 2000));
    throw err;
  }

  #commit(up: { session: ProviderSession; devices: DeviceCapabilities[] }): void {
    const { session, devices } = up;
    this.#starting = null;
    this.#session = session;
    const changed = !this.#discovered ||
      inventorySignature(devices) !== inventorySignature(this.#devices);
    this.#discovered = true;
    this.#devices = devices;
    const held = heldClaimDevices(devices, this.#claimDevices);
    this.#claimDevices = held.devices;
    if (held.released > 0) {
      this.#log.warn(
        `claims of ${held.released} device(s) no longer listed released: more than ` +
          `${MAX_UNLISTED_CLAIM_DEVICES} such devices`,
      );
    }
    this.#hostCheck = hostCheckOf(session.readiness);
    this.#livenessFailures = 0;
    if (devices.length === 0) {
      // The provider's ids, quoted (each cut where it is read; MAX_HOST_REQUIREMENTS of them).
      const ids = (this.#hostCheck?.unmet ?? [])
        .map((r) => quoteProviderTextWithin(r.id, MAX_HOST_REQUIREMENT_CHARS));
      this.#log.warn(
        `up, not ready: no devices; host requirements unmet: ${ids.join(", ") || "(none named)"}`,
      );
    } else {
      const named = devices.map((d) => quoteDeviceHandle(this.id, d.device.deviceId));
      this.#log.info(`up: ${devices.length} device(s): ${namedList(named, MAX_LOGGED_DEVICE_IDS)}`);
    }
    // Listeners are told once the provider counts as up (one reading it sees it up), and before
    // its availability is said (the availability listeners find the new inventory in place).
    this.#apply(
      { type: "up", at: this.#deps.clock.monoMs() },
      () => tellEach(this.#inventoryListeners, [devices, changed], this.#listenerFailed),
    );
    session.ended.then((why) => this.#onSessionEnded(session, why));
  }

  #onSessionEnded(session: ProviderSession, why: string): void {
    // Not the current session: stop() let go of it first and is ending its process gracefully.
    if (session !== this.#session) return;
    this.#session = null;
    this.#log.error(`provider down: ${why}`);
    session.kill(); // make sure a broken-but-alive process does not linger
    this.#apply({ type: "failed", at: this.#deps.clock.monoMs() });
  }

  /** Moves the supervisor on; `entered` runs in the new state, before availability is said. */
  #apply(event: SupervisorEvent, entered?: () => void): void {
    const before = this.#state;
    const after = supervise(before, event, this.config.restartPolicy);
    if (after === before) {
      entered?.();
      return;
    }
    this.#state = after;
    if (event.type === "failed") this.#counts.failures++;
    else if (event.type === "attempt" || event.type === "retry") this.#counts.restart_attempts++;
    this.#log.debug(
      `supervision ${before.phase}(${before.attemptCount}) -${event.type}-> ${after.phase}(${after.attemptCount})`,
    );
    entered?.();
    if (isAvailable(before) !== isAvailable(after)) this.#emitAvailability(isAvailable(after));
    else if (!isAvailable(after) && lifecycleOf(before) !== lifecycleOf(after)) {
      tellEach(this.#downLifecycleListeners, [lifecycleOf(after)], this.#listenerFailed);
    }
    // The state changed, so a phase was entered: BACKOFF and CIRCUIT_OPEN change only by leaving.
    // Once the runtime's stop has begun no restart is scheduled (endRestarts): it stays down.
    if (after.phase === "BACKOFF") {
      if (this.#restartsEnded) this.#stayDown();
      else this.#scheduleRestart(after);
    }
    if (after.phase === "CIRCUIT_OPEN") {
      this.#log.error(
        this.config.restartPolicy.enabled
          ? `circuit open after ${after.attemptCount - 1} failed restart(s); not restarting again`
          : "restart_policy disabled: provider stays down (circuit open)",
      );
    }
  }

  /**
   * Publishes an availability flip dated no earlier than the flip before it (#lastFlipAt): a step
   * back of the wall clock (NTP) must not date a return before the loss it ends, as AlarmEngine
   * dates an interlock's engage and release.
   */
  #emitAvailability(available: boolean): void {
    const wall = this.#deps.clock.nowMs();
    const at = transitionDate(wall, this.#lastFlipAt);
    this.#lastFlipAt = at;
    this.#deps.bus.publish({
      kind: "provider_health_change",
      provider_id: this.id,
      state: available ? "AVAILABLE" : "UNAVAILABLE",
      timestamp_ms: at,
    });
    tellEach(this.#availabilityListeners, [available], this.#listenerFailed);
  }

  /**
   * Arms the restart timer for a state in BACKOFF (on entering it, or `again` when the timer
   * fired before restartDueAt on the monotonic clock); no other restart timer is pending then.
   */
  #scheduleRestart(state: SupervisorState, again = false): void {
    const delay = Math.max(0, state.restartDueAt! - this.#deps.clock.monoMs());
    if (!again) {
      this.#log.warn(
        `restart attempt ${state.attemptCount}/${this.config.restartPolicy.maxAttempts} in ${
          Math.round(delay)
        } ms`,
      );
    }
    this.#restartTimer = this.#deps.clock.setTimer(
      () => (this.#attempt = this.#runAttempt()),
      Math.ceil(delay),
    );
  }

  /**
   * Tries a provider whose circuit is open again (a configuration reload: the operator asking
   * for it): one restart attempt with the failure streak reset, made as a supervisor restart is
   * (restart_policy.timeout_ms, the admission check of its inventory). Its devices and their
   * claims stay as they were until it is up. A failure is the first of a new streak, judged by
   * restart_policy (backoff and further attempts, or the circuit open again). Resolves with null
   * once it is up, else why not; never rejects. Does nothing (resolves with why) unless the
   * circuit is open.
   */
  async retry(): Promise<string | null> {
    if (this.#state.phase !== "CIRCUIT_OPEN") return `not retried: ${this.lifecycle}`;
    this.#log.info("circuit open: a configuration reload tries it again (failure streak reset)");
    const startedAt = this.#deps.clock.monoMs();
    this.#apply({ type: "retry" });
    let failure: string | null = null;
    this.#attempt = this.#attemptBringUp(startedAt, (err) => failure ??= errorMessage(err));
    await this.#attempt;
    if (this.available) return null;
    // Stopped under it (the runtime's stop) with no failure of its own said while it was
    // attempting (#attemptBringUp says none once stopped): the stop's doing.
    // The state as it is now (the check above was before the attempt's await).
    const { phase } = this.#state as SupervisorState;
    this.#retryCutByStop = failure === null && phase === "STOPPED";
    return failure ?? `not up: ${this.lifecycle}`;
  }

  /**
   * Whether the last retry() did not come up because this host was stopped under it (the
   * runtime's stop ended its attempt), not for a failure of its own.
   */
  get retryCutByStop(): boolean {
    return this.#retryCutByStop;
  }

  /** The attempt running, for its log lines: a reload's retry is attempt 0 (the streak reset). */
  #attemptName(): string {
    const n = this.#state.attemptCount;
    return n === 0 ? "retry (circuit was open)" : `restart attempt ${n}`;
  }

  async #runAttempt(): Promise<void> {
    const startedAt = this.#deps.clock.monoMs();
    // The restart timer runs only in BACKOFF (stop() clears it, nothing else leaves BACKOFF):
    // the attempt begins (ATTEMPTING) unless the timer fired early.
    this.#apply({ type: "attempt", at: startedAt });
    if (this.#state.phase === "BACKOFF") {
      // Timers may fire a fraction of a millisecond early against the monotonic clock: re-arm.
      this.#scheduleRestart(this.#state, true);
      return;
    }
    await this.#attemptBringUp(startedAt);
  }

  /**
   * The restart attempt begun at `startedAt` (ATTEMPTING): up and committed, or failed (said
   * once, also to `failed`). Never rejects.
   */
  async #attemptBringUp(startedAt: number, failed?: (err: unknown) => void): Promise<void> {
    let reported = false;
    const report = (err: unknown) => {
      if (reported || this.#state.phase !== "ATTEMPTING") return;
      reported = true;
      failed?.(err);
      this.#log.error(`${this.#attemptName()} failed: ${errorMessage(err)}`);
    };
    try {
      // Only stop() ends ATTEMPTING meanwhile, and then #bringUp fails ("runtime is stopping").
      const up = await this.#bringUp({
        startedAt,
        timeoutMs: this.config.restartPolicy.timeoutMs,
        onFailure: report,
      });
      const refused = this.#refusal(up.devices);
      if (refused) await this.#reject(up.session, refused, report);
      this.#log.info(`${this.#attemptName()} succeeded`);
      this.#commit(up);
    } catch (err) {
      // After stop() (no longer ATTEMPTING) neither is said nor changes anything.
      report(err);
      this.#apply({ type: "attempt_failed", at: this.#deps.clock.monoMs() });
    }
  }
}

/** An inventory as text, to tell a rediscovery that changed nothing (non-finite numbers kept). */
function inventorySignature(devices: readonly DeviceCapabilities[]): string {
  return JSON.stringify(
    devices,
    (_k, v) => typeof v === "number" && !Number.isFinite(v) ? String(v) : v,
  );
}
