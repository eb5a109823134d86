import {
  AdppClient,
  capabilitiesFromWire,
  isOtherDeviceAnswer,
  MAX_DEVICES_PER_PROVIDER,
  type PayloadKind,
  type PreparedRead,
  type ReadReply,
  type Reply,
  type RequestPayloads,
  type ResponsePayloads,
  type SampleBatch,
  type SessionEnd,
} from "../adpp/mod.ts";
import {
  ADPP_PROTOCOL_VERSION,
  type Clock,
  type DeviceCapabilities,
  errorMessage,
  type FunctionSpec,
  hasControlCharacter,
  type Logger,
  type LogLevel,
  namedProviderId,
  type ProviderProcess,
  providerText,
  providerTextWithin,
  quoteProviderText as quote,
  quoteProviderTextWithin,
  raceTimeout,
  RUNTIME_VERSION,
  RuntimeError,
  type SignalSpec,
  type SpawnFn,
  type TimerId,
  toRuntimeError,
  unavailable,
} from "../common/mod.ts";
import type { ProviderConfig } from "../config/mod.ts";
import { hostCheckOf, hostUnmet, MAX_HOST_SUMMARY_CHARS } from "./host_check.ts";

/** The bound on a ListDevices answer: in adpp/, shared with the provider SDK; exported here too. */
export { MAX_DEVICES_PER_PROVIDER };

/** Name the runtime introduces itself with in Hello (the anolis client name, for compatibility). */
export const CLIENT_NAME = "anolis-runtime";
/** Bound on provider stderr lines logged per second; the rest is counted and summarised. */
export const STDERR_LINES_PER_SECOND = 20;
/**
 * Bound on the stderr lines stating WARN or ERROR (stderrLineLevel) logged per second, counted
 * apart from the others: a provider's flood of chatty lines (DEBUG ones the runtime may not even
 * show) must not suppress its warnings and errors, as the process log keeps room for those
 * (LOG_QUEUE_WARN_RESERVE_BYTES). The rest is counted and summarised with the others.
 */
export const STDERR_WARN_LINES_PER_SECOND = 20;
/** Longest stderr line kept (longer lines are cut). */
const STDERR_MAX_LINE = 2000;
/** A provider's last stderr lines quoted in its start-up failure message (its last words). */
export const STDERR_TAIL_LINES = 5;
/** Longest stderr line quoted in a start-up failure message (longer lines are cut). */
const STDERR_TAIL_LINE_CHARS = 300;
/**
 * How long a failed start-up waits for the provider's stderr to end before quoting its last
 * lines (a process that just exited may still have lines in the pipe).
 */
export const STDERR_DRAIN_WAIT_MS = 500;
/**
 * A level word at the start of a stderr line, bare (`ERROR msg`, `WARN: msg`) or bracketed
 * (`[warn] msg`), as the SDK's stderr logger and C/C++ providers write it.
 */
const STDERR_LEVEL =
  /^\s*(?:\[(error|err|fatal|critical|crit|warning|warn|info|debug|trace)\]|(error|err|fatal|critical|crit|warning|warn|info|debug|trace)(?=[:\s]|$))/i;
const STDERR_LEVELS: Readonly<Record<string, LogLevel>> = {
  error: "error",
  err: "error",
  fatal: "error",
  critical: "error",
  crit: "error",
  warning: "warn",
  warn: "warn",
  info: "info",
  debug: "debug",
  trace: "debug",
};

/**
 * `provider's last stderr lines: "...", "..."` (each quoted, cut at STDERR_TAIL_LINE_CHARS): what a
 * start-up failure message quotes; "" for none.
 */
export function lastStderrLines(tail: readonly string[]): string {
  if (tail.length === 0) return "";
  const quoted = tail.map((l) => quoteProviderTextWithin(l, STDERR_TAIL_LINE_CHARS)).join(", ");
  return `provider's last stderr line${tail.length === 1 ? "" : "s"}: ${quoted}`;
}

/**
 * The level a provider stderr line states with its first word (`ERROR`, `[WARN]`, `info:`, ...;
 * FATAL/CRITICAL count as error, TRACE as debug), or null when it states none (logged as info).
 */
