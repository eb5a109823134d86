import {
  type Clock,
  deadlineExceeded,
  errorMessage,
  RuntimeError,
  type StatusCode as RuntimeCode,
  type TimerId,
  unavailable,
} from "../common/mod.ts";
import {
  decodeResponse,
  encodeRequest,
  type PayloadKind,
  type RequestPayloads,
  type ResponsePayloads,
  StatusCode,
  type WireRequest,
  type WireResponse,
} from "./codec.ts";
import { encodeFrame, FrameReader, MAX_FRAME_BYTES } from "./framing.ts";

/** Why a session ended. */
export interface SessionEnd {
  readonly reason: "closed" | "eof" | "protocol_violation" | "transport_error";
  readonly message: string;
}

/** A request the provider answered with a non-OK status. The session stays healthy. */
export class ProviderStatusError extends RuntimeError {
  /** The wire Status.Code number. */
  readonly providerCode: number;
  constructor(providerCode: number, message: string) {
    super(mapProviderCode(providerCode), message, { details: { provider_code: providerCode } });
    this.providerCode = providerCode;
  }
}

/**
 * Provider status code -> runtime code, as anolis maps them (docs/http-api.md, "Modes and calls":
 * the HTTP status of an error the provider answers); anything unknown is INTERNAL.
 */
export function mapProviderCode(code: number): Exclude<RuntimeCode, "OK"> {
  switch (code) {
    case StatusCode.INVALID_ARGUMENT:
    case StatusCode.OUT_OF_RANGE:
      return "INVALID_ARGUMENT";
    case StatusCode.NOT_FOUND:
      return "NOT_FOUND";
    case StatusCode.FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case StatusCode.UNAVAILABLE:
    case StatusCode.RESOURCE_EXHAUSTED:
      return "UNAVAILABLE";
    case StatusCode.DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    default:
      return "INTERNAL";
  }
}

export interface AdppClientOptions {
  /** Bound on requests in flight on this session; more are refused with UNAVAILABLE. */
  readonly maxInFlight?: number;
  readonly maxFrameBytes?: number;
  /** The time of the last frame received, and the timers of the request deadlines. */
  readonly clock: Pick<Clock, "monoMs" | "setTimer" | "clearTimer">;
}

interface Pending {
  readonly kind: PayloadKind;
  readonly resolve: (r: WireResponse) => void;
  readonly reject: (e: Error) => void;
  readonly timer: TimerId;
}

/**
 * One ADPP session over a provider's stdout (readable) and stdin (writable). Request ids count up
 * from 1; responses are matched by id, so a late answer to a timed-out request is discarded.
 * A protocol violation (bad frame, unparseable message, id never issued) ends the session.
 *
 * A failed write (typically EPIPE: the provider exited, or closed its stdin) fails the request
 * whose frame it was and stops all writing, but does not end the session at once: answers the
 * provider wrote before it went may still be unread in its stdout (a `crash` call answered OK
 * just before the exit). The session ends, with the write failure as its reason, once every
 * request already written has its answer read, its deadline passed, or stdout reached its end.
 */
export class AdppClient {
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #pending = new Map<number, Pending>();
  /** Ids that timed out and may still be answered (bounded; oldest forgotten first). */
  readonly #expired = new Set<number>();
  readonly #maxInFlight: number;
  readonly #maxFrameBytes: number;
  readonly #clock: Pick<Clock, "monoMs" | "setTimer" | "clearTimer">;
  #nextId = 1;
  #end: SessionEnd | null = null;
  /** The first failed write: nothing is written after it; the session ends once drained. */
  #writeFailure: SessionEnd | null = null;
  #resolveEnded!: (end: SessionEnd) => void;
  #lastFrameAt: number;
  #writeChain: Promise<void> = Promise.resolve();

  /** Resolves once when the session ends, with the reason. */
  readonly ended: Promise<SessionEnd>;

