import { type Logger, utf8Length } from "../common/mod.ts";
import {
  concatFrames,
  decodeRequest,
  encodeFrame,
  encodeResponse,
  FrameError,
  MAX_DEVICES_PER_PROVIDER,
  MAX_FRAME_BYTES,
  MAX_HEALTH_METRICS,
  type PayloadKind,
  PIPE_BUF,
  type RequestPayloads,
  type ResponsePayloads,
  StatusCode as WireStatusCode,
  type WireDeviceHealth,
  type WireRequest,
  type WireResponse,
} from "../adpp/mod.ts";
import { ProviderError } from "./provider_error.ts";
import { StdinRequests } from "./_stdin_requests.ts";
import { errorMessageText as errorText, statusMessageText } from "./_status_message.ts";
import {
  type ProviderClock,
  SafeStateKeeper,
  type SafeStateReason,
  type SafeStateSummary,
  SYSTEM_PROVIDER_CLOCK,
} from "./safe_state.ts";

/** Process exit codes of a provider (the reference simulator's numbers). */
export const ProviderExitCode = {
  /**
   * stdin reached EOF before a frame started (the runtime's stop signal), also with a request
   * still in progress EOF_REQUESTS_WAIT_MS later; or the `stop` signal.
   */
  CLEAN: 0,
  /** Configuration or initialisation failure (used by providers, not by the loop). */
  CONFIG: 1,
  /** Framing error: truncated frame, zero-length frame, length > 1 MiB, stdin read failure. */
  FRAMING: 2,
  /** A frame whose payload is not a parseable Request. */
  BAD_REQUEST: 3,
  /** A Response that could not be serialised or framed (e.g. larger than 1 MiB). */
  SERIALIZE: 4,
  /** stdout write failure. */
  WRITE: 5,
  /**
   * The safe state could not be applied on the way out (applySafeState threw or took longer than
   * SAFE_STATE_TIMEOUT_MS). Our extension: the reference has no safe-state hook.
   */
  SAFE_STATE_FAILED: 6,
} as const;

/** One of the ProviderExitCode values. */
export type ProviderExitCodeNumber = (typeof ProviderExitCode)[keyof typeof ProviderExitCode];

/** Per-request hooks a handler may use to shape what the loop does around its reply. */
export interface ReplyContext {
  /** Runs after the reply has been written, before the next request is read (crash, hang). */
  afterReply(action: () => void | Promise<void>): void;
  /** Writes these bytes unframed instead of the encoded reply (fault injection only). */
  replaceReplyWithRawBytes(bytes: Uint8Array): void;
}

type MaybePromise<T> = T | Promise<T>;

/**
 * The request handlers of a provider, one per ADPP operation. Each returns the response payload
 * or throws ProviderError (any other error answers CODE_INTERNAL). The error's message is cut to
 * PROVIDER_STATUS_MESSAGE_CHARS in the reply and the log line. Optional operations that are
 * absent answer CODE_UNIMPLEMENTED.
 */
export interface ProviderHandler {
  hello(req: RequestPayloads["hello"], ctx: ReplyContext): MaybePromise<ResponsePayloads["hello"]>;
  waitReady?(
    req: RequestPayloads["wait_ready"],
    ctx: ReplyContext,
  ): MaybePromise<ResponsePayloads["wait_ready"]>;
  listDevices(
    req: RequestPayloads["list_devices"],
    ctx: ReplyContext,
  ): MaybePromise<ResponsePayloads["list_devices"]>;
  describeDevice(
    req: RequestPayloads["describe_device"],
    ctx: ReplyContext,
  ): MaybePromise<ResponsePayloads["describe_device"]>;
  readSignals(
    req: RequestPayloads["read_signals"],
    ctx: ReplyContext,
  ): MaybePromise<ResponsePayloads["read_signals"]>;
  call(req: RequestPayloads["call"], ctx: ReplyContext): MaybePromise<ResponsePayloads["call"]>;
  getHealth?(
    req: RequestPayloads["get_health"],
    ctx: ReplyContext,
  ): MaybePromise<ResponsePayloads["get_health"]>;
  /**
   * Drives every output to the provider's safe state: the same safe defaults it starts with. The
   * SDK calls it when the lease runs out, when stdin reaches EOF or the loop ends on an error, and
   * on SIGTERM/SIGINT (runStdioProvider). Must be idempotent; bounded by SAFE_STATE_TIMEOUT_MS.
   * Optional: a provider without it has no safe state (and cannot take a lease).
   */
  applySafeState?(reason: SafeStateReason): MaybePromise<SafeStateSummary | void>;
}

