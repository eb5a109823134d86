/**
 * Alarms and interlocks (docs/alarms.md): evaluated right after every poll of a device they read
 * (StateCache.onDevicePolled), in every mode, with or without automation; again when a provider's
 * inventory changes; interlocks also right before every call they could refuse; and -- whether
 * or not anything polls -- on time when something falls due without a poll: a pending raise's
 * delay ends, or a usable sample goes stale (one timer on the clock, at the earliest such
 * instant). A provider that is down or hung is not polled; its inputs still go bad, and a
 * delayed alarm on them still raises, `delay_ms` after they became unusable.
 *
 * - Each alarm transition (raise, clear, ack, shelve, unshelve) is published as an `alarm` event
 *   (SSE, telemetry `runtime_alarm`, run events) and logged; a raise of an alarm with action
 *   `fault` forces FAULT through the mode manager (hooks included), one with action `estop`
 *   triggers the e-stop exactly as POST /v0/estop does, with the cause `alarm:<id>`. The action
 *   is called synchronously, so the latch engages (or FAULT is committed) inside the poll that
 *   saw the raise; nothing the engine does after it can hold it back.
 * - Each interlock registers nothing itself: the composition root adds {@link AlarmEngine.gate}
 *   to the call router, which runs it for every call except the stop actions (origin `safety`:
 *   the e-stop ladder and the hooks into FAULT are never blocked). Engage and release are
 *   `interlock` events and run events.
 *
 * These are protective functions at polling latency, not safety functions: see docs/alarms.md.
 */
import {
  type Clock,
  DepartedDates,
  deviceHandle,
  errorMessage,
  latestDate,
  type Logger,
  neverThrowing,
  notFound,
  type Quality,
  RuntimeError,
  type TimerId,
  transitionDate,
  type TypedValue,
  type ValueType,
  WALL_STEP_MS,
} from "../common/mod.ts";
import {
  type AlarmAction,
  type AlarmConfig,
  type AlarmLevel,
  type AlarmLimits,
  type BadQualityPolicy,
  type InterlockConfig,
  MAX_ALARMS,
  MAX_INTERLOCKS,
} from "../config/mod.ts";
import type { AuditOrigin, AuditSink, GateContext } from "../control/mod.ts";
import type { AlarmCause, AlarmState, EventBus } from "../events/mod.ts";
import type { DeviceOutages, DeviceState, InventoryReader, StateCache } from "../state/mod.ts";
import {
  alarmAccepts,
  alarmAcceptsType,
  AlarmMonitor,
  type AlarmTransitionRecord,
} from "./alarm_monitor.ts";
import { Interlock } from "./interlock.ts";
import {
  type InputContext,
  InputProblem,
  type SignalBinding,
  SignalInput,
  valueText,
} from "./signal_input.ts";

/** What an alarm's action does; the composition root wires these to the mode manager and e-stop. */
export interface AlarmActions {
  /** Forces mode FAULT through the normal transition (hooks included); `alarmId` raised it. */
  fault(reason: string, alarmId: string): Promise<unknown>;
  /** Triggers the e-stop (latch, FAULT, ladder) with this cause, as POST /v0/estop does. */
  estop(reason: string, cause: string): Promise<unknown>;
  /**
   * A reload took alarm `alarmId` out (`removed`), or the alarm under that id now is not the one
   * it was before the reload (`changed`: another definition in its place, or an alarm of that id
   * added back after a removal), whatever its state: an e-stop it latched names it as its cause.
   * Must not throw.
   */
  retired?(alarmId: string, how: "removed" | "changed"): void;
}

export interface AlarmEngineOptions {
  readonly alarms: readonly AlarmConfig[];
  readonly interlocks: readonly InterlockConfig[];
  readonly cache: StateCache;
  /** Providers and their devices, read-only (what a signal or a block entry names). */
  readonly inventory: InventoryReader;
  /**
   * Whether each device is failing or down (state/device_outage.ts): an input of such a device
   * is a bad input, with the device's reason. Absent: only each signal's own sample is judged.
   */
  readonly outages?: Pick<DeviceOutages, "condition">;
  readonly bus: EventBus;
  /** The time (monotonic for every age and delay) and the timers (shelve expiry, wake-ups). */
  readonly clock: Clock;
  readonly log: Logger;
  readonly actions: AlarmActions;
  /** Where an operator's ack, shelve and unshelve are recorded (who, which alarm, outcome). */
  readonly audit?: AuditSink;
}

/** One alarm in GET /v0/alarms. */
export interface AlarmView {
  id: string;
  signal: string;
  message: string;
  action: AlarmAction;
  state: AlarmState;
  /** Level of the raised condition (also while shelved); null when it does not hold. */
  level: AlarmLevel | null;
  /** What raised it: the limit crossed, alarm_when or bad_quality; null when it does not hold. */
  cause: AlarmCause | null;
  /** The limit crossed (or the alarm_when value); null for bad_quality or when not raised. */
  limit: number | boolean | string | null;
  /** The signal's cached value now (typed, as in the state API); null when there is none. */
  value: TypedValue | null;
  quality: Quality | null;
  /** Why the input is not usable now (stale, unavailable, unknown signal, wrong type); else null. */
  bad_input: string | null;
  /** When the current state was entered; null while normal since start. */
  since_epoch_ms: number | null;
  shelved_until_epoch_ms: number | null;
  /** The configured limits that apply (only those given). */
  limits: AlarmLimits;
  alarm_when: boolean | string | null;
  hysteresis: number;
  delay_ms: number;
  on_bad_quality: BadQualityPolicy;
  /** The last MAX_ALARM_TRANSITIONS transitions, oldest first. */
  transitions: AlarmTransitionRecord[];
}

/** One signal an interlock reads, as GET /v0/interlocks shows it. */
export interface InterlockInputView {
  signal: string;
  value: TypedValue | null;
  quality: Quality | null;
  /** Why it is not usable now; null when it is. */
  bad_input: string | null;
}

/** One interlock in GET /v0/interlocks. */
export interface InterlockView {
  id: string;
  message: string;
  /** The condition as configured (`while`). */
  condition: string;
  block: string[];
  blocking: boolean;
  /** What it sees while blocking: the bad input, a type mismatch or its values; null otherwise. */
  reason: string | null;
  /** When it last engaged or released; null before the first evaluation. */
  since_epoch_ms: number | null;
  inputs: InterlockInputView[];
  /** Block entries no device or function of the current inventory matches (they block nothing). */
  unresolved_block: string[];
}

/**
 * Log lines about the transitions of one alarm or interlock per window; the rest are counted and
 * said on the next line written (a value dithering around a limit or condition must not flood
 * the log). Events, telemetry rows and run events are never limited.
 */
