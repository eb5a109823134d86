/**
 * The programmable provider (tests/helpers/_programmable_provider.ts, a real child process) and
 * a fixture around it: a ProviderRegistry and a StateCache built directly (no Runtime, no poll
 * loop unless asked), every published event recorded, every log line kept, and a wall clock the
 * test sets (the monotonic clock stays real: supervision and deadlines run on real timers).
 */
import type { SpawnFn } from "../../src/common/mod.ts";
import type { ProviderConfig, RestartPolicyConfig } from "../../src/config/mod.ts";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { LineLogger, spawnProcess } from "../../src/host/mod.ts";
import { type ProviderHost, ProviderRegistry } from "../../src/providers/mod.ts";
import { StateCache } from "../../src/state/mod.ts";
import { WireValueType } from "../../src/adpp/mod.ts";
import { realClearTimer, realSetTimer } from "./clock.ts";

const MAIN = new URL("./_programmable_provider.ts", import.meta.url).pathname;

/** One declared signal: wire value type (0 = unspecified) and poll hint (default 10 Hz). */
export interface SignalDecl {
  readonly id: string;
  readonly type: number;
  readonly hint?: number;
}

/** How a start-up step is answered: after `delayMs`, or never (`hang`). */
export interface StepProgram {
  readonly hang?: boolean;
  readonly delayMs?: number;
}

/** What the provider lists and describes (read from a file when the process starts). */
export interface Inventory {
  /** Hello: protocol version (default the runtime's) and metadata, delayed or never answered. */
  readonly hello?: StepProgram & {
    /** Default the runtime's; null: left out. */
    readonly protocol?: string | null;
    /** Default "programmable"; null: left out. */
    readonly name?: string | null;
    readonly version?: string;
    readonly metadata?: Readonly<Record<string, string>>;
  };
  /** WaitReady (asked when Hello's metadata says supports_wait_ready). */
  readonly waitReady?: StepProgram;
  /** Lines written to stderr at start. */
  readonly stderr?: readonly string[];
  /** Each process appends its pid to this file when it starts. */
  readonly pidFile?: string;
  readonly listDelayMs?: number;
  readonly describeDelayMs?: number;
  /** Once stdin closed (the ADPP stop signal), take this long to exit (code 0). */
  readonly exitDelayMs?: number;
  /** Exit (code 4) when asked to describe this device. */
  readonly exitOnDescribe?: string;
  /** ListDevices order; default: the keys of `devices`. */
  readonly list?: readonly string[];
  readonly devices: Readonly<
    Record<string, {
      readonly signals: readonly SignalDecl[];
      /** ReadSignals answer until the device is programmed (default: no values). */
      readonly values?: readonly Sample[];
      /** How long ReadSignals takes until the device is programmed. */
      readonly readDelayMs?: number;
      readonly tags?: Readonly<Record<string, string>>;
      /** DescribeDevice answers without its Device message. */
      readonly noDevice?: boolean;
    }>
  >;
}

/**
 * One sample of a ReadSignals answer. `type` is the Value's own type field; the member is the
 * one given (`double` may be "NaN"/"Infinity"/"-Infinity"; 64-bit integers as decimal strings;
 * bytes as base64).
 * No member and no type: a sample without a value. `ts`: sample time (epoch ms), absent = none.
 */
export interface Sample {
  readonly id: string;
  readonly type?: number;
  readonly double?: number | string;
  readonly int64?: string;
  readonly uint64?: string;
  readonly bool?: boolean;
  readonly string?: string;
  /** Bytes, as base64 text. */
  readonly bytes?: string;
  readonly quality?: number;
  readonly ts?: number;
}

/** How a request is answered: after `delayMs`, never (`hang`), with a status `error`, or OK. */
export interface AnswerProgram {
  readonly values?: readonly Sample[];
  readonly error?: { readonly code: number; readonly message?: string };
  readonly hang?: boolean;
  readonly delayMs?: number;
  /** GetHealth only: the devices' health in the answer (state: WireDeviceState). */
  readonly devices?: readonly { readonly device_id: string; readonly state: number }[];
}

/** Function 1 `program`: ReadSignals of `device` (default the called one), and GetHealth. */
export interface Program {
  readonly device?: string;
  readonly read?: AnswerProgram;
  readonly health?: AnswerProgram;
}

export const T = WireValueType;
export const Q = { UNSPECIFIED: 0, OK: 1, STALE: 2, FAULT: 3, UNKNOWN: 4 } as const;

/** A sample of a double. */
export function dbl(id: string, v: number | string, o: Partial<Sample> = {}): Sample {
  return { id, type: T.DOUBLE, double: v, quality: Q.OK, ...o };
}

/** A provider entry running the programmable provider with the inventory in `file`. */
export function programmableProvider(
  id: string,
  file: string,
  o: {
    timeoutMs?: number;
    helloTimeoutMs?: number;
    readyTimeoutMs?: number;
    restart?: Partial<RestartPolicyConfig>;
    /**
     * Run under `sh -c SCRIPT`, `PROVIDER` in the script standing for the provider's command
     * (see SH_LINGERING and friends).
     */
    sh?: string;
  } = {},
): ProviderConfig {
  const args = ["run", "--quiet", "--allow-read", "--allow-write", MAIN, file];
  const quoted = [Deno.execPath(), ...args].map((a) => `'${a}'`).join(" ");
  return {
    id,
    ...(o.sh
      ? { command: "sh", args: ["-c", o.sh.replace("PROVIDER", quoted)] }
      : { command: Deno.execPath(), args }),
    timeoutMs: o.timeoutMs ?? 5000,
    helloTimeoutMs: o.helloTimeoutMs ?? 10000,
    readyTimeoutMs: o.readyTimeoutMs ?? 10000,
    restartPolicy: {
      enabled: o.restart !== undefined,
      maxAttempts: 3,
      backoffMs: [0, 0, 0],
      timeoutMs: 30000,
      successResetMs: 60000,
      ...o.restart,
    },
  };
}