/** Where a provider reads requests and writes responses, and how it keeps its lease. */
export interface ProviderIo {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly logger?: Logger;
  /**
   * Apply the safe state when no request has arrived for this long after the last reply
   * (0 or absent = no lease). Integer in [0, MAX_LEASE_MS]; needs `handler.applySafeState`. The
   * runtime's polling is the heartbeat: choose it well above the polling interval.
   */
  readonly leaseMs?: number;
  /**
   * Ends serving: the safe state is applied at once (without waiting for a request in progress)
   * and serveProvider resolves CLEAN (SAFE_STATE_FAILED if that failed). An abort reason of
   * "SIGTERM" or "SIGINT" is reported as such.
   */
  readonly stop?: AbortSignal;
  /** Clock and timers for the lease (default: the process's). */
  readonly clock?: ProviderClock;
}

/**
 * How long the SDK lets the requests in hand be served once stdin has reached EOF (the runtime's
 * stop signal) before it applies the safe state without them: a request still in progress then (a
 * handler that hangs on its hardware, a reply stdout does not take), and those read after it, are
 * left unanswered, and serveProvider resolves CLEAN at once (SAFE_STATE_FAILED if the safe state
 * failed), so runStdioProvider exits at most EOF_REQUESTS_WAIT_MS + SAFE_STATE_TIMEOUT_MS after
 * the EOF whatever a handler does. Requests that end within it are answered and the safe state
 * follows them, as at any EOF. Well before the SIGTERM the runtime sends 60 % of its stop budget
 * after closing stdin (1.2 s with the default runtime.shutdown_timeout_ms). One timer, armed at
 * the EOF.
 */
export const EOF_REQUESTS_WAIT_MS = 250;

/**
 * Serves ADPP requests from `readable` until EOF or a fatal error, strictly one at a time (a
 * handler that sleeps blocks the provider, like the reference). Echoes request_id, wraps handler
 * errors into Status. The answers to ReadSignals and GetHealth requests that arrived in one read
 * are written together (at most PIPE_BUF bytes a write); any other request first has the answers
 * before it written, and is answered at once. Applies the handler's safe state when the lease runs
 * out and when serving ends (EOF, error, `stop`). stdin is read also while a request is being
 * served (StdinRequests), so its EOF is seen then: the requests in hand get EOF_REQUESTS_WAIT_MS,
 * then the safe state is applied without them. Resolves with the exit code the process should
 * end with; never calls exit.
 */