export function stderrLineLevel(line: string): LogLevel | null {
  const m = STDERR_LEVEL.exec(line);
  return m ? STDERR_LEVELS[(m[1] ?? m[2])!.toLowerCase()] ?? null : null;
}
/**
 * Most signals one DescribeDevice answer may declare (every entry counted, a signal declared twice
 * included). A device declaring more is skipped with a discovery warning naming it, the count and
 * the bound; the provider's other devices are kept. Without it only the frame bound
 * (MAX_FRAME_BYTES, 1 MiB: tens of thousands of one-letter ids) would limit what one device makes
 * the runtime keep per signal: a state slot, a history ring (its first 16 entries, 208 bytes, are
 * counted in `history.memory_max_bytes` when they fit: 10,000 such rings fill the default 2 MiB,
 * stop every other ring from growing and leave the rest with no room), a Sparkplug alias and
 * DBIRTH metric, and an id in each ReadSignals request. 1024 is what the poll supports: a
 * ReadSignals answer of 1024 samples leaves each 1 KiB of the 1 MiB frame (a double of a short id
 * takes some 40 bytes), and the first history rings of such a device take a tenth of the default
 * budget.
 */
export const MAX_SIGNALS_PER_DEVICE = 1024;
/**
 * Most functions one DescribeDevice answer may declare (every entry counted). A device declaring
 * more is skipped as for MAX_SIGNALS_PER_DEVICE. Each function is a Sparkplug DBIRTH metric (with
 * its arguments as properties) beside the signals' in one MQTT message, an entry of the device's
 * capabilities in every answer that lists them, and a function_id the call path looks up: 1024, as
 * for signals, keeps one device's DBIRTH and capabilities within what its signals may take.
 */
export const MAX_FUNCTIONS_PER_DEVICE = 1024;
/** Discovery warnings kept per session (provider health `discovery_warnings`); the rest counted. */
export const MAX_DISCOVERY_WARNINGS = 20;
/** Longest discovery warning (a provider's error message inside it is cut). */
const WARNING_CHARS = 300;
/** How a discovery warning that skipped its device ends. */
const SKIPPED = "device skipped";
/** What a discovery warning says of a function it drops (its device is kept). */
const FUNCTION_SKIPPED = "function skipped";

/** True once `exited` settles, false when `signal` aborts first. */
function exitedUnlessAborted(exited: Promise<unknown>, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = () => resolve(false);
    signal.addEventListener("abort", onAbort, { once: true });
    const gone = () => {
      signal.removeEventListener("abort", onAbort);
      resolve(true);
    };
    exited.then(gone, gone);
  });
}

/**
 * What a DescribeDevice answer declares beyond MAX_SIGNALS_PER_DEVICE or MAX_FUNCTIONS_PER_DEVICE
 * (`5000 signals, more than MAX_SIGNALS_PER_DEVICE (1024)`), counted on the wire before anything
 * is made of it; null when it keeps within both.
 */
function tooManyDeclared(desc: ResponsePayloads["describe_device"]): string | null {
  const signals = desc.capabilities?.signals?.length ?? 0;
  if (signals > MAX_SIGNALS_PER_DEVICE) {
    return `${signals} signals, more than MAX_SIGNALS_PER_DEVICE (${MAX_SIGNALS_PER_DEVICE})`;
  }
  const functions = desc.capabilities?.functions?.length ?? 0;
  if (functions > MAX_FUNCTIONS_PER_DEVICE) {
    return `${functions} functions, more than MAX_FUNCTIONS_PER_DEVICE (${MAX_FUNCTIONS_PER_DEVICE})`;
  }
  return null;
}

/**
 * The ids a device declares more than one signal under, in order of their second declaration.
 * Every part of the runtime keys a signal by its id (its cached sample, poll plan, stale bound,
 * Sparkplug alias): one declaration must hold for all of them, so the first is kept (as for a
 * parameter declared twice) and the others dropped, with a warning.
 */
function signalsDeclaredTwice(caps: DeviceCapabilities): string[] {
  const seen = new Set<string>();
  // A Set keeps insertion order: the ids in order of their second declaration, each once.
  const twice = new Set<string>();
  for (const s of caps.signals) {
    if (!seen.has(s.signalId)) seen.add(s.signalId);
    else twice.add(s.signalId);
  }
  return [...twice];
}