export const TRANSITION_LOG_LINES = 5;
/** The window of TRANSITION_LOG_LINES. */
export const TRANSITION_LOG_WINDOW_MS = 60_000;

/**
 * Alarms and interlocks a reload removed whose last transition date is kept for the one of their
 * id a later reload adds back (AlarmEngine #removedUntilWall): at most this many, the one removed
 * longest ago let go of first. MAX_ALARMS + MAX_INTERLOCKS: every one of one configuration.
 */
export const MAX_REMOVED_DATES = MAX_ALARMS + MAX_INTERLOCKS;

/**
 * What the HTTP layer needs. `source` is who asks (audit trail; default an HTTP client): every
 * ack, shelve and unshelve is recorded, accepted or refused.
 */
export interface AlarmService {
  alarms(): AlarmView[];
  alarm(id: string): AlarmView;
  ack(id: string, source?: AuditOrigin): AlarmView;
  shelve(id: string, durationMs: number, source?: AuditOrigin): AlarmView;
  unshelve(id: string, source?: AuditOrigin): AlarmView;
  interlocks(): InterlockView[];
}

/** Who asks when a caller names no one: an HTTP client. */
const HTTP_ORIGIN: AuditOrigin = { kind: "http" };

/** TRANSITION_LOG_LINES per TRANSITION_LOG_WINDOW_MS for one alarm or interlock. */
class TransitionLog {
  #windowStart = -Infinity;
  #written = 0;
  #suppressed = 0;

  /**
   * Writes `line` with `write` unless the window's lines are used up (then counts it). The `last`
   * line of an alarm a reload removes or replaces is always written: its window goes with it, and
   * no later line could say what was left out.
   */
  write(nowMono: number, line: string, write: (line: string) => void, last = false): void {
    if (nowMono - this.#windowStart >= TRANSITION_LOG_WINDOW_MS) {
      this.#windowStart = nowMono;
      this.#written = 0;
    }
    if (this.#written >= TRANSITION_LOG_LINES && !last) {
      this.#suppressed++;
      return;
    }
    this.#written++;
    const suppressed = this.#suppressed;
    this.#suppressed = 0;
    write(
      suppressed > 0 ? `${line} (${suppressed} transition lines suppressed before this one)` : line,
    );
  }
}

interface AlarmEntry {
  readonly monitor: AlarmMonitor;
  readonly input: SignalInput;
  readonly log: TransitionLog;
  shelveTimer: TimerId | null;
}

interface InterlockEntry {
  readonly interlock: Interlock;
  readonly log: TransitionLog;
  blocking: boolean;
  sinceWall: number | null;
  /**
   * The last date of the interlock of its id a reload removed, when a later reload added this
   * one back (AlarmEngine #removedUntilWall): its transitions are dated no earlier, as an alarm's
   * are (AlarmMonitor.follow).
   */
  replacedUntilWall: number | null;
  /**
   * Why it blocks as last told (engage, or another reason while it kept blocking): the bad input
   * and its problem, or the type error, or neither (the condition holds). A new reason while it
   * blocks is told; new values of the same one are not (they change at every poll).
   */
  toldInput: SignalInput | null;
  /** The kind of reason toldInput was told bad for (Interlock.badKind). */
  toldKind: InputProblem;
  /** Whether toldInput was told bad for its declared type (Interlock.badDeclared). */
  toldDeclared: boolean;
  toldTypeError: boolean;
  /** When another reason was last told (dates what follows no earlier); null: never. */
  toldAtWall: number | null;
  unresolved: string[];
}

/**
 * The date an interlock's transitions must not come before: its latest one's (`sinceWall`), or
 * that of the interlock of its id it replaced when later; null when neither recorded any.
 */
function interlockLastAtWall(entry: InterlockEntry): number | null {
  return latestDate(latestDate(entry.sinceWall, entry.replacedUntilWall), entry.toldAtWall);
}

/**
 * Dates an interlock's engage or release no earlier than its transition before it (the latest
 * time it recorded is `sinceWall`), nor than the interlock of its id it replaced, and records it
 * there: a step back of the wall clock (NTP) must not date a release before the engage it
 * follows, as AlarmMonitor dates an alarm's.
 */
function interlockTransitionAt(entry: InterlockEntry, wall: number): number {
  const at = transitionDate(wall, interlockLastAtWall(entry));
  entry.sinceWall = at;
  return at;
}

/** The key of an alarm's or interlock's date in AlarmEngine #removedUntilWall (ids may meet). */
function removedKey(kind: "alarm" | "interlock", id: string): string {
  return `${kind} ${id}`;
}

/** What is evaluated after a poll of one device. */
interface DeviceWatch {
  readonly alarms: AlarmEntry[];
  readonly interlocks: InterlockEntry[];
}

/** A block entry on the device it names. */
interface BlockRule {
  readonly entry: InterlockEntry;
  /** A function name, or `*` (every actuating function). */
  readonly functionName: string;
}

/** The alarms and interlocks of one runtime (see the module comment). */
export class AlarmEngine implements AlarmService {
  readonly #o: AlarmEngineOptions;
  readonly #log: Logger;
  /** #log on the path to an action or an interlock's event: a line it fails to write is lost. */
  readonly #actionLog: Logger;
  readonly #ctx: InputContext;
  #alarms = new Map<string, AlarmEntry>();
  /** The same entries in config order (indexed loops allocate no iterator). */
  #alarmList: AlarmEntry[] = [];
  #interlocks: InterlockEntry[] = [];
  #inputs = new Map<string, SignalInput>();
  /** provider id -> device id -> what reads it (two lookups, no key string built per poll). */
  #byDevice = new Map<string, Map<string, DeviceWatch>>();
  /** provider id -> device id -> the block rules on it. */
  #blocks = new Map<string, Map<string, BlockRule[]>>();
  /** Set while subscribed to the cache's polls (only with something to evaluate). */
  #unsubscribe: (() => void) | null = null;
  #unwatch: () => void = () => {};
  /**
   * Nothing is evaluated before start(): until the priming poll has answered there is no sample
   * to judge, and "no sample yet" must not raise (an alarm with action estop would stop a
   * machine that is starting normally).
   */
  #started = false;
  #stopped = false;
  /** The wake-up timer (module comment) and the instant it is set for (Infinity: none). */
  #wakeTimer: TimerId | null = null;
  #wakeDueMono = Infinity;
  /**
   * Inputs nothing reads now, of alarms a reload took out and puts back changed (reconfigure's
   * `changing`): classified at every evaluation until then, so the alarm put back runs its delay
   * from when the input became unusable.
   */
  #heldInputs: SignalInput[] = [];
  /** Providers the last binding skipped because they were down (judged again once up). */
  readonly #unjudged = new Set<string>();
  /**
   * removedKey -> the last date of the alarm (AlarmMonitor.lastAtWall) or interlock
   * (interlockLastAtWall) of that id a reload removed -- its clear or release, when it was raised
   * or blocking: the one a later reload adds back under the id follows it, so a step back of the
   * wall clock (NTP) between the two reloads, or more than one, does not date its raise or engage
   * before that clear or release. Taken by the one added back; beyond MAX_REMOVED_DATES ids the
   * one removed longest ago is let go of first (DepartedDates).
   */
  readonly #removedUntilWall = new DepartedDates(MAX_REMOVED_DATES);

