/**
 * The programmable provider and a fixture around it: a ProviderRegistry and a StateCache built
 * directly (no Runtime, no poll loop unless asked), every published event recorded, every log
 * line kept, and a wall clock the test sets (the monotonic clock stays real: supervision and
 * deadlines run on real timers).
 *
 * The provider runs as a real child process (tests/helpers/_programmable_provider.ts: raw frames,
 * requests answered concurrently) or, with `inProcess`, as its in-process twin
 * (programmableProgram: a FakeProvider answering the same inventory and programs, one request at
 * a time, served by the SDK); the tests of a process's own behaviour keep the child.
 */
import type { SpawnFn } from "../../src/common/mod.ts";
import type { ProviderConfig, RestartPolicyConfig } from "../../src/config/mod.ts";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { spawnProcess } from "../../src/host/mod.ts";
import { capturingLogger } from "./log_lines.ts";
import { type ProviderHost, ProviderRegistry } from "../../src/providers/mod.ts";
import { StateCache } from "../../src/state/mod.ts";
import { WireValueType } from "../../src/adpp/mod.ts";
import type { DeviceDefinition } from "../../src/provider_sdk/mod.ts";
import { ADPP_PROTOCOL_VERSION } from "../../src/common/mod.ts";
import { type ManualClock, realClearTimer, realSetTimer, settleOn } from "./clock.ts";
import { type FakeAnswer, FakeProvider } from "./fake_provider.ts";
import {
  type InProcessSpawn,
  inProcessSpawn,
  type ProgramFactory,
  type ProgramHost,
} from "./in_process_provider.ts";
import { wireSample } from "./_programmable_wire.ts";

const MAIN = new URL("./_programmable_provider.ts", import.meta.url).pathname;
/** The child's main module: the key of programmableProgram among in-process programs. */
export const PROGRAMMABLE_MAIN = MAIN;

export { DEFAULT_POLL_HINT_HZ } from "./_programmable_wire.ts";
import { DEFAULT_POLL_HINT_HZ } from "./_programmable_wire.ts";

/**
 * One declared signal: wire value type (0 = unspecified), poll hint (DEFAULT_POLL_HINT_HZ) and
 * its own stale bound (`stale_after_ms`; none by default).
 */
export interface SignalDecl {
  readonly id: string;
  readonly type: number;
  readonly hint?: number;
  readonly staleMs?: number;
  /** Its unit (SignalSpec.unit; none by default). */
  readonly unit?: string;
}

/** How a start-up step is answered: after `delayMs`, or never (`hang`). */
export interface StepProgram {
  readonly hang?: boolean;
  readonly delayMs?: number | undefined;
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
  /** WaitReady (asked when Hello's metadata says supports_wait_ready), and its diagnostics. */
  readonly waitReady?: StepProgram & { readonly diagnostics?: Readonly<Record<string, string>> };
  /** Lines written to stderr at start. */
  readonly stderr?: readonly string[];
  /** Each process appends its pid to this file when it starts. */
  readonly pidFile?: string;
  readonly listDelayMs?: number;
  readonly describeDelayMs?: number;
  /**
   * Each DescribeDevice the child process receives appends its device id and a newline to this
   * file, before `describeDelayMs` (the request is in hand). The in-process twin ignores it.
   */
  readonly describedFile?: string;
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
      readonly values?: readonly Sample[] | undefined;
      /** How long ReadSignals takes until the device is programmed. */
      readonly readDelayMs?: number;
      readonly tags?: Readonly<Record<string, string>>;
      /** DescribeDevice answers without its Device message. */
      readonly noDevice?: boolean;
      /** Functions declared after `program` and `stats`, as on the wire (FunctionSpec). */
      readonly functions?: readonly Record<string, unknown>[];
      /**
       * The child's only: a call of one of `functions` answers OK, the n-th (from 0) programming
       * the device as `calls[n]` says (past the last, as the last), as function 1 `program` does:
       * what the call does to the outputs its reads show. Without it such a call is UNIMPLEMENTED.
       */
      readonly calls?: readonly Program[];
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
  readonly values?: readonly Sample[] | undefined;
  readonly error?: { readonly code: number; readonly message?: string };
  readonly hang?: boolean;
  readonly delayMs?: number | undefined;
  /** GetHealth only: the devices' health in the answer (state: WireDeviceState). */
  readonly devices?: readonly { readonly device_id: string; readonly state: number }[];
  /**
   * ReadSignals only, the child's only: one read is answered as this program says (or hangs), the
   * reads that arrive after it as `then` says (a device gone for exactly one read).
   */
  readonly then?: AnswerProgram;
}