/** The first declaration of each signal id, in declaration order. */
function firstDeclarations(signals: readonly SignalSpec[]): SignalSpec[] {
  const seen = new Set<string>();
  return signals.filter((s) => {
    if (seen.has(s.signalId)) return false;
    seen.add(s.signalId);
    return true;
  });
}

/**
 * The function ids a device's functions declare more than once, with the names declaring each,
 * and the functions with every one sharing an id that another declaration of it actuates made
 * actuating. A call selects a function by its id (the first declaring it) or by its name, while
 * the provider runs what its own table maps the id to: a READ and an ACTUATE function under one
 * id would let a call by that id pass the e-stop latch and the mode gate as a read. Taken as
 * actuating, every declaration of the id is gated as the one that may run.
 */
function functionIdsDeclaredTwice(
  functions: DeviceCapabilities["functions"],
): {
  twice: { functionId: number; names: string[] }[];
  functions: DeviceCapabilities["functions"];
} {
  const byId = new Map<number, FunctionSpec[]>();
  for (const f of functions) {
    const same = byId.get(f.functionId);
    if (same) same.push(f);
    else byId.set(f.functionId, [f]);
  }
  const twice: { functionId: number; names: string[] }[] = [];
  const actuatingIds = new Set<number>();
  for (const [functionId, same] of byId) {
    if (same.length < 2) continue;
    twice.push({ functionId, names: same.map((f) => f.name) });
    if (same.some((f) => f.actuating)) actuatingIds.add(functionId);
  }
  if (twice.length === 0) return { twice, functions };
  return {
    twice,
    functions: functions.map((f) =>
      actuatingIds.has(f.functionId) && !f.actuating ? { ...f, actuating: true } : f
    ),
  };
}

/**
 * The function names and argument names a device's functions declare more than once, and the
 * functions with the first declaration of each argument name kept (the others dropped): every
 * consumer -- conversion of declared calls, validation, capabilities, Sparkplug -- then reads the
 * same declaration, as for a signal declared twice.
 */
function argumentsDeclaredTwice(
  caps: DeviceCapabilities,
): {
  /** `at`: the function's index in `caps.functions` (and in `functions`). */
  twice: { fn: string; arg: string; at: number }[];
  functions: DeviceCapabilities["functions"];
} {
  const twice: { fn: string; arg: string; at: number }[] = [];
  const functions = caps.functions.map((f, at) => {
    const seen = new Set<string>();
    const dropped = new Set<string>();
    const args = f.args.filter((a) => {
      if (!seen.has(a.name)) {
        seen.add(a.name);
        return true;
      }
      if (!dropped.has(a.name)) twice.push({ fn: f.name, arg: a.name, at });
      dropped.add(a.name);
      return false;
    });
    return dropped.size === 0 ? f : { ...f, args };
  });
  return { twice, functions };
}

/**
 * Why a function is refused for a control character in its name or in one of its argument names
 * (what comes after the device in its warning), or null. Its names are ids: a call, the audit
 * journal, the capabilities answer and Sparkplug carry them as they are.
 */
function functionControlCharacter(f: FunctionSpec): string | null {
  if (hasControlCharacter(f.name)) return `declares function ${quote(f.name)}`;
  const arg = f.args.find((a) => hasControlCharacter(a.name));
  if (arg === undefined) return null;
  return `function ${quote(f.name)} declares argument ${quote(arg.name)}`;
}

/** Device ids that cannot be addressed as a URL path segment (RFC 3986 dot-segments). */
const UNADDRESSABLE_IDS: ReadonlySet<string> = new Set([".", ".."]);

export interface ProviderSessionDeps {
  readonly spawn: SpawnFn;
  readonly log: Logger;
  /**
   * Time and timers: the ADPP session's deadlines, the stderr rate window, the waits of
   * terminate().
   */
  readonly clock: Pick<Clock, "monoMs" | "setTimer" | "clearTimer">;
  /** Working directory for the provider process (the config file's folder). */
  readonly cwd: string;
}

export interface HelloInfo {
  readonly providerName: string;
  readonly providerVersion: string;
  readonly metadata: Readonly<Record<string, string>>;
}

/**
 * One provider process and its ADPP session, used once: a restart builds a new session.
 * `ended` resolves when either the process exits or the session breaks (the process is then killed).
 */