  constructor(
    readable: ReadableStream<Uint8Array>,
    writable: WritableStream<Uint8Array>,
    options: AdppClientOptions,
  ) {
    this.#maxInFlight = options.maxInFlight ?? 64;
    this.#maxFrameBytes = options.maxFrameBytes ?? MAX_FRAME_BYTES;
    this.#clock = options.clock;
    this.#lastFrameAt = this.#clock.monoMs();
    this.#writer = writable.getWriter();
    this.ended = new Promise((resolve) => (this.#resolveEnded = resolve));
    this.#readLoop(readable);
  }

  /** True until the session ended or a write to the provider failed. */
  get open(): boolean {
    return this.#end === null && this.#writeFailure === null;
  }

  /** Monotonic time of the last frame received from the provider. */
  get lastFrameAtMs(): number {
    return this.#lastFrameAt;
  }

  get inFlight(): number {
    return this.#pending.size;
  }

  /**
   * Sends one request and waits for its response within `timeoutMs`.
   * Rejects with ProviderStatusError (non-OK status), DEADLINE_EXCEEDED (no answer in time) or
   * UNAVAILABLE (session ended / too many requests in flight).
   */
  request<K extends PayloadKind>(
    kind: K,
    payload: RequestPayloads[K],
    timeoutMs: number,
  ): Promise<ResponsePayloads[K]> {
    const ended = this.#end ?? this.#writeFailure;
    if (ended) {
      return Promise.reject(unavailable(`provider session ended: ${ended.message}`));
    }
    if (this.#pending.size >= this.#maxInFlight) {
      return Promise.reject(unavailable(`too many requests in flight (${this.#maxInFlight})`));
    }
    const id = this.#nextId++;
    const msg = { request_id: id, [kind]: payload } as WireRequest;
    let frame: Uint8Array;
    try {
      frame = encodeFrame(encodeRequest(msg), this.#maxFrameBytes);
    } catch (err) {
      // An oversize request is refused before any byte is written (the session stays usable).
      return Promise.reject(new RuntimeError("INVALID_ARGUMENT", `cannot send ${kind}: ${err}`));
    }
    return new Promise<ResponsePayloads[K]>((resolve, reject) => {
      const timer = this.#clock.setTimer(() => {
        this.#pending.delete(id);
        this.#rememberExpired(id);
        reject(deadlineExceeded(`${kind} got no answer within ${timeoutMs} ms`));
        this.#endIfDrained();
      }, timeoutMs);
      this.#pending.set(id, {
        kind,
        timer,
        reject,
        resolve: (r) => {
          const code = r.status?.code ?? StatusCode.UNSPECIFIED;
          if (code !== StatusCode.OK) {
            const text = r.status?.message || "no message";
            reject(new ProviderStatusError(code, `provider answered ${codeName(code)}: ${text}`));
            return;
          }
          const body = r[kind];
          if (body === undefined) {
            reject(new RuntimeError("INTERNAL", `provider response lacks the ${kind} payload`));
            return;
          }
          resolve(body as ResponsePayloads[K]);
        },
      });
      this.#write(id, frame);
    });
  }

  /** Closes the provider's stdin (its stop signal) and ends the session. */
  async close(): Promise<void> {
    this.#finish({ reason: "closed", message: "closed by the runtime" });
    try {
      await this.#writeChain;
      await this.#writer.close();
    } catch {
      // the pipe may already be gone
    }
  }

  #write(id: number, frame: Uint8Array): void {
    this.#writeChain = this.#writeChain.then(async () => {
      if (this.#end) return;
      if (this.#writeFailure) return this.#failUnwritten(id, this.#writeFailure);
      try {
        await this.#writer.write(frame);
      } catch (err) {
        this.#writeFailure ??= {
          reason: "transport_error",
          message: `write failed: ${errorMessage(err)}`,
        };
        this.#failUnwritten(id, this.#writeFailure);
      }
    });
  }

  /** Rejects the request whose frame was not written (the provider never saw it). */
  #failUnwritten(id: number, failure: SessionEnd): void {
    const pending = this.#pending.get(id);
    if (pending) {
      this.#pending.delete(id);
      this.#clock.clearTimer(pending.timer);
      pending.reject(unavailable(`provider session ended: ${failure.message}`));
    }
    this.#endIfDrained();
  }

  /** After a failed write: ends the session once no written request waits for its answer. */
  #endIfDrained(): void {
    if (this.#writeFailure && this.#pending.size === 0) this.#finish(this.#writeFailure);
  }

  async #readLoop(readable: ReadableStream<Uint8Array>): Promise<void> {
    const reader = new FrameReader(readable, this.#maxFrameBytes);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          this.#finish(
            this.#writeFailure ?? { reason: "eof", message: "provider closed its stdout" },
          );
          return;
        }
        this.#lastFrameAt = this.#clock.monoMs();
        let response: WireResponse;
        try {
          response = decodeResponse(value);
        } catch (err) {
          this.#finish({
            reason: "protocol_violation",
            message: `unparseable response: ${errorMessage(err)}`,
          });
          return;
        }
        this.#dispatch(response);
        if (this.#end) return;
      }
    } catch (err) {
      this.#finish({ reason: "protocol_violation", message: `bad frame: ${errorMessage(err)}` });
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  #dispatch(response: WireResponse): void {
    const id = response.request_id ?? 0;
    const pending = this.#pending.get(id);
    if (pending) {
      this.#pending.delete(id);
      this.#clock.clearTimer(pending.timer);
      pending.resolve(response);
      this.#endIfDrained();
      return;
    }
    if (this.#expired.delete(id)) return; // late answer to a timed-out request: discard
    this.#finish({
      reason: "protocol_violation",
      message: `response with request_id ${id} matches no request`,
    });
  }

  #rememberExpired(id: number): void {
    this.#expired.add(id);
    if (this.#expired.size > 1024) {
      const oldest = this.#expired.values().next().value;
      if (oldest !== undefined) this.#expired.delete(oldest);
    }
  }

  #finish(end: SessionEnd): void {
    if (this.#end) return;
    this.#end = end;
    for (const [, p] of this.#pending) {
      this.#clock.clearTimer(p.timer);
      p.reject(unavailable(`provider session ended: ${end.message}`));
    }
    this.#pending.clear();
    this.#resolveEnded(end);
  }
}

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(StatusCode).map(([k, v]) => [v, k]),
);

function codeName(code: number): string {
  return CODE_NAMES[code] ?? `code ${code}`;
}