/** Function 1 `program`: ReadSignals of `device` (default the called one), and GetHealth. */
export interface Program {
  readonly device?: string;
  readonly read?: AnswerProgram;
  readonly health?: AnswerProgram;
}

/**
 * An inventory whose host lacks the bus /dev/i2c-1: the provider is up, not ready, with no devices
 * (host_check unmet), as a provider that checks its host answers WaitReady then.
 */
export const HOST_UNMET_I2C1: Inventory = {
  hello: { metadata: { supports_wait_ready: "true" } },
  waitReady: {
    diagnostics: {
      ready: "false",
      device_count: "0",
      host_check: "unmet",
      host_unmet: "i2c.bus_present: /dev/i2c-1 does not exist",
    },
  },
  devices: {},
};

export const T = WireValueType;
export const Q = { UNSPECIFIED: 0, OK: 1, STALE: 2, FAULT: 3, UNKNOWN: 4 } as const;

/** A sample of a double. */
export function dbl(id: string, v: number | string, o: Partial<Sample> = {}): Sample {
  return { id, type: T.DOUBLE, double: v, quality: Q.OK, ...o };
}

/**
 * Programs `device` (default the history rigs' probe) of the programmable provider `host` runs, in
 * its current process, to fail its reads from its next poll on: UNAVAILABLE (14) "bus fault".
 * Shared by the incident tests (tests/history/incident*_test.ts, console_incident_order_test).
 */
export async function programReadFailure(
  host: Pick<ProviderHost, "request">,
  device = "probe",
): Promise<void> {
  await host.request("call", {
    device_id: device,
    function_id: 1,
    args: {
      answer: {
        type: T.STRING,
        string_value: JSON.stringify({ read: { error: { code: 14, message: "bus fault" } } }),
      },
    },
  });
}

/** How an AnswerProgram answers a ReadSignals (the child's applyProgram, then its values). */
function readAnswer(p: AnswerProgram): FakeAnswer<"read_signals"> {
  return {
    ...(p.hang ? { hang: true } : {}),
    ...(p.delayMs ? { delayMs: p.delayMs } : {}),
    ...(p.error
      ? { error: { code: p.error.code, message: p.error.message ?? "programmed error" } }
      : {}),
    reply: (req) => ({ device_id: req.device_id!, values: (p.values ?? []).map(wireSample) }),
  };
}

/** How an AnswerProgram answers a GetHealth (its devices, else an empty answer). */
function healthAnswer(p: AnswerProgram): FakeAnswer<"get_health"> {
  return {
    ...(p.hang ? { hang: true } : {}),
    ...(p.delayMs ? { delayMs: p.delayMs } : {}),
    ...(p.error
      ? { error: { code: p.error.code, message: p.error.message ?? "programmed error" } }
      : {}),
    reply: () => (p.devices ? { devices: [...p.devices] } : {}),
  };
}

/** Applies a Program (function 1 of the child) to the in-process programmable provider. */
export function programFake(fake: FakeProvider, device: string, p: Program): void {
  if (p.read) fake.answer("read_signals", readAnswer(p.read), p.device ?? device);
  if (p.health) fake.answer("get_health", healthAnswer(p.health));
}

/** What function 2 `stats` of the child answers, from the in-process provider's requests. */
export function fakeStats(
  fake: FakeProvider,
  device: string,
): Awaited<ReturnType<ProgrammableFixture["stats"]>> {
  const reads = fake.received("read_signals", device);
  return {
    reads: reads.length,
    health: fake.count("get_health"),
    lastRead: reads.length === 0 ? null : reads[reads.length - 1]!.signal_ids ?? [],
    hello: fake.received("hello").at(-1) ?? null,
    waitReady: fake.received("wait_ready").at(-1) ?? null,
  };
}