export class ProviderSession {
  readonly #cfg: ProviderConfig;
  readonly #deps: ProviderSessionDeps;
  readonly #proc: ProviderProcess;
  readonly #client: AdppClient;
  #exitCode: number | null = null;
  #terminating = false;
  /**
   * Whether terminate() had begun when the handshake or discovery failed (judged as the failure
   * came, before the wait for its stderr): the runtime ended it. Null until one failed.
   */
  #failedTerminating: boolean | null = null;
  /** The last STDERR_TAIL_LINES non-blank stderr lines (rate-limited ones included). */
  readonly #stderrTail: string[] = [];
  /** Settles once the provider's stderr has ended and every line was handled. */
  readonly #stderrDone: Promise<void>;
  /** GetHealth support: unknown until tried, then remembered for the session. */
  supportsGetHealth: boolean | null = null;
  hello: HelloInfo | null = null;
  /**
   * What discovery refused (devices skipped and why), at most MAX_DISCOVERY_WARNINGS entries
   * (the last one then says how many more there were). Empty before discovery.
   */
  discoveryWarnings: readonly string[] = [];
  /** WaitReady's diagnostics (set by the handshake; null when the provider has no WaitReady). */
  readiness: Readonly<Record<string, string>> | null = null;
  readonly ended: Promise<string>;