export async function serveProvider(
  handler: ProviderHandler,
  io: ProviderIo,
): Promise<ProviderExitCodeNumber> {
  const clock = io.clock ?? SYSTEM_PROVIDER_CLOCK;
  const keeper = new SafeStateKeeper({
    apply: handler.applySafeState === undefined
      ? undefined
      : (reason) => handler.applySafeState!(reason),
    leaseMs: io.leaseMs ?? 0,
    clock,
    ...(io.logger === undefined ? {} : { logger: io.logger }),
  });
  const requests = new StdinRequests(io.readable, () => keeper.requestStarted());
  const served: Serving = { request: null, abandoned: false };
  const loop = serveLoop(handler, io, requests, keeper, served);
  // Serving cut short: the `stop` signal, or stdin's EOF with a request still in hand after
  // EOF_REQUESTS_WAIT_MS. Nobody waits for the loop then.
  let cut: (why: "stop" | "eof") => void = () => {};
  const cutShort = new Promise<"stop" | "eof">((resolve) => cut = resolve);
  let eofTimer: unknown = undefined;
  requests.onEof = () => {
    eofTimer = clock.setTimer(() => cut("eof"), EOF_REQUESTS_WAIT_MS);
  };
  const stop = io.stop;
  const onAbort = () => cut("stop");
  if (stop?.aborted) cut("stop");
  else stop?.addEventListener("abort", onAbort, { once: true });
  const first = await Promise.race([loop, cutShort]);
  stop?.removeEventListener("abort", onAbort);
  requests.onEof = () => {};
  if (eofTimer !== undefined) clock.clearTimer(eofTimer);
  let exitCode: ProviderExitCodeNumber;
  let reason: SafeStateReason;
  if (first === "stop" || first === "eof") {
    // The loop ends once its request in progress (if any) does, answering nothing more.
    served.abandoned = true;
    loop.catch(() => {});
    requests.cancel().catch(() => {});
    exitCode = ProviderExitCode.CLEAN;
    if (first === "eof") {
      reason = "stdin_eof";
      io.logger?.warn(eofCutText(served.request, requests.waiting));
    } else {
      reason = stop!.reason === "SIGTERM" || stop!.reason === "SIGINT" ? stop!.reason : "stopped";
    }
  } else {
    [exitCode, reason] = first;
  }
  const record = await keeper.applyFinal(reason);
  if (record?.outcome === "failed" && exitCode === ProviderExitCode.CLEAN) {
    return ProviderExitCode.SAFE_STATE_FAILED;
  }
  return exitCode;
}

/** What serveLoop is serving, shared with serveProvider. */
interface Serving {
  /** The request taken last (in progress when serving is cut short). */
  request: WireRequest | null;
  /** Set when serving was cut short (`stop`, EOF_REQUESTS_WAIT_MS): the loop answers no more. */
  abandoned: boolean;
}

/** The log line of an EOF whose requests in hand were not served within EOF_REQUESTS_WAIT_MS. */
function eofCutText(request: WireRequest | null, waiting: number): string {
  const what = request === null
    ? "a request"
    : `request ${request.request_id ?? 0} (${request.payload ?? "no payload"})`;
  const more = waiting === 0 ? "" : `; ${waiting} more read after it, not served`;
  return `stdin closed while ${what} was still being served: applying the safe state without ` +
    `it, EOF_REQUESTS_WAIT_MS (${EOF_REQUESTS_WAIT_MS} ms) after the EOF${more}`;
}