/**
 * The programmable provider in-process, answering `inventory` as _programmable_provider.ts does:
 * Hello, WaitReady, ListDevices and DescribeDevice as the inventory says (raw: signals of any
 * declared type, twice, without a Device message), ReadSignals and GetHealth as programmed, and
 * functions 1 `program`, 2 `stats` and 3 `exit` (answers, then exits 0); 4 `garbage` is the
 * child's only. It exits (code 0) as soon as stdin closes, whatever request hangs, as the child
 * does. Unknown devices are NOT_FOUND (the SDK's message).
 */
export function programmableFake(inventory: Inventory, host: ProgramHost): FakeProvider {
  const list = inventory.list ?? Object.keys(inventory.devices);
  const str = (v: string) => ({ type: T.STRING, string_value: v });
  const devices = Object.keys(inventory.devices).map((deviceId): DeviceDefinition => ({
    deviceId,
    typeId: "test.programmable",
    typeVersion: "",
    label: "",
    signals: [],
    functions: [
      {
        id: 1,
        name: "program",
        category: "READ" as const,
        precheckArgs: false,
        args: [{ name: "answer", type: "string" as const, required: false }],
        handler: (args) => {
          programFake(
            fake,
            deviceId,
            JSON.parse(args.has("answer") ? args.string("answer") : "{}"),
          );
        },
      },
      {
        id: 2,
        name: "stats",
        category: "READ" as const,
        handler: () => {
          const s = fakeStats(fake, deviceId);
          return {
            reads: str(String(s.reads)),
            health: str(String(s.health)),
            last_read: str(JSON.stringify(s.lastRead)),
            hello: str(JSON.stringify(s.hello)),
            wait_ready: str(JSON.stringify(s.waitReady)),
          };
        },
      },
      {
        id: 3,
        name: "exit",
        category: "READ" as const,
        handler: (_args, ctx) => void ctx.afterReply(() => host.exit(0)),
      },
    ],
  }));
  const fake = new FakeProvider(devices, { host });
  const h = inventory.hello ?? {};
  fake.answer("hello", {
    ...(h.hang ? { hang: true } : {}),
    ...(h.delayMs ? { delayMs: h.delayMs } : {}),
    reply: {
      ...(h.protocol !== null ? { protocol_version: h.protocol ?? ADPP_PROTOCOL_VERSION } : {}),
      ...(h.name !== null ? { provider_name: h.name ?? "programmable" } : {}),
      ...(h.version ? { provider_version: h.version } : {}),
      ...(h.metadata ? { metadata: { ...h.metadata } } : {}),
    },
  });
  const w = inventory.waitReady ?? {};
  fake.answer("wait_ready", {
    ...(w.hang ? { hang: true } : {}),
    ...(w.delayMs ? { delayMs: w.delayMs } : {}),
    reply: {},
  });
  fake.answer("list_devices", {
    ...(inventory.listDelayMs ? { delayMs: inventory.listDelayMs } : {}),
    reply: { devices: list.map((device_id) => ({ device_id })) },
  });
  for (const [deviceId, dev] of Object.entries(inventory.devices)) {
    fake.answer("describe_device", {
      ...(inventory.describeDelayMs ? { delayMs: inventory.describeDelayMs } : {}),
      ...(inventory.exitOnDescribe === deviceId ? { exit: 4 } : {}),
      reply: {
        ...(dev.noDevice ? {} : {
          device: { device_id: deviceId, type_id: "test.programmable", tags: { ...dev.tags } },
        }),
        capabilities: {
          signals: dev.signals.map((s) => ({
            signal_id: s.id,
            name: s.id,
            value_type: s.type,
            poll_hint_hz: s.hint ?? DEFAULT_POLL_HINT_HZ,
            ...(s.staleMs === undefined ? {} : { stale_after_ms: s.staleMs }),
            ...(s.unit === undefined ? {} : { unit: s.unit }),
          })),
          functions: [
            { function_id: 1, name: "program", policy: { category: 1 }, args: [] },
            { function_id: 2, name: "stats", policy: { category: 1 }, args: [] },
            ...(dev.functions ?? []),
          ],
        },
      },
    }, deviceId);
    fake.answer(
      "read_signals",
      readAnswer({ values: dev.values, delayMs: dev.readDelayMs }),
      deviceId,
    );
  }
  fake.answer("get_health", healthAnswer({}));
  for (const line of inventory.stderr ?? []) host.stderr(line);
  return fake;
}

