/**
 * The shared rig of the clock-failure tests (tests/safety/*_clock_fails_test.ts,
 * tests/control/*_clock_fails_test.ts, estop_reload_ladder_contained_test.ts): a router that
 * answers every call at once and records it, an inventory of providers that are up (or of one
 * whose return the test announces: also for estop_reload_hooks_running_securing_test.ts and
 * tests/control/mode_provider_back_handed_run_test.ts), a modes port that records FAULT, a clock
 * whose chosen read throws, a logger that keeps its ERROR lines, and the heater-off ladder, with
 * its read-back and a reader that reads it back as met; containedEstop, an e-stop over them, and
 * brittleEstop, one over an inventory whose device list throws while the test says so
 * (estop_plan_fails_test.ts, estop_secure_fails_test.ts).
 */
import type { CallRequest, CallRouter, FaultEntry, LatchSecuring } from "../../src/control/mod.ts";
import type { Clock } from "../../src/common/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { Estop, type EstopModes, type SafeStateConfig } from "../../src/safety/mod.ts";
import type {
  FreshRead,
  FreshReader,
  InventoryReader,
  ProviderSummary,
} from "../../src/state/mod.ts";
import { call, expectation } from "./_fixture.ts";

/**
 * A router that answers every call at once with `{}`, pushing `"<provider> <function>"` to
 * `made`; `onCall` runs first (e.g. to arm a clock once the ladder's call is made).
 */
export function recordingRouter(made: string[] = [], onCall?: () => void): CallRouter {
  return {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drainFrom: () => () => Promise.resolve(true),
    call: (req: CallRequest) => {
      made.push(`${req.providerId} ${req.functionName}`);
      onCall?.();
      return Promise.resolve({});
    },
  } as unknown as CallRouter;
}

/** An inventory of providers `ids` (default: plant), all up, with no devices. */
export function providersUp(...ids: string[]): InventoryReader {
  const hosts = (ids.length > 0 ? ids : ["plant"]).map((id) =>
    ({
      id,
      available: true,
      devices: [],
      config: { timeoutMs: 1000 },
      hostCheck: () => null,
    }) as unknown as ProviderSummary
  );
  return {
    onAvailability: () => () => {},
    onChange: () => () => {},
    provider: (id: string) => hosts.find((h) => h.id === id),
    providers: () => hosts,
    devices: () => [],
  } as unknown as InventoryReader;
}

/**
 * An inventory of provider `id` (default plant), up, its device list what `devices()` answers
 * when read (default none), whose return the test announces: `comeBack()` tells the availability
 * listeners (the e-stop's) that it is up again; `changed()` tells the change listeners its devices
 * changed; `takeOut()` takes its host out as a reload removing it does (no longer listed, the
 * change listeners told `removed` then `unconfigured`), `replaceHost()` as a reload restarting it
 * does.
 */
export function providerComingBack(id = "plant", devices: () => readonly unknown[] = () => []) {
  const listeners: ((p: ProviderSummary, up: boolean) => void)[] = [];
  const changeListeners: ((p: string, change: string) => void)[] = [];
  const host = {
    id,
    available: true,
    get devices() {
      return devices();
    },
    config: { timeoutMs: 1000 },
  } as unknown as ProviderSummary;
  /** The host listed under `id`: `host`, none once taken out, or its successor. */
  let listed: ProviderSummary | undefined = host;
  const inventory = {
    onAvailability: (l: (p: ProviderSummary, up: boolean) => void) => {
      listeners.push(l);
      return () => {};
    },
    onChange: (l: (p: string, change: string) => void) => {
      changeListeners.push(l);
      return () => {};
    },
    provider: (p: string) => p === id ? listed : undefined,
    providers: () => listed === undefined ? [] : [listed],
    devices: () => [],
  } as unknown as InventoryReader;
  return {
    inventory,
    host,
    comeBack: () => {
      for (const l of listeners) l(host, true);
    },
    changed: () => {
      for (const l of changeListeners) l(id, "changed");
    },
    takeOut: () => {
      listed = undefined;
      for (const l of changeListeners) l(id, "removed");
      for (const l of changeListeners) l(id, "unconfigured");
    },
    /**
     * A reload restarts it: `host` taken out (`removed`), a successor registered under `id`, not
     * up yet (returned).
     */
    replaceHost: () => {
      for (const l of changeListeners) l(id, "removed");
      listed = { ...host, available: false } as ProviderSummary;
      return listed;
    },
  };
}

/** A modes port that enters FAULT from MANUAL when asked; the mode and the hook runs, recorded. */
export function faultRecordingModes() {
  let mode = "MANUAL";
  let hooksRun = 0;
  const modes: EstopModes = {
    current: () => mode as "FAULT",
    enterFault: (): FaultEntry => {
      mode = "FAULT";
      return {
        committed: true,
        from: "MANUAL",
        runHooks: () => (hooksRun++, Promise.resolve([])),
        hookFailuresSoFar: () => [],
      };
    },
    addArmCheck() {},
  };
  return { modes, mode: () => mode, hooksRun: () => hooksRun };
}

/**
 * The system clock (or `base`, a manual clock), except that its `read` throws
 * `clock <read> failed` `times` times while `when()` holds (default: always); how often it threw,
 * counted.
 */