/**
 * Once the provider exited (function 3) its stdout closes and the process lives on as `sleep`:
 * a provider process whose session ended while it still runs.
 */
export const SH_LINGERING = "PROVIDER; exec 1>&-; exec sleep 1000";
/**
 * Once the provider exited (function 3) nobody reads its stdin any more, its stdout stays open
 * and the process lives on: the next request cannot be written.
 */
export const SH_DEAF = "PROVIDER; exec 0<&-; exec sleep 1000";
/**
 * A helper holds the provider's stdout; once the provider exited (function 3) the process exits
 * with code 3 while its stdout is still open.
 */
export const SH_EXIT_3 = "sleep 1000 & PROVIDER; exit 3";

/**
 * A wall clock the test sets; monotonic time is real unless the test sets `mono` (then it stands
 * still until set again: only for tests without restarts, whose backoff runs on it).
 */
export class TestClock {
  wallMs = 1_700_000_000_000;
  mono: number | null = null;
  nowMs(): number {
    return this.wallMs;
  }
  monoMs(): number {
    return this.mono ?? performance.now();
  }
  setTimer = realSetTimer;
  clearTimer = realClearTimer;
}

export interface ProgrammableFixture {
  readonly registry: ProviderRegistry;
  readonly host: ProviderHost;
  readonly cache: StateCache;
  readonly clock: TestClock;
  readonly events: RuntimeEvent[];
  readonly lines: string[];
  readonly inventoryFile: string;
  /** Programs the provider (function 1 on `device`). */
  program(device: string, p: Program): Promise<void>;
  /** The provider's counters for `device` (function 2). */
  stats(device: string): Promise<{
    reads: number;
    health: number;
    lastRead: string[] | null;
    /** The Hello and WaitReady requests this process received (null: none). */
    hello: unknown;
    waitReady: unknown;
  }>;
  /** Rewrites the inventory file (read by the next process that starts). */
  setInventory(inv: Inventory): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts the programmable provider `p0` with `inventory` behind a registry and a state cache.
 * With `poll`, the cache's start() runs (one priming pass, then the loop every `intervalMs`);
 * without it nothing polls unless the test calls pollDevice.
 */
export async function startProgrammable(
  inventory: Inventory,
  o: {
    poll?: boolean;
    intervalMs?: number;
    timeoutMs?: number;
    helloTimeoutMs?: number;
    readyTimeoutMs?: number;
    restart?: Partial<RestartPolicyConfig>;
    sh?: string;
    reportedHealthIntervalMs?: number;
    /** health.staleness of the cache (default: derived from intervalMs). */
    staleness?: { warnAfterMs: number; staleAfterMs: number };
    /** A monotonic clock standing at this value from the start (see TestClock). */
    mono?: number;
    /** How provider processes are started (default spawnProcess). */
    spawn?: SpawnFn;
  } = {},
): Promise<ProgrammableFixture> {
  const inventoryFile = await Deno.makeTempFile({ prefix: "programmable-", suffix: ".json" });
  await Deno.writeTextFile(inventoryFile, JSON.stringify(inventory));
  const lines: string[] = [];
  const log = new LineLogger({
    level: "debug",
    journald: false,
    now: () => 0,
    write: (l) => lines.push(l),
  });
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  const clock = new TestClock();
  if (o.mono !== undefined) clock.mono = o.mono;
  const cfg = programmableProvider("p0", inventoryFile, o);
  const registry = new ProviderRegistry([cfg], {
    spawn: o.spawn ?? spawnProcess,
    clock,
    log,
    bus,
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 1000,
  });
  const cache = new StateCache({
    registry,
    bus,
    clock,
    log,
    intervalMs: o.intervalMs ?? 60_000,
    ...(o.staleness ? { staleness: o.staleness } : {}),
    ...(o.reportedHealthIntervalMs !== undefined
      ? { reportedHealthIntervalMs: o.reportedHealthIntervalMs }
      : {}),
  });
  const host = registry.host("p0")!;
  const close = async () => {
    await cache.stop();
    await registry.stopAll(1000);
    await Deno.remove(inventoryFile).catch(() => {});
  };
  try {
    await registry.startAll(30_000, 1000);
    if (o.poll) await cache.start();
  } catch (err) {
    await close();
    throw err;
  }
  const call = (device: string, functionId: number, args: Record<string, string> = {}) =>
    host.request("call", {
      device_id: device,
      function_id: functionId,
      args: Object.fromEntries(
        Object.entries(args).map(([k, v]) => [k, { type: T.STRING, string_value: v }]),
      ),
    });
  return {
    registry,
    host,
    cache,
    clock,
    events,
    lines,
    inventoryFile,
    async program(device, p) {
      await call(device, 1, { answer: JSON.stringify(p) });
    },
    async stats(device) {
      const r = (await call(device, 2)).results ?? {};
      return {
        reads: Number(r.reads?.string_value),
        health: Number(r.health?.string_value),
        lastRead: JSON.parse(r.last_read?.string_value ?? "null"),
        hello: JSON.parse(r.hello?.string_value ?? "null"),
        waitReady: JSON.parse(r.wait_ready?.string_value ?? "null"),
      };
    },
    async setInventory(inv) {
      await Deno.writeTextFile(inventoryFile, JSON.stringify(inv));
    },
    close,
  };
}