  constructor(options: AlarmEngineOptions) {
    this.#o = options;
    this.#log = options.log.child("alarms");
    this.#actionLog = neverThrowing(this.#log);
    this.#ctx = options.outages === undefined
      ? { cache: options.cache }
      : { cache: options.cache, outages: options.outages };
    this.#build(options.alarms, options.interlocks, new Map(), []);
    // A provider announces a new inventory once it counts as up, with the cache holding it: what
    // does not resolve (judged for providers up only) is told then; one down when the last binding
    // skipped it (a reload meanwhile) is judged once up again, whatever it comes back with. Not at
    // `unconfigured`: it follows its host's `removed`, if any (one never registered lists nothing).
    const unwatchInventory = options.inventory.onChange((_id, change) => {
      if (change === "changed" || change === "removed") this.inventoryChanged();
    });
    const unwatchUp = options.inventory.onAvailability((provider, up) => {
      if (up && this.#unjudged.has(provider.id)) this.inventoryChanged();
    });
    this.#unwatch = () => {
      unwatchInventory();
      unwatchUp();
    };
    this.#rebind(false);
  }

  /**
   * A configuration reload (the `alarms` section): alarms and interlocks are replaced in place.
   * An alarm the reload kept (same id and everything that decides when it raises and what it
   * does; its message and place may differ) carries on with its state -- raised, acknowledged,
   * shelved, its transitions -- so a reload neither re-raises it (and re-runs its action) nor
   * forgets an operator's ack or shelve. Everything is then bound and evaluated again.
   * `changing`: ids of alarms taken out now that the same reload puts back changed (taken out
   * before their provider is stopped): said `changed`, not `removed`, to `actions.retired`.
   * `changingInterlocks`: the same for interlocks (a blocking one is logged released as changed).
   */
  reconfigure(
    section: { alarms: readonly AlarmConfig[]; interlocks: readonly InterlockConfig[] },
    changing: ReadonlySet<string> = new Set(),
    changingInterlocks: ReadonlySet<string> = new Set(),
  ): void {
    const previous = this.#alarms;
    const previousInterlocks = this.#interlocks;
    for (const entry of previous.values()) this.#clearShelveTimer(entry);
    // The inputs of those coming back changed stay followed meanwhile: since when their signal
    // has been unusable (its provider stopped by the reload) is what their delay runs from.
    const held: AlarmConfig[] = [];
    for (const [id, entry] of previous) {
      if (changing.has(id) && !section.alarms.some((c) => c.id === id)) {
        held.push(entry.monitor.config);
      }
    }
    this.#build(section.alarms, section.interlocks, previous, previousInterlocks, held);
    // Said whatever the alarm's state (an e-stop it latched outlives its clear), stopped or not.
    for (const [id, entry] of previous) {
      const now = this.#alarms.get(id);
      if (now?.log === entry.log) continue; // carried on
      this.#o.actions.retired?.(
        id,
        now === undefined && !changing.has(id) ? "removed" : "changed",
      );
    }
    for (const id of this.#alarms.keys()) {
      if (!previous.has(id)) this.#o.actions.retired?.(id, "changed"); // added (back)
    }
    if (this.#stopped) return;
    // A raised (or acknowledged, or shelved) alarm the reload removed or changed ends here: its
    // clear is published, so the events, telemetry rows and run records end where the alarm
    // view does (a changed one starts from normal and raises again if its condition holds).
    const wall = this.#o.clock.nowMs();
    for (const [id, entry] of previous) {
      const next = this.#alarms.get(id);
      if (next?.log === entry.log) continue; // carried on
      const t = entry.monitor.retire(wall);
      if (t !== null) this.#publishAlarm(entry, t, "removed or changed by a reload");
      // A changed one is dated after the alarm it replaces (its events follow under the same id);
      // a removed one's date is kept for an alarm a later reload adds back under the id.
      if (next !== undefined) next.monitor.follow(entry.monitor.lastAtWall);
      else this.#keepRemovedDate(removedKey("alarm", id), entry.monitor.lastAtWall);
    }
    for (const [id, entry] of this.#alarms) {
      if (previous.has(id)) continue;
      // Added (back): dated after the alarm of its id a reload removed, if any.
      const at = this.#removedUntilWall.take(removedKey("alarm", id));
      if (at !== undefined) entry.monitor.follow(at);
    }
    // Likewise a blocking interlock the reload removed: released (a kept one goes on below); its
    // last date is kept for one a later reload adds back under the id, as a removed alarm's.
    const kept = new Set(section.interlocks.map((c) => c.id));
    const before = new Set<string>();
    for (const entry of previousInterlocks) {
      const id = entry.interlock.config.id;
      before.add(id);
      if (kept.has(id)) continue;
      if (entry.blocking && entry.sinceWall !== null) {
        entry.blocking = false;
        this.#actionLog.info(
          `interlock ${id} released: ${
            changingInterlocks.has(id) ? "changed" : "removed"
          } by a reload`,
        );
        this.#publishInterlock(entry, false, null, interlockTransitionAt(entry, wall));
      }
      this.#keepRemovedDate(removedKey("interlock", id), interlockLastAtWall(entry));
    }
    for (const entry of this.#interlocks) {
      const id = entry.interlock.config.id;
      if (before.has(id)) continue; // carried on (#build)
      const at = this.#removedUntilWall.take(removedKey("interlock", id));
      if (at !== undefined) entry.replacedUntilWall = at;
    }
    this.#rebind(this.#started);
    this.#armCarriedShelves();
    this.evaluateAll();
  }

  /**
   * Keeps `at`, the last date of an alarm or interlock a reload removed, under its key
   * (#removedUntilWall); null: it recorded none.
   */
  #keepRemovedDate(key: string, at: number | null): void {
    if (at !== null) this.#removedUntilWall.keep(key, at);
  }

  /**
   * Builds the tables of `alarms` and `interlocks`, carrying state from `previous` entries: an
   * interlock of the same id carries on from whether it blocked and since when, so the first
   * evaluation after a reload publishes an engage or a release only when it changed; an alarm the
   * reload kept unchanged carries on with its state and its transition log limit.
   */
  #build(
    alarms: readonly AlarmConfig[],
    interlocks: readonly InterlockConfig[],
    previous: ReadonlyMap<string, AlarmEntry>,
    previousInterlocks: readonly InterlockEntry[],
    held: readonly AlarmConfig[] = [],
  ): void {
    // An input read before and after the reload carries on: since when it has been unusable is
    // what the delay of every alarm on it runs from, a new alarm's included.
    const inputsBefore = this.#inputs;
    this.#heldInputs = [];
    this.#alarms = new Map();
    this.#alarmList = [];
    this.#interlocks = [];
    this.#inputs = new Map();
    this.#byDevice = new Map();
    this.#blocks = new Map();
    const inputFor = (handle: string, p: string, d: string, s: string): SignalInput => {
      let input = this.#inputs.get(handle);
      if (input === undefined) {
        input = inputsBefore.get(handle) ?? new SignalInput(handle, p, d, s);
        this.#inputs.set(handle, input);
      }
      return input;
    };
    for (const config of alarms) {
      const input = inputFor(config.signal, config.providerId, config.deviceId, config.signalId);
      const was = previous.get(config.id);
      // An alarm the reload kept carries on: its state, and its log limit's window (a reload
      // must not let a dithering alarm flood the log again).
      const kept = was !== undefined && sameAlarm(was.monitor.config, config) ? was : undefined;
      const entry: AlarmEntry = {
        monitor: kept !== undefined
          ? AlarmMonitor.carriedOn(config, kept.monitor)
          : new AlarmMonitor(config),
        input,
        log: kept?.log ?? new TransitionLog(),
        shelveTimer: null,
      };
      this.#alarms.set(config.id, entry);
      this.#alarmList.push(entry);
      this.#watch(config.providerId, config.deviceId).alarms.push(entry);
    }
    for (const config of held) {
      if (this.#inputs.has(config.signal)) continue; // read by another alarm or an interlock
      const input = inputFor(config.signal, config.providerId, config.deviceId, config.signalId);
      this.#heldInputs.push(input);
    }
    const interlocksBefore = new Map(previousInterlocks.map((e) => [e.interlock.config.id, e]));
    for (const config of interlocks) {
      const interlock = new Interlock(config, this.#ctx, inputFor);
      const before = interlocksBefore.get(config.id);
      const entry: InterlockEntry = {
        interlock,
        log: before?.log ?? new TransitionLog(),
        blocking: before?.blocking ?? false,
        sinceWall: before?.sinceWall ?? null,
        replacedUntilWall: before?.replacedUntilWall ?? null,
        toldInput: before?.toldInput ?? null,
        toldKind: before?.toldKind ?? InputProblem.GOOD,
        toldDeclared: before?.toldDeclared ?? false,
        toldTypeError: before?.toldTypeError ?? false,
        toldAtWall: before?.toldAtWall ?? null,
        unresolved: [],
      };
      this.#interlocks.push(entry);
      const devices = new Set<string>();
      for (const input of interlock.inputs) {
        const key = deviceHandle(input.providerId, input.deviceId);
        if (devices.has(key)) continue;
        devices.add(key);
        this.#watch(input.providerId, input.deviceId).interlocks.push(entry);
      }
      for (const b of config.block) {
        let byDevice = this.#blocks.get(b.providerId);
        if (!byDevice) this.#blocks.set(b.providerId, byDevice = new Map());
        let rules = byDevice.get(b.deviceId);
        if (!rules) byDevice.set(b.deviceId, rules = []);
        rules.push({ entry, functionName: b.functionName });
      }
    }
    // Subscribed to the polls only with something to evaluate (a runtime without alarms pays
    // nothing on its poll path).
    const wanted = this.#alarms.size + this.#interlocks.length > 0 && !this.#stopped;
    if (wanted && this.#unsubscribe === null) {
      this.#unsubscribe = this.#o.cache.onDevicePolled(this.#onDevicePolled);
    } else if (!wanted && this.#unsubscribe !== null) {
      this.#unsubscribe();
      this.#unsubscribe = null;
    }
  }

  /** Shelves carried over by a reconfiguration run out on new timers. */
  #armCarriedShelves(): void {
    const mono = this.#o.clock.monoMs();
    for (const entry of this.#alarmList) {
      const until = entry.monitor.shelvedUntilMono;
      if (until !== null && entry.shelveTimer === null) {
        this.#armShelveTimer(entry, Math.max(0, until - mono));
      }
    }
  }

  /**
   * Binds every input to the current inventory and evaluates everything once; call it once the
   * cache's priming poll is done. From then on every poll is evaluated.
   */
  start(): void {
    this.#started = true;
    this.#rebind(true);
    this.#armCarriedShelves();
    this.evaluateAll();
  }

  /** Stops evaluating and clears the shelve and wake-up timers. */
  stop(): void {
    this.#stopped = true;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#unwatch();
    for (const entry of this.#alarms.values()) this.#clearShelveTimer(entry);
    this.#o.clock.clearTimer(this.#wakeTimer);
    this.#wakeTimer = null;
    this.#wakeDueMono = Infinity;
  }

  /**
   * Evaluates every alarm and interlock now (not before start()), then sets the wake-up timer
   * for the earliest instant something falls due without a poll.
   */
  evaluateAll(): void {
    if (!this.#started || this.#stopped) return;
    const mono = this.#o.clock.monoMs();
    const wall = this.#o.clock.nowMs();
    let due = Infinity;
    const alarms = this.#alarmList;
    for (let i = 0; i < alarms.length; i++) {
      due = Math.min(due, this.#evaluateAlarm(alarms[i]!, mono, wall));
    }
    const interlocks = this.#interlocks;
    for (let i = 0; i < interlocks.length; i++) {
      this.#evaluateInterlock(interlocks[i]!, mono, wall);
      due = Math.min(due, staleDue(interlocks[i]!.interlock));
    }
    const held = this.#heldInputs;
    for (let i = 0; i < held.length; i++) held[i]!.classify(this.#ctx, mono);
    this.#setWake(due);
  }

  /** Sets the wake-up timer for `dueMono` (replacing the one set; Infinity: none). */
  #setWake(dueMono: number): void {
    if (dueMono === this.#wakeDueMono && (this.#wakeTimer !== null || dueMono === Infinity)) {
      return; // already set for it: nothing allocated when nothing changed
    }
    const clock = this.#o.clock;
    if (this.#wakeTimer !== null) clock.clearTimer(this.#wakeTimer);
    this.#wakeTimer = null;
    this.#wakeDueMono = dueMono;
    if (dueMono === Infinity || this.#stopped) return;
    this.#wakeTimer = clock.setTimer(this.#onWake, Math.max(0, dueMono - clock.monoMs()));
  }

  readonly #onWake = (): void => {
    this.#wakeTimer = null;
    this.#wakeDueMono = Infinity;
    this.evaluateAll();
  };

  /** Moves the wake-up earlier when `dueMono` comes before it (after a poll's evaluation). */
  #wakeBy(dueMono: number): void {
    if (dueMono < this.#wakeDueMono) this.#setWake(dueMono);
  }

  /**
   * The call gate (registered on the router by the composition root): refuses a call to a
   * function an interlock blocks while it blocks, evaluated now. Stop actions (origin `safety`)
   * are never refused (the router does not even ask).
   */
  readonly gate = (ctx: GateContext): RuntimeError | null => {
    if (ctx.origin === "safety") return null;
    const info = ctx.device.device;
    const rules = this.#blocks.get(info.providerId)?.get(info.deviceId);
    if (rules === undefined) return null;
    for (const rule of rules) {
      if (rule.functionName === "*" ? !ctx.fn.actuating : rule.functionName !== ctx.fn.name) {
        continue;
      }
      const entry = rule.entry;
      const id = entry.interlock.config.id;
      const what = `${deviceHandle(info.providerId, info.deviceId)} ${ctx.fn.name}`;
      if (this.#o.cache.pollsEnded) {
        // The cache's polls ended (StateCache.pollsEnded: the runtime's stop, or a failed
        // start-up's detach, Kernel #failedStartStopsProviders): no poll refreshes the inputs any
        // more, so a judgement would be on frozen values (a call still answered in the stop's HTTP
        // drain, or still queued past it: an HTTP call behind a slow one, a Sparkplug DCMD, a mode
        // change's hooks, while the stop actions or the history's wait hold the providers' stop).
        // Fail safe, as an interlock that cannot be evaluated.
        const detached = this.#o.cache.providersDetached;
        return new RuntimeError(
          "FAILED_PRECONDITION",
          `Interlock ${id} cannot judge call ${what}: its inputs are no longer polled (the ` +
            `runtime is stopping${detached ? " after a failed start-up" : ""}); refused`,
          { details: { interlock_id: id } },
        );
      }
      let blocking: boolean;
      try {
        blocking = this.#evaluateInterlock(entry, this.#o.clock.monoMs(), this.#o.clock.nowMs());
      } catch (err) {
        // Fail safe: an interlock that cannot be evaluated refuses the call.
        return new RuntimeError(
          "FAILED_PRECONDITION",
          `Interlock ${id} could not be evaluated (${errorMessage(err)}): call ${what} refused`,
          { details: { interlock_id: id } },
        );
      }
      if (!blocking) continue;
      return new RuntimeError(
        "FAILED_PRECONDITION",
        `Interlock ${id} blocks ${what}: ${entry.interlock.config.message} (${
          entry.interlock.reason(this.#o.clock.monoMs())
        })`,
        { details: { interlock_id: id } },
      );
    }
    return null;
  };

  // ---- AlarmService ----

  alarms(): AlarmView[] {
    this.#expireShelves();
    return [...this.#alarms.values()].map((e) => this.#view(e));
  }

  alarm(id: string): AlarmView {
    this.#expireShelves();
    return this.#view(this.#entry(id));
  }

  ack(id: string, source: AuditOrigin = HTTP_ORIGIN): AlarmView {
    return this.#operate("ack", id, null, source, (entry) => {
      this.#expireShelves();
      const t = entry.monitor.ack(this.#o.clock.nowMs());
      if (t) this.#publishAlarm(entry, t);
    });
  }

  shelve(id: string, durationMs: number, source: AuditOrigin = HTTP_ORIGIN): AlarmView {
    return this.#operate("shelve", id, durationMs, source, (entry) => {
      // A shelve that ran out (its timer not yet fired) ends first, with its unshelve: the run
      // record and the event stream show where it ended, as a read would.
      this.#expireShelves();
      const t = entry.monitor.shelve(durationMs, this.#o.clock.monoMs(), this.#o.clock.nowMs());
      this.#armShelveTimer(entry, durationMs);
      this.#publishAlarm(entry, t);
    });
  }

  unshelve(id: string, source: AuditOrigin = HTTP_ORIGIN): AlarmView {
    return this.#operate("unshelve", id, null, source, (entry) => {
      const wasShelved = entry.monitor.state === "shelved";
      this.#expireShelves();
      // Its shelve ran out as the request came (the timer not yet fired): the expiry unshelved
      // it, which is what was asked; answered, not refused as "not shelved".
      if (wasShelved && entry.monitor.state !== "shelved") return;
      const t = entry.monitor.unshelve(this.#o.clock.nowMs());
      this.#clearShelveTimer(entry);
      this.#publishAlarm(entry, t);
    });
  }

  /** An operator's ack, shelve or unshelve, recorded on the audit trail accepted or refused. */
  #operate(
    op: "ack" | "shelve" | "unshelve",
    id: string,
    durationMs: number | null,
    source: AuditOrigin,
    apply: (entry: AlarmEntry) => void,
  ): AlarmView {
    const started = this.#o.clock.monoMs();
    const args = durationMs === null ? { alarm_id: id } : { alarm_id: id, duration_ms: durationMs };
    try {
      const entry = this.#entry(id);
      apply(entry);
      const view = this.#view(entry);
      this.#o.audit?.record({
        action: "alarm",
        origin: source,
        outcome: "accepted",
        function: op,
        args,
        result: { state: view.state },
        latency_ms: this.#o.clock.monoMs() - started,
      });
      return view;
    } catch (err) {
      const e = err instanceof RuntimeError ? err : null;
      this.#o.audit?.record({
        action: "alarm",
        origin: source,
        outcome: "refused",
        function: op,
        args,
        reason: `${e?.code ?? "INTERNAL"}: ${errorMessage(err)}`,
        refused_by: "alarm",
        latency_ms: this.#o.clock.monoMs() - started,
      });
      throw err;
    }
  }

  interlocks(): InterlockView[] {
    const wall = this.#o.clock.nowMs();
    const mono = this.#o.clock.monoMs();
    return this.#interlocks.map((entry) => {
      this.#evaluateInterlock(entry, mono, wall);
      const il = entry.interlock;
      return {
        id: il.config.id,
        message: il.config.message,
        condition: il.config.conditionText,
        block: il.config.block.map((b) => b.handle),
        blocking: entry.blocking,
        reason: entry.blocking ? il.reason(mono) : null,
        since_epoch_ms: entry.sinceWall,
        inputs: il.inputs.map((input) => {
          const s = input.sample(this.#ctx);
          const problem = input.classify(this.#ctx, mono);
          return {
            signal: input.handle,
            value: s?.value ?? null,
            quality: SignalInput.qualityOf(problem, s),
            bad_input: problem === InputProblem.GOOD
              ? null
              : il.describeInput(input, problem, mono),
          };
        }),
        unresolved_block: [...entry.unresolved],
      };
    });
  }

  // ---- evaluation ----

  /** After every poll of a device: its alarms and the interlocks that read it. */
  readonly #onDevicePolled = (dev: DeviceState): void => {
    if (!this.#started || this.#stopped) return;
    const watch = this.#byDevice.get(dev.providerId)?.get(dev.deviceId);
    if (watch === undefined) return;
    const mono = this.#o.clock.monoMs();
    const wall = this.#o.clock.nowMs();
    let due = Infinity;
    const alarms = watch.alarms;
    for (let i = 0; i < alarms.length; i++) {
      due = Math.min(due, this.#evaluateAlarm(alarms[i]!, mono, wall));
    }
    const interlocks = watch.interlocks;
    for (let i = 0; i < interlocks.length; i++) {
      this.#evaluateInterlock(interlocks[i]!, mono, wall);
      due = Math.min(due, staleDue(interlocks[i]!.interlock));
    }
    this.#wakeBy(due);
  };

  /**
   * Evaluates one alarm; returns the next instant (monotonic) it may change without a poll: its
   * pending raise falls due, or its usable input goes stale (Infinity: none).
   */
  #evaluateAlarm(entry: AlarmEntry, mono: number, wall: number): number {
    const monitor = entry.monitor;
    if (monitor.shelvedUntilMono !== null) {
      const expired = monitor.expireShelve(mono, wall);
      if (expired) {
        this.#clearShelveTimer(entry);
        this.#publishAlarm(entry, expired);
      }
    }
    const input = entry.input;
    const problem = input.classify(this.#ctx, mono);
    const s = problem === InputProblem.NO_DEVICE ? undefined : input.sample(this.#ctx);
    const value = s?.value ?? null;
    const usable = problem === InputProblem.GOOD && alarmAccepts(monitor.config, value!);
    // A good value of a type this alarm cannot judge became unusable when it was read.
    const badSince = problem === InputProblem.GOOD ? null : input.badSinceMono;
    const quality = SignalInput.qualityOf(problem, s);
    const t = monitor.evaluate(value, quality, usable, mono, wall, badSince);
    if (t !== null) {
      // A raise on a bad input says why (a device down keeps its last value, quality OK).
      const why = t.cause === "bad_quality" ? this.#badInput(entry, problem, mono) : undefined;
      this.#publishAlarm(entry, t, why ?? undefined);
    }
    const pending = monitor.pendingDueMono;
    const stale = input.staleAtMono;
    return Math.min(pending ?? Infinity, stale ?? Infinity);
  }

  /** Evaluates one interlock, publishes an engage or release; returns whether it blocks. */
  #evaluateInterlock(entry: InterlockEntry, mono: number, wall: number): boolean {
    const il = entry.interlock;
    const blocking = il.evaluate(mono, entry.blocking ? entry.toldInput : null);
    if (blocking === entry.blocking && entry.sinceWall !== null) {
      if (
        blocking && (il.badInput !== entry.toldInput || il.badKind !== entry.toldKind ||
          il.badDeclared !== entry.toldDeclared || il.typeError !== entry.toldTypeError)
      ) {
        this.#tellReason(entry, mono, wall);
      }
      return blocking;
    }
    const first = entry.sinceWall === null;
    entry.blocking = blocking;
    const at = interlockTransitionAt(entry, wall);
    if (first && !blocking) return blocking; // starting released is no transition
    this.#tellTransition(entry, blocking, mono, at);
    return blocking;
  }

  /**
   * Logs and publishes an interlock's engage or release, dated `at`. Apart from
   * #evaluateInterlock, which runs at every evaluation: a function that creates closures over
   * `this` allocates its context at every call, created or not, in every tier but TurboFan (which
   * removes it only once it has compiled the caller).
   */
  #tellTransition(entry: InterlockEntry, blocking: boolean, mono: number, at: number): void {
    const il = entry.interlock;
    const config = il.config;
    const reason = blocking ? il.reason(mono) : null;
    if (blocking) {
      this.#noteTold(entry);
      entry.log.write(
        mono,
        `interlock ${config.id} engaged: ${config.message} (${reason}); blocks ${
          config.block.map((b) => b.handle).join(", ")
        }`,
        (line) => this.#actionLog.warn(line),
      );
    } else {
      entry.log.write(mono, `interlock ${config.id} released`, (l) => this.#actionLog.info(l));
    }
    this.#publishInterlock(entry, blocking, reason, at);
  }

  /** What it blocks for now, as told (#evaluateInterlock compares the next evaluation with it). */
  #noteTold(entry: InterlockEntry): void {
    const il = entry.interlock;
    entry.toldInput = il.badInput;
    entry.toldKind = il.badKind;
    entry.toldDeclared = il.badDeclared;
    entry.toldTypeError = il.typeError;
  }

  /**
   * An interlock that keeps blocking for another reason (a bad input where the condition held,
   * another bad input, a type mismatch): an `interlock` event with the new reason and a WARN
   * line, so what operators were told matches what GET /v0/interlocks says. Its engage date
   * (since_epoch_ms) stays; what follows is dated no earlier than this.
   */
  #tellReason(entry: InterlockEntry, mono: number, wall: number): void {
    this.#noteTold(entry);
    const config = entry.interlock.config;
    const reason = entry.interlock.reason(mono);
    const at = transitionDate(wall, interlockLastAtWall(entry));
    entry.toldAtWall = at;
    entry.log.write(
      mono,
      `interlock ${config.id} blocks for another reason: ${config.message} (${reason}); blocks ${
        config.block.map((b) => b.handle).join(", ")
      }`,
      (line) => this.#actionLog.warn(line),
    );
    this.#publishInterlock(entry, true, reason, at);
  }

  #publishInterlock(
    entry: InterlockEntry,
    blocking: boolean,
    reason: string | null,
    wall: number,
  ): void {
    const config = entry.interlock.config;
    this.#o.bus.publish({
      kind: "interlock",
      interlock_id: config.id,
      blocking,
      reason,
      message: config.message,
      block: config.block.map((b) => b.handle),
      timestamp_ms: wall,
    });
  }

  /** `why`: a clear's reason; a bad-input raise's input problem (#badInput). */
  #publishAlarm(entry: AlarmEntry, t: AlarmTransitionRecord, why?: string): void {
    const config = entry.monitor.config;
    // Its line, its event and its action each on their own: a logger that fails (a closed
    // stderr) loses the line, never the event operators watch nor the action.
    try {
      this.#logTransition(entry, t, why);
    } catch (err) {
      this.#actionLog.error(
        `alarm ${config.id}: logging its ${t.transition} failed: ${errorMessage(err)}`,
      );
    }
    try {
      this.#o.bus.publish({
        kind: "alarm",
        alarm_id: config.id,
        transition: t.transition,
        state: t.state,
        level: t.level,
        cause: t.cause,
        limit: t.limit,
        signal: config.signal,
        value: t.value,
        quality: t.quality,
        action: config.action,
        message: config.message,
        shelved_until_epoch_ms: this.#shelvedUntilWall(entry.monitor),
        timestamp_ms: t.at_epoch_ms,
      });
    } catch (err) {
      this.#actionLog.error(
        `alarm ${config.id}: publishing its ${t.transition} failed: ${errorMessage(err)}`,
      );
    }
    if (t.transition === "raise" && config.action !== "none") this.#act(config, t, why);
  }

  /** Runs a raise's action; nothing here may keep it from being called. */
  #act(config: AlarmConfig, t: AlarmTransitionRecord, why?: string): void {
    const reason = `alarm ${config.id} raised ${t.level} (${describeCause(t)}): ${
      t.cause === "bad_quality"
        ? why ?? `${config.signal} is not usable`
        : `${config.signal} = ${valueText(t.value)}`
    }${config.message ? ` - ${config.message}` : ""}`;
    try {
      const done = config.action === "estop"
        ? this.#o.actions.estop(reason, `alarm:${config.id}`)
        : this.#o.actions.fault(reason, config.id);
      // A rejection logged by a logger that throws would be unhandled (it ends the runtime).
      done.catch((err) =>
        this.#actionLog.error(
          `alarm ${config.id}: action ${config.action} failed: ${errorMessage(err)}`,
        )
      );
    } catch (err) {
      // A throw here would keep the next alarm raised in this evaluation from acting.
      this.#actionLog.error(
        `alarm ${config.id}: action ${config.action} failed: ${errorMessage(err)}`,
      );
    }
  }

  #logTransition(entry: AlarmEntry, t: AlarmTransitionRecord, why?: string): void {
    const config = entry.monitor.config;
    const value = `${config.signal} = ${valueText(t.value)}${
      t.quality && t.quality !== "OK" ? ` (${t.quality})` : ""
    }`;
    let line: string;
    let write = (l: string) => this.#log.info(l);
    switch (t.transition) {
      case "raise":
        line = `alarm ${config.id} raised ${t.level} (${describeCause(t)}): ${
          t.cause === "bad_quality" && why !== undefined
            ? `${why}; last value ${valueText(t.value)}${
              t.quality && t.quality !== "OK" ? ` (${t.quality})` : ""
            }`
            : value
        }${config.message ? ` - ${config.message}` : ""}`;
        write = t.level === "MAJOR" ? (l) => this.#log.error(l) : (l) => this.#log.warn(l);
        break;
      case "clear":
        line = `alarm ${config.id} cleared: ${why ?? value}`;
        break;
      case "ack":
        line = `alarm ${config.id} acknowledged`;
        break;
      case "shelve":
        line = `alarm ${config.id} shelved until ${
          new Date(this.#shelvedUntilWall(entry.monitor) ?? 0).toISOString()
        }`;
        break;
      case "unshelve":
        line = `alarm ${config.id} unshelved: ${t.state}`;
        break;
    }
    // A clear with a reason (`why`) is the last of an alarm a reload removes or replaces; a
    // raise's `why` is its bad input, limited like any other line (a flapping sensor).
    entry.log.write(
      this.#o.clock.monoMs(),
      line,
      write,
      t.transition === "clear" && why !== undefined,
    );
  }

  /** Why an alarm's input is not usable now (its `bad_input`), null when it is. */
  #badInput(entry: AlarmEntry, problem: InputProblem, mono: number): string | null {
    const c = entry.monitor.config;
    if (problem !== InputProblem.GOOD) {
      // No sample yet of a signal declared of a type this alarm cannot judge: that, not the
      // missing sample, is why it stays bad once samples come (SignalInput.describeDeclared).
      return entry.input.describeDeclared(
        problem,
        (t) => alarmAcceptsType(c, t) ? null : alarmWants(c),
      ) ?? entry.input.describe(problem, this.#ctx, mono);
    }
    const v = entry.input.sample(this.#ctx)!.value!;
    if (alarmAccepts(c, v)) return null;
    return `${c.signal} is ${v.type}; ${alarmWants(c)}`;
  }

  #view(entry: AlarmEntry): AlarmView {
    const m = entry.monitor;
    const c = m.config;
    const mono = this.#o.clock.monoMs();
    const s = entry.input.sample(this.#ctx);
    const problem = entry.input.classify(this.#ctx, mono);
    const badInput = this.#badInput(entry, problem, mono);
    return {
      id: c.id,
      signal: c.signal,
      message: c.message,
      action: c.action,
      state: m.state,
      level: m.level,
      cause: m.cause,
      limit: m.limit,
      value: s?.value ?? null,
      quality: SignalInput.qualityOf(problem, s),
      bad_input: badInput,
      since_epoch_ms: m.sinceEpochMs,
      shelved_until_epoch_ms: this.#shelvedUntilWall(m),
      limits: { ...c.limits },
      alarm_when: c.alarmWhen ?? null,
      hysteresis: c.hysteresis,
      delay_ms: c.delayMs,
      on_bad_quality: c.onBadQuality,
      transitions: m.transitions(),
    };
  }

  /**
   * When the shelve ends on the wall clock of now (null: not shelved). It ends on the monotonic
   * clock: a step of the wall clock since it began (the two clocks' offset moved by at least
   * WALL_STEP_MS) moves the instant shown by the step, not the shelve.
   */
  #shelvedUntilWall(m: AlarmMonitor): number | null {
    const untilMono = m.shelvedUntilMono;
    const untilWall = m.shelvedUntilEpochMs;
    if (untilMono === null || untilWall === null) return null;
    const step = this.#o.clock.nowMs() - this.#o.clock.monoMs() - (untilWall - untilMono);
    return Math.abs(step) < WALL_STEP_MS ? untilWall : Math.round(untilWall + step);
  }

  #entry(id: string): AlarmEntry {
    const entry = this.#alarms.get(id);
    if (!entry) throw notFound(`Alarm not found: ${id}`);
    return entry;
  }

  // ---- shelve expiry ----

  #armShelveTimer(entry: AlarmEntry, ms: number): void {
    this.#clearShelveTimer(entry);
    entry.shelveTimer = this.#o.clock.setTimer(() => {
      entry.shelveTimer = null;
      if (this.#stopped) return;
      const until = entry.monitor.shelvedUntilMono;
      if (until === null) return;
      const left = until - this.#o.clock.monoMs();
      if (left > 0) return this.#armShelveTimer(entry, left); // the timer ran early
      const t = entry.monitor.expireShelve(this.#o.clock.monoMs(), this.#o.clock.nowMs());
      if (t) this.#publishAlarm(entry, t);
    }, ms);
  }

  #clearShelveTimer(entry: AlarmEntry): void {
    if (entry.shelveTimer === null) return;
    this.#o.clock.clearTimer(entry.shelveTimer);
    entry.shelveTimer = null;
  }

  /** Ends every shelve that has run out (reads never show an expired shelve). */
  #expireShelves(): void {
    const mono = this.#o.clock.monoMs();
    const wall = this.#o.clock.nowMs();
    for (const entry of this.#alarms.values()) {
      const t = entry.monitor.expireShelve(mono, wall);
      if (t === null) continue;
      this.#clearShelveTimer(entry);
      this.#publishAlarm(entry, t);
    }
  }

  // ---- inventory ----

  /** Rebinds inputs after a provider's inventory changed or a provider was added or removed. */
  inventoryChanged(): void {
    if (this.#stopped) return;
    this.#rebind(this.#started); // before start(), start() reports what does not resolve
    this.evaluateAll();
  }

  /**
   * Binds every input to the current inventory: the declared type and the staleness bound of
   * each signal, and what does not resolve (logged when `report`: the alarm raises and the
   * interlock blocks on it as on any bad input).
   */
  #rebind(report: boolean): void {
    const inventory = this.#o.inventory;
    this.#unjudged.clear();
    for (const input of this.#inputs.values()) {
      const caps = inventory.capabilities(input.providerId, input.deviceId);
      const spec = caps?.signals.find((s) => s.signalId === input.signalId);
      let problem: string | null = null;
      if (!caps) {
        // A provider that is not up (restarting, failed to start) lists nothing: its devices are
        // down, not missing from its inventory (SignalInput.describe says why they are down).
        if (inventory.provider(input.providerId)?.available ?? false) {
          problem =
            `device ${input.providerId}/${input.deviceId} is not in the inventory of ${input.providerId}`;
        }
      } else if (!spec) {
        problem =
          `device ${input.providerId}/${input.deviceId} declares no signal '${input.signalId}'`;
      } else if (spec.pollHintHz <= 0) {
        problem = "declared without a poll hint: the runtime never polls it";
      }
      input.binding = { declaredType: spec ? spec.valueType : undefined, problem };
    }
    for (const entry of this.#interlocks) entry.unresolved = this.#unresolvedBlocks(entry);
    if (!report) return;
    const up = (providerId: string) => {
      if (inventory.provider(providerId)?.available ?? false) return true;
      this.#unjudged.add(providerId);
      return false;
    };
    for (const { monitor, input } of this.#alarms.values()) {
      const c = monitor.config;
      if (!up(c.providerId)) continue;
      const t = declaredMismatch(c, input.binding);
      if (input.binding.problem !== null) {
        this.#log.error(
          `alarm ${c.id}: ${c.signal}: ${input.binding.problem}; the alarm treats it as a bad input`,
        );
      } else if (t !== null) {
        this.#log.error(
          `alarm ${c.id}: ${c.signal} is declared ${t}; ${alarmWants(c)}: the alarm treats it ` +
            "as a bad input",
        );
      }
    }
    for (const entry of this.#interlocks) {
      const il = entry.interlock;
      const id = il.config.id;
      for (const input of il.inputs) {
        if (input.binding.problem !== null && up(input.providerId)) {
          this.#log.error(
            `interlock ${id}: ${input.handle}: ${input.binding.problem}; the interlock blocks on it`,
          );
        }
      }
      for (const problem of il.typeProblems(false)) {
        this.#log.error(`interlock ${id}: ${problem}; the interlock blocks while it does`);
      }
      for (const handle of entry.unresolved) {
        this.#log.error(
          `interlock ${id}: block entry ${handle} matches no function: it blocks nothing`,
        );
      }
    }
  }

  /** Block entries naming a device or function the inventory lacks (providers up only). */
  #unresolvedBlocks(entry: InterlockEntry): string[] {
    const inventory = this.#o.inventory;
    const out: string[] = [];
    for (const b of entry.interlock.config.block) {
      if (!(inventory.provider(b.providerId)?.available ?? false)) {
        this.#unjudged.add(b.providerId);
        continue;
      }
      const caps = inventory.capabilities(b.providerId, b.deviceId);
      const matches = caps !== undefined &&
        caps.functions.some((f) =>
          b.functionName === "*" ? f.actuating : f.name === b.functionName
        );
      if (!matches) out.push(b.handle);
    }
    return out;
  }

  #watch(providerId: string, deviceId: string): DeviceWatch {
    let byDevice = this.#byDevice.get(providerId);
    if (!byDevice) this.#byDevice.set(providerId, byDevice = new Map());
    let watch = byDevice.get(deviceId);
    if (!watch) byDevice.set(deviceId, watch = { alarms: [], interlocks: [] });
    return watch;
  }
}