async function serveLoop(
  handler: ProviderHandler,
  io: ProviderIo,
  requests: StdinRequests,
  keeper: SafeStateKeeper,
  served: Serving,
): Promise<[ProviderExitCodeNumber, SafeStateReason]> {
  const log = io.logger;
  const writer = io.writable.getWriter();
  const batch = new ReplyBatch();
  /** Writes the kept answers, then `last`; false (logged) when stdout cannot be written. */
  const flush = async (last: Uint8Array | null): Promise<boolean> => {
    try {
      await batch.write(writer, last);
      return true;
    } catch (err) {
      log?.error(`stdout write failed: ${errorText(err)}`);
      return false;
    }
  };
  try {
    for (;;) {
      // Nothing is kept here unless a request of the same read is still to be taken.
      let payload: Uint8Array | null | undefined = requests.take();
      if (payload === undefined) {
        try {
          payload = await requests.next();
        } catch (err) {
          if (served.abandoned) return [ProviderExitCode.CLEAN, "stopped"];
          const what = err instanceof FrameError
            ? `framing error (${err.kind})`
            : "stdin read error";
          log?.error(`${what}: ${errorText(err)}`);
          return [ProviderExitCode.FRAMING, "serve_error"];
        }
        if (payload === null) {
          log?.info("stdin closed, shutting down");
          return [ProviderExitCode.CLEAN, "stdin_eof"];
        }
      }
      if (served.abandoned) return [ProviderExitCode.CLEAN, "stopped"];
      keeper.requestStarted();
      // A safe state being applied (lease expiry) completes before the next request runs.
      if (keeper.applying !== null) {
        if (batch.bytes > 0 && !(await flush(null))) return [ProviderExitCode.WRITE, "serve_error"];
        await keeper.applying;
      }
      let req: WireRequest;
      try {
        req = decodeRequest(payload);
      } catch (err) {
        log?.error(`unparseable request (${payload.length} bytes): ${errorText(err)}`);
        if (!(await flush(null))) return [ProviderExitCode.WRITE, "serve_error"];
        return [ProviderExitCode.BAD_REQUEST, "serve_error"];
      }
      const cheap = req.payload === "read_signals" || req.payload === "get_health";
      // Any other request may be slow (a call): the answers already computed go out first.
      if (!cheap && batch.bytes > 0 && !(await flush(null))) {
        return [ProviderExitCode.WRITE, "serve_error"];
      }
      const actions: Array<() => void | Promise<void>> = [];
      let raw: Uint8Array | null = null;
      const ctx: ReplyContext = {
        afterReply: (a) => void actions.push(a),
        replaceReplyWithRawBytes: (b) => void (raw = b),
      };
      served.request = req;
      let response = await dispatch(handler, req, ctx, log);
      // Cut short meanwhile (a handler that hung past stdin's EOF, `stop`): nothing is answered.
      if (served.abandoned) return [ProviderExitCode.CLEAN, "stopped"];
      if (response.get_health !== undefined) {
        response = {
          ...response,
          get_health: healthCut(keeper.decorateHealth(response.get_health)),
        };
      }
      let out: Uint8Array;
      if (raw !== null) {
        out = raw;
      } else {
        try {
          out = encodeFrame(encodeResponse(response));
        } catch (err) {
          log?.error(`cannot serialise response ${response.request_id}: ${errorText(err)}`);
          if (!(await flush(null))) return [ProviderExitCode.WRITE, "serve_error"];
          return [ProviderExitCode.SERIALIZE, "serve_error"];
        }
      }
      if (
        cheap && actions.length === 0 && raw === null && requests.sameRead &&
        out.length <= PIPE_BUF
      ) {
        // Another request of this read is waiting: answer them together (one wake-up of the
        // runtime per read, not per answer). No requestEnded: the lease stays paused until the
        // answers are written with the last request of the read (which is never kept).
        if (batch.bytes + out.length > PIPE_BUF && !(await flush(null))) {
          return [ProviderExitCode.WRITE, "serve_error"];
        }
        batch.keep(out);
        continue;
      }
      if (!(await flush(out))) return [ProviderExitCode.WRITE, "serve_error"];
      for (const action of actions) await action();
      keeper.requestEnded(req.payload === "call" && response.status?.code === WireStatusCode.OK);
    }
  } finally {
    requests.cancel().catch(() => {});
    writer.releaseLock();
  }
}

/**
 * The answers serveLoop keeps back to write together: answers to cheap requests (ReadSignals,
 * GetHealth) of one read of stdin, at most PIPE_BUF bytes (a pipe takes such a write whole).
 */
class ReplyBatch {
  readonly #frames: Uint8Array[] = [];
  #bytes = 0;

  /** Bytes kept. */
  get bytes(): number {
    return this.#bytes;
  }

  keep(frame: Uint8Array): void {
    this.#frames.push(frame);
    this.#bytes += frame.length;
  }