  constructor(cfg: ProviderConfig, command: string, deps: ProviderSessionDeps) {
    this.#cfg = cfg;
    this.#deps = deps;
    try {
      this.#proc = deps.spawn({ command, args: cfg.args, cwd: deps.cwd });
    } catch (err) {
      // The configured id (any length) cut, as every line naming a provider cuts it; the command
      // (configured, any length and any character) cut and quoted, as the config's messages
      // quote it (the host's spawn names it in none of its errors: spawnProcess).
      throw unavailable(
        `cannot start provider '${namedProviderId(cfg.id)}' (${quote(command)}): ${
          errorMessage(err)
        }`,
        err,
      );
    }
    this.#client = new AdppClient(this.#proc.stdout, this.#proc.stdin, { clock: deps.clock });
    this.#stderrDone = this.#pumpStderr(this.#proc.stderr);
    const exited = this.#proc.exited.then((s) => {
      this.#exitCode = s.code;
      return s.signal ? `process ended by ${s.signal}` : `process exited with code ${s.code}`;
    });
    const broken = this.#client.ended.then((end: SessionEnd) => {
      if (end.reason === "protocol_violation" || end.reason === "transport_error") {
        deps.log.warn(`session broken (${end.reason}): ${end.message}; killing the process`);
        this.#proc.kill("SIGKILL");
      }
      return `session ended: ${end.message}`;
    });
    this.ended = Promise.race([exited, broken]);
  }

  get pid(): number {
    return this.#proc.pid;
  }

  get exitCode(): number | null {
    return this.#exitCode;
  }

  /** Requests sent and not yet answered, expired or failed. */
  get inFlight(): number {
    return this.#client.inFlight;
  }

  /** Poll reads sendRead takes now (AdppClient.readRoom). */
  get readRoom(): number {
    return this.#client.readRoom;
  }

  get lastFrameAtMs(): number {
    return this.#client.lastFrameAtMs;
  }

  /**
   * A wait for the calls sent on this session so far: resolves true once none of them is late
   * (see AdppClient.lateCallsAnswered) and, when the session ended while the provider held one
   * (closed by terminate(), whose budget the provider may use to carry it out), once the process
   * has exited; false when `signal` aborts first.
   */
  lateCallsWait(): (signal: AbortSignal) => Promise<boolean> {
    const beforeId = this.#client.nextRequestId;
    return async (signal) => {
      if (!await this.#client.lateCallsAnswered(beforeId, signal)) return false;
      if (!this.#client.endedWithCallsBefore(beforeId)) return true;
      return await exitedUnlessAborted(this.#proc.exited, signal);
    };
  }

  /** Sends one request on this session (see AdppClient.request). */
  request<K extends PayloadKind>(
    kind: K,
    payload: RequestPayloads[K],
    timeoutMs: number = this.#cfg.timeoutMs,
  ): Promise<ResponsePayloads[K]> {
    return this.#client.request(kind, payload, timeoutMs);
  }

  /** `request` without a promise (see AdppClient.send). */
  send<K extends PayloadKind>(
    kind: K,
    payload: RequestPayloads[K],
    timeoutMs: number,
    reply: Reply<K>,
  ): void {
    this.#client.send(kind, payload, timeoutMs, reply);
  }

  /** A ReadSignals decoded into `into` (see AdppClient.sendRead). */
  sendRead(
    request: PreparedRead,
    timeoutMs: number,
    into: SampleBatch,
    reply: ReadReply,
  ): void {
    this.#client.sendRead(request, timeoutMs, into, reply);
  }

  /**
   * Whether the handshake or discovery failed once terminate() had begun (the runtime ended the
   * session under it), judged when it failed; null when neither failed.
   */
  get failedTerminating(): boolean | null {
    return this.#failedTerminating;
  }

  /** The provider's last stderr lines, oldest first (at most STDERR_TAIL_LINES). */
  get stderrTail(): readonly string[] {
    return [...this.#stderrTail];
  }

  /**
   * Hello (protocol check), then WaitReady when the provider advertises it. A failure names the
   * provider's last stderr lines, which usually say why.
   */
  async handshake(): Promise<HelloInfo> {
    try {
      return await this.#handshake();
    } catch (err) {
      this.#failedTerminating ??= this.#terminating;
      throw await this.#withStderrTail(err);
    }
  }

  /**
   * Discovery (see #discover); a failure names the provider's last stderr lines, like Hello's.
   */
  async discover(): Promise<DeviceCapabilities[]> {
    try {
      return await this.#discover();
    } catch (err) {
      this.#failedTerminating ??= this.#terminating;
      throw await this.#withStderrTail(err);
    }
  }

  /**
   * `err` with the provider's last stderr lines appended to its message (same code), once its
   * stderr has ended or STDERR_DRAIN_WAIT_MS have passed; `err` itself when there are none.
   */
  async #withStderrTail(err: unknown): Promise<unknown> {
    // Once stderr has ended the process is exiting: its exit code is then known too.
    await raceTimeout(
      this.#deps.clock,
      this.#stderrDone.then(() => this.#proc.exited),
      STDERR_DRAIN_WAIT_MS,
      null,
    );
    if (this.#stderrTail.length === 0) return err;
    const e = toRuntimeError(err);
    return new RuntimeError(e.code, `${e.message}; ${lastStderrLines(this.#stderrTail)}`, {
      cause: err,
    });
  }

  async #handshake(): Promise<HelloInfo> {
    const hello = await this.request("hello", {
      protocol_version: ADPP_PROTOCOL_VERSION,
      client_name: CLIENT_NAME,
      client_version: RUNTIME_VERSION,
    }, this.#cfg.helloTimeoutMs).catch((err) => {
      throw wrap(err, "Hello failed");
    });
    if (hello.protocol_version !== ADPP_PROTOCOL_VERSION) {
      throw new RuntimeError(
        "FAILED_PRECONDITION",
        `provider speaks protocol '${
          providerText(hello.protocol_version ?? "")
        }', expected '${ADPP_PROTOCOL_VERSION}'`,
      );
    }
    this.hello = {
      providerName: hello.provider_name ?? "",
      providerVersion: hello.provider_version ?? "",
      metadata: { ...(hello.metadata ?? {}) },
    };
    this.#deps.log.info(
      `hello: ${quote(this.hello.providerName)} ${
        quote(this.hello.providerVersion)
      } (pid ${this.pid})`,
    );
    if (this.hello.metadata["supports_wait_ready"] === "true") {
      const ready = await this.request("wait_ready", {
        max_wait_ms_hint: this.#cfg.readyTimeoutMs,
      }, this.#cfg.readyTimeoutMs).catch((err) => {
        throw wrap(err, "WaitReady failed");
      });
      this.readiness = { ...(ready.diagnostics ?? {}) };
      const host = hostCheckOf(this.readiness);
      // The provider's text: quoted and cut (PROVIDER_TEXT_CHARS), as its Hello name is.
      const initTime = this.readiness["init_time_ms"];
      this.#deps.log.info(
        `ready (init_time_ms ${initTime === undefined ? "not reported" : quote(initTime)}${
          host ? `, host_check ${host.status}` : ""
        })`,
      );
      if (host?.status === "unmet") {
        // Quoted (the provider's text, cut where it is read): not in the API's host_check.
        const summary = host.summary === ""
          ? "(no summary)"
          : quoteProviderTextWithin(host.summary, MAX_HOST_SUMMARY_CHARS);
        this.#deps.log.warn(`host requirements unmet: ${summary}`);
      }
    }
    return this.hello;
  }

  /**
   * ListDevices, then DescribeDevice per device in list order. Each device is keyed by the id that
   * was asked for, so device ids are unique whatever the provider sends: a device without an id,
   * a duplicate, an id that is not addressable as a URL path segment (`.`, `..`), an id with a
   * control character (U+0000-U+001F, U+007F-U+009F; so is a device declaring a signal id with
   * one, before it reaches log lines, URLs, the journals or InfluxDB tags), a failing
   * DescribeDevice, and an answer describing another device are each skipped with a warning
   * (logged, and kept in `discoveryWarnings` for provider health), as is a device declaring more
   * than MAX_SIGNALS_PER_DEVICE signals or MAX_FUNCTIONS_PER_DEVICE functions. A function whose
   * name or one of whose argument names has a control character is skipped alone, with a warning,
   * its device and other functions kept (it still counts for a function_id it shares: see
   * functionIdsDeclaredTwice). A list longer than
   * MAX_DEVICES_PER_PROVIDER is refused as a whole (UNAVAILABLE, the start fails).
   */
  async #discover(): Promise<DeviceCapabilities[]> {
    const list = await this.request("list_devices", {}).catch((err) => {
      throw wrap(err, "ListDevices failed");
    });
    const listed = list.devices?.length ?? 0;
    if (listed > MAX_DEVICES_PER_PROVIDER) {
      throw unavailable(
        `ListDevices listed ${listed} devices, more than MAX_DEVICES_PER_PROVIDER ` +
          `(${MAX_DEVICES_PER_PROVIDER}): the inventory is refused`,
      );
    }
    const out: DeviceCapabilities[] = [];
    const seen = new Set<string>();
    const warnings: string[] = [];
    let extra = 0; // warnings beyond MAX_DISCOVERY_WARNINGS: counted, neither kept nor logged
    let extraKept = 0; // of those, the ones that skipped no device
    const warn = (why: string, outcome: string) => {
      if (warnings.length === MAX_DISCOVERY_WARNINGS) {
        extra++;
        if (outcome !== SKIPPED) extraKept++;
        return;
      }
      const line = `${providerTextWithin(why, WARNING_CHARS)}; ${outcome}`;
      this.#deps.log.warn(`discovery: ${line}`);
      warnings.push(line);
    };
    const skip = (why: string) => warn(why, SKIPPED);
    for (const d of list.devices ?? []) {
      const id = d.device_id ?? "";
      if (!id) {
        skip("ListDevices returned a device without id");
        continue;
      }
      if (seen.has(id)) {
        skip(`ListDevices returned device ${quote(id)} more than once`);
        continue;
      }
      seen.add(id);
      if (UNADDRESSABLE_IDS.has(id)) {
        skip(`device id ${quote(id)} cannot be addressed as a URL path segment`);
        continue;
      }
      if (hasControlCharacter(id)) {
        skip(`device id ${quote(id)} has a control character`);
        continue;
      }
      let desc: ResponsePayloads["describe_device"];
      try {
        desc = await this.request("describe_device", { device_id: id });
      } catch (err) {
        if (!this.#client.open) throw wrap(err, `DescribeDevice ${quote(id)} failed`);
        skip(`DescribeDevice ${quote(id)} failed: ${errorMessage(err)}`);
        continue;
      }
      const answered = desc.device?.device_id ?? "";
      if (isOtherDeviceAnswer(id, answered)) {
        skip(`DescribeDevice ${quote(id)} answered for device ${quote(answered)}`);
        continue;
      }
      const declared = tooManyDeclared(desc);
      if (declared !== null) {
        skip(`DescribeDevice ${quote(id)} declares ${declared}`);
        continue;
      }
      const controlSignal = desc.capabilities?.signals?.find((s) =>
        hasControlCharacter(s.signal_id ?? "")
      );
      if (controlSignal !== undefined) {
        skip(
          `DescribeDevice ${quote(id)} declares signal ${
            quote(controlSignal.signal_id ?? "")
          }, which has a control character`,
        );
        continue;
      }
      const caps = capabilitiesFromWire(this.#cfg.id, id, desc);
      // Indices into caps.functions of the functions refused for a control character.
      const refused = new Set<number>();
      caps.functions.forEach((f, at) => {
        const why = functionControlCharacter(f);
        if (why === null) return;
        refused.add(at);
        warn(`DescribeDevice ${quote(id)} ${why}, which has a control character`, FUNCTION_SKIPPED);
      });
      const twice = signalsDeclaredTwice(caps);
      for (const signalId of twice) {
        warn(
          `DescribeDevice ${quote(id)} declares signal ${quote(signalId)} more than once`,
          "the first declaration is kept",
        );
      }
      const args = argumentsDeclaredTwice(caps);
      for (const { fn, arg, at } of args.twice) {
        if (refused.has(at)) continue;
        warn(
          `DescribeDevice ${quote(id)} function ${quote(fn)} declares argument ${
            quote(arg)
          } more than once`,
          "the first declaration is kept",
        );
      }
      // Over every declaration, the refused included: a READ sharing its id with a refused ACTUATE
      // function is still taken as actuating (the provider may run the refused one by that id).
      const shared = functionIdsDeclaredTwice(args.functions);
      for (const { functionId, names } of shared.twice) {
        warn(
          `DescribeDevice ${quote(id)} declares function_id ${functionId} more than once (${
            names.map(quote).join(", ")
          })`,
          "a call by that id is taken as actuating",
        );
      }
      const unchanged = twice.length === 0 && args.twice.length === 0 &&
        shared.twice.length === 0 && refused.size === 0;
      out.push(
        unchanged ? caps : {
          ...caps,
          signals: firstDeclarations(caps.signals),
          functions: shared.functions.filter((_, at) => !refused.has(at)),
        },
      );
    }
    if (extra > 0) {
      const what = extraKept === 0 ? "devices skipped" : "discovery warnings";
      warnings[MAX_DISCOVERY_WARNINGS - 1] = `${extra + 1} more ${what}`;
      this.#deps.log.warn(`discovery: ${extra} more ${what}`);
    }
    this.discoveryWarnings = warnings;
    // Up but not ready (executable profile v1 sec. 6): its host lacks what it needs, and it says
    // so. It stays up without devices, shown in provider health, instead of failing start-up.
    if (out.length === 0 && !hostUnmet(this.readiness)) {
      throw unavailable("provider described no devices");
    }
    return out;
  }

  /**
   * Ends the process: close stdin (the ADPP stop signal), then SIGTERM, then SIGKILL, within
   * `budgetMs` in total. Resolves once the process is gone.
   */
  async terminate(budgetMs: number): Promise<void> {
    if (this.#terminating) {
      await this.#proc.exited;
      return;
    }
    this.#terminating = true;
    const gone = this.#proc.exited.then(() => true);
    // Not awaited: stdin closes once a write under way has ended, and a hung provider that reads
    // nothing never ends it (the signals below do, or free the pipe). The session ends at once.
    void this.#client.close();
    // A process already gone settles `gone` at once.
    if (await raceTimeout(this.#deps.clock, gone, budgetMs * 0.6, false)) return;
    this.#deps.log.warn(`provider did not exit after stdin closed; sending SIGTERM`);
    this.#proc.kill("SIGTERM");
    if (await raceTimeout(this.#deps.clock, gone, budgetMs * 0.3, false)) return;
    this.#deps.log.warn(`provider ignored SIGTERM; sending SIGKILL`);
    this.#proc.kill("SIGKILL");
    await this.#proc.exited;
  }

  /** Kills the process at once (used when the session is known to be broken or hung). */
  kill(): void {
    this.#proc.kill("SIGKILL");
  }

  async #pumpStderr(stream: ReadableStream<Uint8Array>): Promise<void> {
    const log = this.#deps.log;
    const clock = this.#deps.clock;
    let windowStart = clock.monoMs();
    let inWindow = 0; // lines stating no level or INFO/DEBUG
    let warnInWindow = 0; // lines stating WARN or ERROR
    let suppressed = 0;
    let notice: TimerId | undefined;
    // The count is reported when the window closes, even if the provider then stays silent.
    const report = () => {
      notice = undefined;
      if (suppressed > 0) log.warn(`${suppressed} stderr lines suppressed (rate limit)`);
      suppressed = 0;
    };
    const onLine = (raw: string) => {
      if (raw.trim()) {
        this.#stderrTail.push(raw.slice(0, STDERR_MAX_LINE));
        if (this.#stderrTail.length > STDERR_TAIL_LINES) this.#stderrTail.shift();
      }
      const now = clock.monoMs();
      if (now - windowStart >= 1000) {
        windowStart = now;
        inWindow = 0;
        warnInWindow = 0;
      }
      const level = stderrLineLevel(raw) ?? "info";
      const over = level === "warn" || level === "error"
        ? ++warnInWindow > STDERR_WARN_LINES_PER_SECOND
        : ++inWindow > STDERR_LINES_PER_SECOND;
      if (over) {
        if (suppressed++ === 0) {
          notice = clock.setTimer(report, Math.max(1, 1000 - (now - windowStart)));
        }
        return;
      }
      const line = providerTextWithin(raw, STDERR_MAX_LINE);
      if (line.trim()) log[level](`stderr: ${line}`);
    };
    try {
      await readLines(stream, onLine);
    } catch {
      // stderr closed abruptly with the process: nothing to report
    } finally {
      clock.clearTimer(notice);
      report();
    }
  }
}

/** Longest stderr text held while waiting for its newline (longer is passed on as one line). */
export const LINE_SPLITTER_MAX_CHARS = 65536;

/**
 * Splits text given in pieces into lines, without CR line ends (bounded: see
 * LINE_SPLITTER_MAX_CHARS).
 */
export class LineSplitter {
  #buf = "";

  /** Adds `text`; every line it completes goes to `onLine`, in order. */
  push(text: string, onLine: (line: string) => void): void {
    let buf = this.#buf + text;
    let i: number;
    while ((i = buf.indexOf("\n")) >= 0) {
      onLine(buf.slice(0, i).replace(/\r$/, ""));
      buf = buf.slice(i + 1);
    }
    if (buf.length > LINE_SPLITTER_MAX_CHARS) {
      onLine(buf);
      buf = "";
    }
    this.#buf = buf;
  }

  /** The text after the last newline, if any, as the last line. */
  end(onLine: (line: string) => void): void {
    if (this.#buf) onLine(this.#buf);
    this.#buf = "";
  }
}

/**
 * Bytes asked for per read of a provider's stderr: one buffer of this size per session, reused.
 * (Through `pipeThrough(new TextDecoderStream())`, every provider's pending read held a fresh
 * 64 KiB buffer, and each read made another.)
 */
export const STDERR_READ_BYTES = 4096;

/**
 * Reads `stream` as UTF-8 text (invalid bytes as U+FFFD) and gives each of its lines to `onLine`
 * (LineSplitter), the text after the last newline last. A byte stream (a child's pipe) is read
 * through a BYOB reader into one reused buffer of `readBytes`; any other stream with its default
 * reader. Resolves at the end of the stream; rejects when a read fails (the lines before it were
 * given).
 */
export async function readLines(
  stream: ReadableStream<Uint8Array>,
  onLine: (line: string) => void,
  readBytes = STDERR_READ_BYTES,
): Promise<void> {
  const splitter = new LineSplitter();
  const decoder = new TextDecoder();
  let byob: ReadableStreamBYOBReader | null = null;
  try {
    byob = stream.getReader({ mode: "byob" });
  } catch {
    // not a byte stream: the default reader below
  }
  if (byob !== null) {
    let buffer = new ArrayBuffer(readBytes);
    for (;;) {
      const r = await byob.read(new Uint8Array(buffer));
      if (r.done) break;
      buffer = r.value.buffer as ArrayBuffer;
      splitter.push(decoder.decode(r.value, { stream: true }), onLine);
    }
  } else {
    const reader = stream.getReader();
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      splitter.push(decoder.decode(r.value, { stream: true }), onLine);
    }
  }
  splitter.push(decoder.decode(), onLine);
  splitter.end(onLine);
}

/** `err` (a request's rejection) as the failure of `what`, same code (INTERNAL if it has none). */
function wrap(err: unknown, what: string): RuntimeError {
  const e = toRuntimeError(err);
  return new RuntimeError(e.code, `${what}: ${e.message}`, { cause: err });
}