/**
 * The type a signal is declared with when this alarm cannot judge it (limits: not a number;
 * alarm_when: not its bool or string); null when it can, or when the type is unspecified or not
 * declared.
 */
function declaredMismatch(c: AlarmConfig, binding: SignalBinding): ValueType | null {
  const t = binding.declaredType;
  if (t === undefined || t === null) return null;
  return alarmAcceptsType(c, t) ? null : t;
}

/** What an alarm wants of its signal's values, as its bad_input and ERROR lines say it. */
function alarmWants(c: AlarmConfig): string {
  return c.alarmWhen === undefined
    ? "limits compare numbers"
    : `alarm_when is a ${typeof c.alarmWhen}`;
}

/** When the first of an interlock's usable inputs goes stale (Infinity: none is usable). */
function staleDue(interlock: Interlock): number {
  let due = Infinity;
  const inputs = interlock.inputs;
  for (let i = 0; i < inputs.length; i++) {
    const at = inputs[i]!.staleAtMono;
    if (at !== null && at < due) due = at;
  }
  return due;
}

function describeCause(t: AlarmTransitionRecord): string {
  if (t.cause === "bad_quality") return "bad input";
  if (t.cause === "alarm_when") return `alarm_when ${JSON.stringify(t.limit)}`;
  return `${t.cause} ${t.limit}`;
}

/**
 * Whether a reload kept an alarm: the same in every field that decides when it raises, clears and
 * what it does (its operator text and its place in the file may change).
 */
function sameAlarm(a: AlarmConfig, b: AlarmConfig): boolean {
  const judged = (c: AlarmConfig) => JSON.stringify({ ...c, message: "", path: "" });
  return judged(a) === judged(b);
}