  /**
   * Writes what is kept, then `last` (when not null): in one write when together they fit in
   * PIPE_BUF, else in two. Nothing is kept afterwards, also when the write fails.
   */
  async write(writer: WritableStreamDefaultWriter<Uint8Array>, last: Uint8Array | null) {
    const frames = this.#frames;
    if (frames.length === 0) {
      if (last !== null) await writer.write(last);
      return;
    }
    if (last !== null && this.#bytes + last.length <= PIPE_BUF) {
      this.keep(last);
      last = null;
    }
    const out = frames.length === 1
      ? frames[0]!
      : concatFrames(frames, 0, frames.length, this.#bytes);
    frames.length = 0;
    this.#bytes = 0;
    await writer.write(out);
    if (last !== null) await writer.write(last);
  }
}

const HANDLER_OF: Readonly<Record<PayloadKind, keyof ProviderHandler>> = {
  hello: "hello",
  wait_ready: "waitReady",
  list_devices: "listDevices",
  describe_device: "describeDevice",
  read_signals: "readSignals",
  call: "call",
  get_health: "getHealth",
};

async function dispatch(
  handler: ProviderHandler,
  req: WireRequest,
  ctx: ReplyContext,
  log: Logger | undefined,
): Promise<WireResponse> {
  const request_id = req.request_id ?? 0;
  const kind = req.payload;
  if (kind === undefined) {
    return errorResponse(request_id, WireStatusCode.UNIMPLEMENTED, "request has no payload");
  }
  const fn = handler[HANDLER_OF[kind]] as
    | ((p: unknown, c: ReplyContext) => MaybePromise<unknown>)
    | undefined;
  if (fn === undefined) {
    return errorResponse(request_id, WireStatusCode.UNIMPLEMENTED, `${kind} is not implemented`);
  }
  try {
    const payload = await fn.call(handler, req[kind] ?? {}, ctx);
    log?.debug(`request ${request_id} ${kind}: OK`);
    return { request_id, status: { code: WireStatusCode.OK, message: "ok" }, [kind]: payload };
  } catch (err) {
    if (err instanceof ProviderError) {
      log?.debug(
        `request ${request_id} ${kind}: code ${err.code}: ${statusMessageText(err.message)}`,
      );
      return errorResponse(request_id, err.code, err.message);
    }
    log?.error(`request ${request_id} ${kind}: internal error: ${errorText(err)}`);
    return errorResponse(request_id, WireStatusCode.INTERNAL, `internal error: ${errorText(err)}`);
  }
}

/**
 * What of MAX_FRAME_BYTES a GetHealth answer's provider and device entries may take (their encoded
 * size, estimated from above: each string's UTF-8 bytes with its field's tag and length, a
 * device entry's state and timestamp): the rest is room for the response around them (request id,
 * status). With every text cut, 1024 device entries of 64 metrics of 1024 characters each still
 * made some 400 MiB; the entries past this bound are counted in `devices_omitted`, not answered.
 */
export const HEALTH_ANSWER_MAX_BYTES = MAX_FRAME_BYTES - 64 * 1024;

/** Bytes of a protobuf string field, from above: tag, length (up to 5 bytes), UTF-8 text. */
function stringFieldBytes(s: string): number {
  return 6 + utf8Length(s);
}

/** Bytes of a metrics map, from above: each entry's tag and length, key and value. */
function metricsBytes(metrics: Readonly<Record<string, string>> | undefined): number {
  let n = 0;
  if (metrics === undefined) return 0;
  for (const k in metrics) n += 6 + stringFieldBytes(k) + stringFieldBytes(metrics[k]!);
  return n;
}

/** Bytes of a device entry, from above: its tag and length, id, state, message, last_seen, metrics. */
function deviceEntryBytes(d: WireDeviceHealth): number {
  return 6 + stringFieldBytes(d.device_id ?? "") + 11 + stringFieldBytes(d.message ?? "") + 28 +
    metricsBytes(d.metrics);
}

/**
 * A GetHealth answer within the bounds the runtime accepts: the provider's and each device's
 * message, each device id and each metric's key and value cut (statusMessageText); at most
 * MAX_HEALTH_METRICS metrics an entry, the first kept and the rest counted in its metric
 * `metrics_omitted`; at most MAX_DEVICES_PER_PROVIDER device entries (the most a provider may
 * list) and no more than HEALTH_ANSWER_MAX_BYTES in all, the first kept and the rest counted in
 * the provider metric `devices_omitted`. A handler's own text over MAX_FRAME_BYTES, or some
 * 200,000 entries, or 1024 entries of many long metrics, made an answer that cannot be framed,
 * and the provider exited (SERIALIZE) instead of answering. Cut last, after the safe-state
 * keeper's prefix, so every message the SDK answers is bounded by one rule; the prefixes and the
 * metrics the SDK adds (lease expiry, a DeviceProvider's unmet host requirements) come first and
 * are what is kept.
 */
function healthCut(h: ResponsePayloads["get_health"]): ResponsePayloads["get_health"] {
  const out = { ...h };
  const devices = h.devices;
  const p = h.provider ?? {};
  // The provider entry first: its metrics leave room for the marker of the devices left out.
  const providerMetrics = p.metrics === undefined ? undefined : metricsCut(p.metrics, 1);
  const providerMessage = p.message === undefined ? undefined : statusMessageText(p.message);
  let left = HEALTH_ANSWER_MAX_BYTES - stringFieldBytes(providerMessage ?? "") - 11 -
    metricsBytes(providerMetrics) - stringFieldBytes("devices_omitted") - 16;
  const kept: WireDeviceHealth[] = [];
  if (devices !== undefined) {
    for (const d of devices) {
      if (kept.length === MAX_DEVICES_PER_PROVIDER) break;
      const e = { ...d };
      if (d.device_id !== undefined) e.device_id = statusMessageText(d.device_id);
      if (d.message !== undefined) e.message = statusMessageText(d.message);
      if (d.metrics !== undefined) e.metrics = metricsCut(d.metrics, 0);
      left -= deviceEntryBytes(e);
      if (left < 0) break;
      kept.push(e);
    }
  }
  const omitted = devices === undefined ? 0 : devices.length - kept.length;
  if (h.provider !== undefined || omitted > 0) {
    out.provider = {
      ...p,
      ...(providerMessage === undefined ? {} : { message: providerMessage }),
      ...(providerMetrics === undefined && omitted <= 0 ? {} : {
        metrics: {
          ...providerMetrics,
          ...(omitted > 0 ? { devices_omitted: String(omitted) } : {}),
        },
      }),
    };
  }
  if (devices !== undefined) out.devices = kept;
  return out;
}

/**
 * Health metrics with each key and value cut (statusMessageText); two keys alike once cut keep
 * the last value. At most MAX_HEALTH_METRICS less `reserved` (room for a marker the caller adds):
 * past that the first are kept, less one, and `metrics_omitted` counts the rest.
 */
function metricsCut(
  metrics: Readonly<Record<string, string>>,
  reserved: number,
): Record<string, string> {
  const cut = new Map<string, string>();
  for (const k in metrics) {
    if (Object.hasOwn(metrics, k)) cut.set(statusMessageText(k), statusMessageText(metrics[k]!));
  }
  const most = MAX_HEALTH_METRICS - reserved;
  const keep = cut.size <= most ? cut.size : most - 1;
  const out: Record<string, string> = {};
  let n = 0;
  for (const [k, v] of cut) {
    if (n++ === keep) break;
    // defineProperty: a key "__proto__" is a metric like any other, as in the spread before.
    Object.defineProperty(out, k, {
      value: v,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  if (keep < cut.size) out.metrics_omitted = String(cut.size - keep);
  return out;
}

/** A non-OK answer; its message cut (statusMessageText), so that any answer can be framed. */
function errorResponse(request_id: number, code: number, message: string): WireResponse {
  return { request_id, status: { code, message: statusMessageText(message) } };
}