/** The in-process program of PROGRAMMABLE_MAIN: the inventory is read from its file at start. */
export const programmableProgram: ProgramFactory = (host) => ({
  handler: programmableFake(JSON.parse(Deno.readTextFileSync(host.args[0]!)) as Inventory, host),
  exitOnStdinEof: true,
});

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
  /**
   * Programs the provider (function 1 on `device`). Resolves with the ReadSignals the programmed
   * device (`p.device` or `device`) had received when the program took effect: those after it are
   * answered as programmed (a later `stats` may already count one of them).
   */
  program(device: string, p: Program): Promise<number>;
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
  /**
   * Sends `signal` (default SIGKILL) to the provider's current process (in-process: its fake
   * process); resolves with that process's pid.
   */
  kill(signal?: "SIGTERM" | "SIGKILL"): number;
  /** The in-process spawn (null for a real child). */
  readonly fakes: InProcessSpawn | null;
  close(): Promise<void>;
}

/**
 * Starts the programmable provider `p0` (or `o.providerId`) with `inventory` behind a registry and a state cache.
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
    /** Runs the provider in-process (programmableProgram) instead of as a child. */
    inProcess?: boolean;
    /**
     * Time and every timer of the registry and the cache (not the TestClock `clock`): nothing
     * time-driven happens unless the test moves it. Start and close fire its due timers.
     */
    manual?: ManualClock;
    /** The provider's configured id (default `p0`). */
    providerId?: string;
  } = {},
): Promise<ProgrammableFixture> {
  const inventoryFile = await Deno.makeTempFile({ prefix: "programmable-", suffix: ".json" });
  await Deno.writeTextFile(inventoryFile, JSON.stringify(inventory));
  const { log, lines } = capturingLogger({ now: () => 0 });
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  const clock = new TestClock();
  if (o.mono !== undefined) clock.mono = o.mono;
  const providerId = o.providerId ?? "p0";
  const cfg = programmableProvider(providerId, inventoryFile, o);
  const fakes = o.inProcess ? inProcessSpawn({ [MAIN]: programmableProgram }) : null;
  const runtimeClock = o.manual ?? clock;
  const registry = new ProviderRegistry([cfg], {
    spawn: fakes?.spawn ?? o.spawn ?? spawnProcess,
    clock: runtimeClock,
    log,
    bus,
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 1000,
  });
  const cache = new StateCache({
    registry,
    bus,
    clock: runtimeClock,
    log,
    intervalMs: o.intervalMs ?? 60_000,
    ...(o.staleness ? { staleness: o.staleness } : {}),
    ...(o.reportedHealthIntervalMs !== undefined
      ? { reportedHealthIntervalMs: o.reportedHealthIntervalMs }
      : {}),
  });
  const host = registry.host(providerId)!;
  const settle = <T>(p: Promise<T>) => o.manual ? settleOn(o.manual, p) : p;
  const close = async () => {
    await settle(cache.stop());
    await settle(registry.stopAll(1000));
    await Deno.remove(inventoryFile).catch(() => {});
  };
  try {
    await settle(registry.startAll(30_000, 1000));
    if (o.poll) await settle(cache.start());
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
  /** The in-process provider of the current session. */
  const fake = () => {
    const pid = host.session?.pid;
    const handler = pid === undefined ? undefined : fakes!.process(pid)?.handler;
    if (!(handler instanceof FakeProvider)) throw new Error("p0 is not running");
    return handler;
  };
  return {
    registry,
    host,
    cache,
    clock,
    events,
    lines,
    inventoryFile,
    fakes,
    async program(device, p) {
      if (fakes) {
        programFake(fake(), device, p);
        return fakeStats(fake(), p.device ?? device).reads;
      }
      const r = (await call(device, 1, { answer: JSON.stringify(p) })).results ?? {};
      return Number(r.reads?.string_value);
    },
    async stats(device) {
      if (fakes) return await Promise.resolve(fakeStats(fake(), device));
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
    kill(signal = "SIGKILL") {
      const pid = host.session!.pid;
      if (fakes) fakes.process(pid)!.kill(signal);
      else Deno.kill(pid, signal);
      return pid;
    },
    close,
  };
}