export function failingClock(
  o: { read: "nowMs" | "monoMs"; times: number; when?: () => boolean; base?: Clock },
) {
  let failures = 0;
  const base = o.base ?? systemClock;
  const clock: Clock = {
    nowMs: () => base.nowMs(),
    monoMs: () => base.monoMs(),
    setTimer: (fn, ms) => base.setTimer(fn, ms),
    clearTimer: (id) => base.clearTimer(id),
  };
  const real = clock[o.read];
  clock[o.read] = () => {
    if ((o.when !== undefined && !o.when()) || failures >= o.times) return real();
    failures++;
    throw new Error(`clock ${o.read} failed`);
  };
  return { clock, failures: () => failures };
}

/** A logger at level error whose lines are kept in `errors`. */
export function errorLog() {
  const { log, lines: errors } = capturingLogger({ level: "error", now: () => 0 });
  return { log, errors };
}

/** The one-call ladder of the clock rigs: plant/plant0 set_heater(enabled=false), no read-back. */
export function heaterOffLadder(): SafeStateConfig {
  return {
    setpoints: [],
    hooks: [call("plant/plant0", "set_heater", { enabled: false })],
    zeroIsSafe: false,
    expect: [],
    verifyTimeoutMs: 100,
  };
}

/** heaterOffLadder with its read-back: plant/plant0/heater expected false. */
export function heaterOffVerifiedLadder(): SafeStateConfig {
  return { ...heaterOffLadder(), expect: [expectation("plant/plant0/heater", { equals: false })] };
}

/** A reader that reads heaterOffVerifiedLadder's expectation back as met; its read-backs, counted. */
export function heaterOffReader() {
  let readBacks = 0;
  const reads: FreshReader = {
    readFresh: () => {
      readBacks++;
      return Promise.resolve({
        ok: true,
        samples: new Map([["heater", { value: { type: "bool", bool: false }, quality: "OK" }]]),
      } as FreshRead);
    },
  };
  return { reads, readBacks: () => readBacks };
}

/**
 * The ladder's verify_timeout_ms under heaterOffHeldReadBack: far past any test, so a held
 * read-back waits for the test to answer its reads, never for its timeout.
 */
const HELD_READ_BACK_TIMEOUT_MS = 600_000;

/**
 * heaterOffVerifiedLadder (`safeState`) with a read-back the test holds: each read of `reads` waits
 * until `answerReads()`, then reads as heaterOffReader does; `heldReads()` counts the reads waiting.
 */
export function heaterOffHeldReadBack() {
  const met = heaterOffReader().reads;
  const held: (() => void)[] = [];
  const reads: FreshReader = {
    readFresh: (...args) =>
      new Promise((resolve) => held.push(() => resolve(met.readFresh(...args)))),
  };
  return {
    reads,
    safeState: { ...heaterOffVerifiedLadder(), verifyTimeoutMs: HELD_READ_BACK_TIMEOUT_MS },
    heldReads: () => held.length,
    answerReads: () => held.splice(0).forEach((answer) => answer()),
  };
}

/**
 * The e-stop of the containment tests: what `o` gives, else the rig's own -- a recordingRouter,
 * plant up (providersUp), no fresh reads (a ladder with no read-back reads nothing), the system
 * clock, an errorLog logger, a faultRecordingModes port and the heaterOffLadder.
 */
export function containedEstop(o: Partial<ConstructorParameters<typeof Estop>[0]> = {}): Estop {
  return new Estop({
    router: recordingRouter(),
    inventory: providersUp(),
    reads: {} as FreshReader,
    clock: systemClock,
    log: errorLog().log,
    modes: faultRecordingModes().modes,
    safeState: heaterOffLadder(),
    ...o,
  });
}

/**
 * Provider plant, up, whose device list throws `inventory port failed` while `broken.on`
 * (providerComingBack); `restarted()` tells its inventory changed (the plan is made again when
 * next asked for), then that it is up again.
 */
export function brittleInventory() {
  const broken = { on: false };
  const plant = providerComingBack("plant", () => {
    if (broken.on) throw new Error("inventory port failed");
    return [];
  });
  return {
    inventory: plant.inventory,
    host: plant.host,
    broken,
    restarted: () => {
      plant.changed();
      plant.comeBack();
    },
  };
}

/**
 * containedEstop over brittleInventory (`broken.on` from the start if `o.broken`), with `o.safeState`
 * (default the heaterOffLadder): its calls recorded in `made`, FAULT in `fault`, its ERROR lines
 * in `errors`, the latch securing it hands the modes port kept (`latchSecuring()`).
 */
export function brittleEstop(o: { broken?: boolean; safeState?: SafeStateConfig } = {}) {
  const made: string[] = [];
  const { inventory, host, broken, restarted } = brittleInventory();
  broken.on = o.broken ?? false;
  const fault = faultRecordingModes();
  let latchSecuring: LatchSecuring | undefined;
  fault.modes.setLatchSecuring = (s) => (latchSecuring = s);
  const { log, errors } = errorLog();
  const estop = containedEstop({
    router: recordingRouter(made),
    inventory,
    log,
    modes: fault.modes,
    ...(o.safeState === undefined ? {} : { safeState: o.safeState }),
  });
  return {
    estop,
    made,
    fault,
    errors,
    host,
    broken,
    restarted,
    latchSecuring: () => latchSecuring,
  };
}
