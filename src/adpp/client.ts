import {
  type Clock,
  deadlineExceeded,
  errorMessage,
  providerTextWithin,
  QUOTED_DEVICE_ID_CHARS,
  quoteDeviceId,
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
import { checkFrameLength, FrameReader, MAX_FRAME_BYTES, PIPE_BUF, writeFrame } from "./framing.ts";
import {
  decodeReadSignalsInto,
  fastResponseId,
  type PreparedRead,
  type SampleBatch,
} from "./read_signals.ts";

/**
 * Errors of requests the provider never got: refused before anything was written (the session
 * ended, a write failed before, too many in flight, an oversize request), whose frame a failed
 * write did not deliver (#failUnwritten), or whose frame was still waiting for the pipe -- not a
 * byte of it handed to it: a provider that does not read its stdin -- at the request's deadline
 * (taken back, never written: #onDeadlineTimer) or at the session's end (#finish). Not those a
 * session end or a deadline failed after their frame was handed to the pipe: the provider may
 * have read them.
 */
const unwritten = new WeakSet<Error>();

/**
 * Whether `err`, a request's failure, says its frame was never written to the provider (see
 * `unwritten`): it cannot have acted on it.
 */
export function neverWritten(err: unknown): boolean {
  return err instanceof Error && unwritten.has(err);
}

/** Why a session ended. */
export interface SessionEnd {
  readonly reason: "closed" | "eof" | "protocol_violation" | "transport_error";
  readonly message: string;
}

/**
 * A ReadSignals answered OK for another device than the one asked about (its `device_id` names
 * another): its samples are not the asked device's, so the read fails. The provider did answer;
 * the session stays healthy. Its message quotes both device ids cut to QUOTED_DEVICE_ID_CHARS, as
 * every log line naming a device does (the answered one is the provider's text, of any length);
 * `answeredDeviceId` and `details.answered_device_id` hold the answered id cut the same way.
 */
export class OtherDeviceAnswerError extends RuntimeError {
  /** The device the answer names, cut to QUOTED_DEVICE_ID_CHARS (marked with an ellipsis). */
  readonly answeredDeviceId: string;
  constructor(askedDeviceId: string, answeredDeviceId: string) {
    const answered = providerTextWithin(answeredDeviceId, QUOTED_DEVICE_ID_CHARS);
    super(
      "INTERNAL",
      `provider answered a ReadSignals of device ${quoteDeviceId(askedDeviceId)} for device ${
        quoteDeviceId(answeredDeviceId)
      }`,
      { details: { answered_device_id: answered } },
    );
    this.answeredDeviceId = answered;
  }
}

/**
 * Longest status message of a provider's non-OK answer (UTF-16 code units) a ProviderStatusError
 * carries; longer is cut (marked with an ellipsis) where the answer is decoded, so that what a
 * provider says cannot make an API error, a log line or a run record of any length.
 */
export const PROVIDER_STATUS_MESSAGE_CHARS = 1024;

/**
 * Most devices one ListDevices answer may list (every entry counted, those discovery would skip
 * included). An answer listing more is refused as a whole, before any DescribeDevice: the start
 * fails, as for a provider that describes no device. Without it only the frame bound
 * (MAX_FRAME_BYTES, 1 MiB: some 200,000 one-letter ids) would limit what one provider makes the
 * runtime keep per device: a DescribeDevice each at start-up (one after the other), a device
 * state, a poll plan, history rings, Sparkplug aliases and a health entry. 1024 is what the
 * runtime's per-device memories are sized for: Sparkplug remembers the clashes and the oversized
 * metrics of 1024 devices (MAX_CLASHES_REMEMBERED, MAX_TOO_LARGE_DEVICES_WARNED), and a provider
 * keeps the claims of 1024 devices it no longer lists (MAX_UNLISTED_CLAIM_DEVICES). Here, in
 * adpp/, so that the provider SDK answers no more GetHealth device entries than this (serve.ts).
 */
export const MAX_DEVICES_PER_PROVIDER = 1024;

/**
 * Most metrics a GetHealth entry (the provider's, each device's) carries that are shown: the
 * runtime's health view shows the first this many (state/health.ts MAX_REPORTED_METRICS); the
 * provider SDK answers no more (the rest counted in the entry's metric `metrics_omitted`), its own
 * metrics first so that they are among them.
 */
export const MAX_HEALTH_METRICS = 64;

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
  /**
   * Bound on poll reads (sendRead) in flight on this session; more are refused with UNAVAILABLE.
   * Other requests have SESSION_RESERVED_REQUESTS more.
   */
  readonly maxInFlight?: number;
  readonly maxFrameBytes?: number;
  /** The time of the last frame received, and the timers of the request deadlines. */
  readonly clock: Pick<Clock, "monoMs" | "setTimer" | "clearTimer">;
}

/**
 * Receives a request's outcome, once: an error, or the payload of an OK answer. What
 * `AdppClient.send` takes instead of a promise (the poll path: no promise per request).
 */
export type Reply<K extends PayloadKind> = (
  err: Error | null,
  body: ResponsePayloads[K] | undefined,
) => void;

/**
 * Receives a ReadSignals outcome decoded into a SampleBatch (`AdppClient.sendRead`): an error, or
 * the batch the answer's samples are in.
 */
export type ReadReply = (err: Error | null, batch: SampleBatch | undefined) => void;

interface Pending {
  readonly id: number;
  readonly kind: PayloadKind;
  // deno-lint-ignore no-explicit-any
  readonly reply: Reply<any> | ReadReply;
  /** Where a sendRead's answer is decoded; null for the other requests. */
  readonly into: SampleBatch | null;
  /** A sendRead's request (the device its answer must be for); null for the other requests. */
  readonly read: PreparedRead | null;
  /** Monotonic ms after which the request expires. */
  readonly deadlineMs: number;
  readonly timeoutMs: number;
}

/**
 * The requests in flight, oldest first, in a fixed array of `capacity` slots (the in-flight
 * bound): adding and removing one allocates nothing. A Map here re-made its hash table as
 * requests came and went (one per poll), and V8 promoted those tables to its old space.
 */
class PendingRequests {
  readonly #slots: (Pending | undefined)[];
  #count = 0;

  constructor(capacity: number) {
    this.#slots = new Array(capacity).fill(undefined);
  }

  get size(): number {
    return this.#count;
  }

  /** Request `i` (0 = oldest) of the `size` in flight. */
  at(i: number): Pending {
    return this.#slots[i]!;
  }

  /** Adds a request (the caller keeps `size` under the capacity). */
  add(p: Pending): void {
    this.#slots[this.#count++] = p;
  }

  /** The request with this id, if it is in flight (left in flight). */
  find(id: number): Pending | undefined {
    const slots = this.#slots;
    for (let i = 0; i < this.#count; i++) {
      if (slots[i]!.id === id) return slots[i];
    }
    return undefined;
  }

  /** Removes and returns the request with this id, if it is in flight. */
  take(id: number): Pending | undefined {
    const slots = this.#slots;
    for (let i = 0; i < this.#count; i++) {
      const p = slots[i]!;
      if (p.id === id) {
        this.removeAt(i);
        return p;
      }
    }
    return undefined;
  }

  /** Removes request `i`, keeping the order of the others. */
  removeAt(i: number): void {
    const slots = this.#slots;
    for (let j = i + 1; j < this.#count; j++) slots[j - 1] = slots[j];
    slots[--this.#count] = undefined;
  }

  /** Removes every request and returns them, oldest first. */
  takeAll(): Pending[] {
    const all = this.#slots.slice(0, this.#count) as Pending[];
    this.#slots.fill(undefined, 0, this.#count);
    this.#count = 0;
    return all;
  }
}

/**
 * Poll reads (sendRead: a poll pass's ReadSignals, one per due device) a session keeps in flight at
 * most, unless its options say otherwise (maxInFlight). A pass of more due devices sends as many as
 * there is room for (readRoom) and the rest as answers free places (StateCache.#runPass).
 */
export const DEFAULT_MAX_IN_FLIGHT = 64;

/**
 * Room a session keeps beyond maxInFlight for every request that is not a poll read: calls (the
 * e-stop's ladder and the hooks into FAULT among them; the router sends one at a time per
 * provider), the safe state's fresh read-back, health checks. A poll pass of a provider with more
 * devices than maxInFlight, answering slowly (a fieldbus gateway), filled the session, and the
 * e-stop's call to it was refused unsent ("too many requests in flight").
 */
export const SESSION_RESERVED_REQUESTS = 16;

/**
 * Late calls a session keeps the ids of: `call` requests that timed out unanswered, which the
 * provider may still carry out (AdppClient.lateCallsAnswered). Past it the oldest is forgotten,
 * and the session then never says its late calls were answered until it ends. As many as the
 * default bound on requests in flight.
 */
export const MAX_LATE_CALLS = DEFAULT_MAX_IN_FLIGHT;

/**
 * Timed-out request ids a session keeps, so that a late answer to one is discarded. Past it the
 * oldest is forgotten: a late answer to a forgotten id matches no request and ends the session as
 * a protocol violation.
 */
export const MAX_EXPIRED_IDS = 1024;

/** Bytes an outbox starts with (a poll pass's requests are some dozens of bytes per device). */
const OUTBOX_INITIAL_BYTES = 512;
/** Bytes an emptied outbox keeps: one a burst grew past this starts again from the initial size. */
const OUTBOX_KEPT_BYTES = 65_536;
/** Frames an emptied outbox keeps the slots of (a poll pass's requests are a few). */
const OUTBOX_KEPT_SLOTS = 64;

/**
 * Frames waiting for a write, with their request ids, in request order: each framed straight into
 * one byte buffer, which an emptied outbox keeps (up to OUTBOX_KEPT_BYTES) with its lists, so
 * queuing a pass's requests allocates no frame, and writing them one buffer per write.
 */
class Outbox {
  #bytes = new Uint8Array(OUTBOX_INITIAL_BYTES);
  #used = 0;
  readonly ids: number[] = [];
  /** Where each frame ends in #bytes. */
  readonly #ends: number[] = [];
  count = 0;

  /** Frames `payload` (its length checked: checkFrameLength) after those queued. */
  add(id: number, payload: Uint8Array): void {
    this.#room(4 + payload.length);
    this.#used = writeFrame(this.#bytes, this.#used, payload);
    this.ids[this.count] = id;
    this.#ends[this.count++] = this.#used;
  }

  /**
   * Frames the prepared Request with request_id `id`, of `n` bytes (its requestLength, checked:
   * checkFrameLength), after those queued.
   */
  addRequest(id: number, request: PreparedRead, n: number): void {
    this.#room(4 + n);
    const out = this.#bytes;
    const at = this.#used;
    out[at] = n & 0xff;
    out[at + 1] = (n >>> 8) & 0xff;
    out[at + 2] = (n >>> 16) & 0xff;
    out[at + 3] = n >>> 24;
    this.#used = request.writeRequest(out, at + 4, id);
    this.ids[this.count] = id;
    this.#ends[this.count++] = this.#used;
  }

  /** Grows the buffer to take `bytes` more. */
  #room(bytes: number): void {
    const need = this.#used + bytes;
    if (need <= this.#bytes.length) return;
    let size = this.#bytes.length * 2;
    while (size < need) size *= 2;
    const grown = new Uint8Array(size);
    grown.set(this.#bytes.subarray(0, this.#used));
    this.#bytes = grown;
  }

  /** Bytes of frame `i` (with its prefix). */
  frameBytes(i: number): number {
    return this.#ends[i]! - (i === 0 ? 0 : this.#ends[i - 1]!);
  }

  /** The index of request `id`'s frame, looked for from frame `from` on; -1 when not there. */
  indexOf(id: number, from: number): number {
    for (let i = from; i < this.count; i++) if (this.ids[i] === id) return i;
    return -1;
  }

  /** Takes frame `i` out (it is never written), keeping the order of the others. */
  removeAt(i: number): void {
    const start = i === 0 ? 0 : this.#ends[i - 1]!;
    const bytes = this.#ends[i]! - start;
    this.#bytes.copyWithin(start, start + bytes, this.#used);
    this.#used -= bytes;
    for (let k = i + 1; k < this.count; k++) {
      this.ids[k - 1] = this.ids[k]!;
      this.#ends[k - 1] = this.#ends[k]! - bytes;
    }
    this.count--;
  }

  /** Frames [from, to) in a buffer of their own (a writer may keep what it was given). */
  copy(from: number, to: number): Uint8Array {
    return this.#bytes.slice(from === 0 ? 0 : this.#ends[from - 1]!, this.#ends[to - 1]!);
  }

  /** Empties it. */
  clear(): void {
    if (this.#bytes.length > OUTBOX_KEPT_BYTES) this.#bytes = new Uint8Array(OUTBOX_INITIAL_BYTES);
    if (this.ids.length > OUTBOX_KEPT_SLOTS) this.ids.length = this.#ends.length = 0;
    this.#used = 0;
    this.count = 0;
  }
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
  readonly #pending: PendingRequests;
  /** Ids that timed out and may still be answered (at most MAX_EXPIRED_IDS; oldest forgotten first). */
  readonly #expired = new Set<number>();
  /**
   * Ids of `call` requests that timed out unanswered, oldest first: the provider may still carry
   * them out. An id leaves when its late answer arrives. When the session ends, those still
   * waiting for their answer join them, and all stay: the calls the provider held at the end,
   * which it may carry out until its process exits (endedWithCallsBefore). At most MAX_LATE_CALLS.
   */
  readonly #lateCalls = new Set<number>();
  /** True once a late call was forgotten past MAX_LATE_CALLS: unknown whether it was answered. */
  #lateCallForgotten = false;
  /** Woken when a late call is answered or the session ends (lateCallsAnswered). */
  readonly #lateCallWaiters = new Set<() => void>();
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
  /** Settles once the provider's stdin is closed, after the session ended (#finish). */
  #stdinClosed: Promise<void> = Promise.resolve();
  /**
   * Frames of requests made since the last write began, in request order (ids beside them): the
   * requests of one turn (a poll pass over a provider's devices) go out in one write, so the
   * provider is woken once for all of them. At most maxInFlight + SESSION_RESERVED_REQUESTS frames.
   */
  #outbox = new Outbox();
  /**
   * The outbox being written (empty between writes): the two swap at each write, and each keeps
   * the capacity it grew to, so queuing and writing a pass's frames allocates no list.
   */
  #sending = new Outbox();
  /**
   * The one deadline timer of the session, armed for the earliest deadline of a pending request
   * (or a later one: it re-arms when it fires early). Not a timer per request: at 10 Hz polling
   * a timer made and cleared per poll was most of what V8 promoted to its old space (every
   * cleared timer outlives several scavenges in the host's timer tables), and its CPU.
   */
  #deadlineTimer: TimerId | null = null;
  /** When #deadlineTimer fires (monotonic ms); Infinity when none is armed. */
  #deadlineTimerAt = Infinity;

  /** Resolves once when the session ends, with the reason. */
  readonly ended: Promise<SessionEnd>;

  constructor(
    readable: ReadableStream<Uint8Array>,
    writable: WritableStream<Uint8Array>,
    options: AdppClientOptions,
  ) {
    this.#maxInFlight = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
    this.#pending = new PendingRequests(this.#maxInFlight + SESSION_RESERVED_REQUESTS);
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
   * Poll reads (sendRead) the session takes now without refusing one for its bound: maxInFlight
   * less every request in flight. Infinity once it ended or a write failed (a read is then
   * refused for that, not for room). A poll pass of more due devices sends the rest as answers
   * free places (StateCache.#runPass).
   */
  get readRoom(): number {
    if (this.#end !== null || this.#writeFailure !== null) return Infinity;
    const room = this.#maxInFlight - this.#pending.size;
    return room > 0 ? room : 0;
  }

  /** The id the next request gets: every request sent so far has a lower one. */
  get nextRequestId(): number {
    return this.#nextId;
  }

  /** Late calls (`call` requests that timed out unanswered) not answered yet; 0 once ended. */
  get lateCalls(): number {
    return this.#end ? 0 : this.#lateCalls.size;
  }

  /**
   * Resolves true once no `call` request with an id below `beforeId` is late (timed out, and not
   * answered since): each was answered after all, or the session ended. False when `signal`
   * aborts first, and until the session ends once a late call was forgotten (MAX_LATE_CALLS).
   */
  lateCallsAnswered(beforeId: number, signal: AbortSignal): Promise<boolean> {
    if (!this.#lateCallBefore(beforeId)) return Promise.resolve(true);
    if (signal.aborted) return Promise.resolve(false);
    return new Promise((resolve) => {
      const done = (answered: boolean) => {
        this.#lateCallWaiters.delete(check);
        signal.removeEventListener("abort", onAbort);
        resolve(answered);
      };
      const check = () => {
        if (!this.#lateCallBefore(beforeId)) done(true);
      };
      const onAbort = () => done(false);
      this.#lateCallWaiters.add(check);
      signal.addEventListener("abort", onAbort);
    });
  }

  /**
   * Whether the session ended while the provider held a `call` request with an id below
   * `beforeId` (late, or waiting for its answer; or one was forgotten past MAX_LATE_CALLS): a
   * session closed by the runtime ends at once, and its provider may still carry the call out
   * until its process exits (the session's owner waits for that, see
   * ProviderSession.lateCallsWait).
   */
  endedWithCallsBefore(beforeId: number): boolean {
    return this.#end !== null && this.#callBefore(beforeId);
  }

  /** Whether a late call with an id below `beforeId` may still be carried out on this session. */
  #lateCallBefore(beforeId: number): boolean {
    return this.#end === null && this.#callBefore(beforeId);
  }

  #callBefore(beforeId: number): boolean {
    if (this.#lateCallForgotten) return true;
    for (const id of this.#lateCalls) if (id < beforeId) return true;
    return false;
  }

  #wakeLateCallWaiters(): void {
    for (const check of [...this.#lateCallWaiters]) check();
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
    return new Promise<ResponsePayloads[K]>((resolve, reject) => {
      this.send(kind, payload, timeoutMs, (err, body) => {
        if (err !== null) reject(err);
        else resolve(body!);
      });
    });
  }

  /**
   * `request` without a promise: `reply` gets the outcome once, never synchronously (a request
   * refused at once is replied to in a microtask), with the same errors as `request` rejects with.
   */
  send<K extends PayloadKind>(
    kind: K,
    payload: RequestPayloads[K],
    timeoutMs: number,
    reply: Reply<K>,
  ): void {
    this.#send(kind, payload, timeoutMs, reply, null);
  }

  /**
   * A ReadSignals `send` whose answer is decoded into `into` (SampleBatch, read_signals.ts): no
   * object per sample. `reply` gets `into` once it holds the answer's samples, or the error `send`
   * would give. `into` is not to be used for another request until then.
   */
  sendRead(
    request: PreparedRead,
    timeoutMs: number,
    into: SampleBatch,
    reply: ReadReply,
  ): void {
    this.#send("read_signals", request.payload, timeoutMs, reply, into, request);
  }

  #send<K extends PayloadKind>(
    kind: K,
    payload: RequestPayloads[K],
    timeoutMs: number,
    reply: Reply<K> | ReadReply,
    into: SampleBatch | null,
    prepared: PreparedRead | null = null,
  ): void {
    const ended = this.#end ?? this.#writeFailure;
    if (ended) {
      return replyLater(reply, unavailable(`provider session ended: ${ended.message}`));
    }
    // Poll reads stop at maxInFlight: the room past it is kept for every other request.
    const bound = into === null ? this.#maxInFlight + SESSION_RESERVED_REQUESTS : this.#maxInFlight;
    if (this.#pending.size >= bound) {
      return replyLater(reply, unavailable(`too many requests in flight (${bound})`));
    }
    const id = this.#nextId++;
    let encoded: Uint8Array | null = null;
    let length = 0;
    try {
      if (prepared !== null) {
        // Encoded once: only the request_id is written per request (no message object, no copy).
        if (prepared.error !== null) throw prepared.error;
        length = prepared.requestLength(id);
      } else {
        encoded = encodeRequest({ request_id: id, [kind]: payload } as WireRequest);
        length = encoded.length;
      }
      checkFrameLength(length, this.#maxFrameBytes);
    } catch (err) {
      // An oversize request is refused before any byte is written (the session stays usable).
      return replyLater(reply, new RuntimeError("INVALID_ARGUMENT", `cannot send ${kind}: ${err}`));
    }
    const deadlineMs = this.#clock.monoMs() + Math.max(0, timeoutMs);
    this.#pending.add({ id, kind, deadlineMs, timeoutMs, reply, into, read: prepared });
    if (deadlineMs < this.#deadlineTimerAt) this.#armDeadlineTimer(deadlineMs);
    if (encoded !== null) this.#outbox.add(id, encoded);
    else this.#outbox.addRequest(id, prepared!, length);
    this.#queueWrite();
  }

  /** (Re-)arms the deadline timer for `atMs`. */
  #armDeadlineTimer(atMs: number): void {
    if (this.#deadlineTimer !== null) this.#clock.clearTimer(this.#deadlineTimer);
    this.#deadlineTimerAt = atMs;
    this.#deadlineTimer = this.#clock.setTimer(
      this.#onDeadlineTimer,
      Math.max(0, atMs - this.#clock.monoMs()),
    );
  }

  /**
   * Expires every request past its deadline (in the order they were sent); re-arms for the rest.
   * One whose frame still waits for the pipe (the provider does not read its stdin) is taken out
   * of the outbox, never to be written, and fails as never written (neverWritten): a timeout, as a
   * liveness check counts it, but not one the provider may still carry out (no late call).
   */
  readonly #onDeadlineTimer = (): void => {
    this.#deadlineTimer = null;
    this.#deadlineTimerAt = Infinity;
    if (this.#end) return;
    const now = this.#clock.monoMs();
    let next = Infinity;
    for (let i = 0; i < this.#pending.size;) {
      const p = this.#pending.at(i);
      if (p.deadlineMs > now) {
        if (p.deadlineMs < next) next = p.deadlineMs;
        i++;
        continue;
      }
      this.#pending.removeAt(i);
      if (this.#takeUnstarted(p.id)) {
        const err = deadlineExceeded(
          `${p.kind} could not be written within ${p.timeoutMs} ms (the provider does not read its stdin): taken back, never sent`,
        );
        unwritten.add(err);
        deliver(p.reply, err);
        continue;
      }
      this.#rememberExpired(p.id);
      if (p.kind === "call") this.#rememberLateCall(p.id);
      deliver(p.reply, deadlineExceeded(`${p.kind} got no answer within ${p.timeoutMs} ms`));
    }
    if (next < Infinity) this.#armDeadlineTimer(next);
    this.#endIfDrained();
  };

  #disarmDeadlineTimer(): void {
    if (this.#deadlineTimer === null) return;
    this.#clock.clearTimer(this.#deadlineTimer);
    this.#deadlineTimer = null;
    this.#deadlineTimerAt = Infinity;
  }

  /**
   * Whether request `id`'s frame waits for the pipe, not a byte of it handed to it: in the outbox,
   * or in the one being written after the group under way (whose write a pipe not read holds).
   */
  #unstarted(id: number): boolean {
    return this.#outbox.indexOf(id, 0) >= 0 || this.#sending.indexOf(id, this.#groupTo) >= 0;
  }

  /** Takes request `id`'s frame back if it is #unstarted (it is never written); true when it was. */
  #takeUnstarted(id: number): boolean {
    let i = this.#outbox.indexOf(id, 0);
    if (i >= 0) {
      this.#outbox.removeAt(i);
      return true;
    }
    i = this.#sending.indexOf(id, this.#groupTo);
    if (i < 0) return false;
    this.#sending.removeAt(i);
    return true;
  }

  /** Closes the provider's stdin (its stop signal) and ends the session. */
  async close(): Promise<void> {
    this.#finish({ reason: "closed", message: "closed by the runtime" });
    await this.#stdinClosed;
  }

  /** Queues a write of the outbox, unless one is queued already. */
  #queueWrite(): void {
    // A write already queued behind the one under way takes this frame too.
    if (this.#outbox.count > 1) return;
    this.#writeChain = this.#writeChain.then(this.#writeOutboxNow);
  }

  /**
   * Writes every frame queued since the last write (the next write is chained after this one, so
   * the outbox written here is free again by then), in groups of at most PIPE_BUF bytes: a pipe
   * takes such a write whole or not at all, so a failed write (EPIPE) fails exactly the requests
   * the provider never saw. A chain of promises, not an async function: no coroutine per write.
   */
  readonly #writeOutboxNow = (): Promise<void> | undefined => {
    const out = this.#outbox;
    this.#outbox = this.#sending;
    this.#sending = out;
    return this.#writeGroupAt(0);
  };

  /** First frame of the group being written (in #sending), and the frame after its last. */
  #groupFrom = 0;
  #groupTo = 0;

  /** Writes the group of frames of #sending that starts at frame `i`, then the rest. */
  #writeGroupAt(i: number): Promise<void> | undefined {
    const out = this.#sending;
    const n = out.count;
    if (this.#end || i >= n) {
      out.clear();
      return undefined;
    }
    if (this.#writeFailure) {
      for (let k = i; k < n; k++) this.#failUnwritten(out.ids[k]!, this.#writeFailure);
      out.clear();
      return undefined;
    }
    let j = i + 1;
    let bytes = out.frameBytes(i);
    while (j < n && bytes + out.frameBytes(j) <= PIPE_BUF) bytes += out.frameBytes(j++);
    this.#groupFrom = i;
    this.#groupTo = j;
    return this.#writer.write(out.copy(i, j)).then(this.#onGroupWritten, this.#onGroupFailed);
  }

  readonly #onGroupWritten = (): Promise<void> | undefined => this.#writeGroupAt(this.#groupTo);

  readonly #onGroupFailed = (err: unknown): void => {
    const failure = this.#writeFailure ??= {
      reason: "transport_error",
      message: `write failed: ${errorMessage(err)}`,
    };
    const out = this.#sending;
    for (let k = this.#groupFrom; k < out.count; k++) this.#failUnwritten(out.ids[k]!, failure);
    out.clear();
  };

  /** Rejects the request whose frame was not written (the provider never saw it). */
  #failUnwritten(id: number, failure: SessionEnd): void {
    const pending = this.#pending.take(id);
    if (pending) {
      const err = unavailable(`provider session ended: ${failure.message}`);
      unwritten.add(err);
      deliver(pending.reply, err);
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
        // Every answer of a chunk is dispatched before the next read, with no promise per frame.
        const done = await reader.readFrames(this.#onFrame);
        if (done) {
          this.#finish(
            this.#writeFailure ?? { reason: "eof", message: "provider closed its stdout" },
          );
          return;
        }
        // Closed by the runtime, the provider may still finish the requests in hand: its stdout
        // is read on (the answers dropped in #onFrame) until it closes it, which it does within
        // the budget of the termination that closed the session (exit or signal). A pipe no
        // longer read would fail its writes (EPIPE: a C provider dies of SIGPIPE).
        if (this.#end !== null && this.#end.reason !== "closed") return;
      }
    } catch (err) {
      this.#finish({ reason: "protocol_violation", message: `bad frame: ${errorMessage(err)}` });
    } finally {
      reader.cancel().catch(() => {});
    }
  }

  /** One frame from the provider (`buf[start..end)`, often the read buffer, decoded at once). */
  readonly #onFrame = (buf: Uint8Array, start: number, end: number): void => {
    if (this.#end) return; // a frame after a protocol violation in the same chunk
    this.#lastFrameAt = this.#clock.monoMs();
    // An OK ReadSignals answer to a sendRead: decoded into its batch, no object per sample.
    const id = fastResponseId(buf, start, end);
    if (id >= 0) {
      const pending = this.#pending.find(id);
      if (
        pending?.into && decodeReadSignalsInto(buf, pending.into, pending.read!.deviceIdBytes)
      ) {
        this.#pending.take(id);
        deliverRead(pending, pending.into);
        this.#endIfDrained();
        return;
      }
    }
    let response: WireResponse;
    try {
      response = decodeResponse(start === 0 && end === buf.length ? buf : buf.subarray(start, end));
    } catch (err) {
      this.#finish({
        reason: "protocol_violation",
        message: `unparseable response: ${errorMessage(err)}`,
      });
      return;
    }
    this.#dispatch(response);
  };

  #dispatch(response: WireResponse): void {
    const id = response.request_id ?? 0;
    const pending = this.#pending.take(id);
    if (pending) {
      // The deadline timer stays armed: it finds nothing to expire, or the next request's.
      settle(pending, response);
      this.#endIfDrained();
      return;
    }
    if (this.#expired.delete(id)) {
      // A late answer to a timed-out request: discarded. A call's says it is carried out.
      if (this.#lateCalls.delete(id)) this.#wakeLateCallWaiters();
      return;
    }
    this.#finish({
      reason: "protocol_violation",
      message: `response with request_id ${id} matches no request`,
    });
  }

  #rememberExpired(id: number): void {
    this.#expired.add(id);
    if (this.#expired.size > MAX_EXPIRED_IDS) {
      const oldest = this.#expired.values().next().value;
      if (oldest !== undefined) this.#expired.delete(oldest);
    }
  }

  #rememberLateCall(id: number): void {
    this.#lateCalls.add(id);
    if (this.#lateCalls.size > MAX_LATE_CALLS) {
      const oldest = this.#lateCalls.values().next().value;
      if (oldest !== undefined) this.#lateCalls.delete(oldest);
      this.#lateCallForgotten = true;
    }
  }

  #finish(end: SessionEnd): void {
    if (this.#end) return;
    this.#end = end;
    this.#disarmDeadlineTimer();
    for (const p of this.#pending.takeAll()) {
      const err = unavailable(`provider session ended: ${end.message}`);
      // A frame still waiting for the pipe is never written now: the provider never got it.
      if (this.#unstarted(p.id)) unwritten.add(err);
      // Held by the provider at the end (endedWithCallsBefore), as a late call is.
      else if (p.kind === "call") this.#rememberLateCall(p.id);
      deliver(p.reply, err);
    }
    this.#wakeLateCallWaiters();
    this.#resolveEnded(end);
    // Nothing is written after the end, whatever ended it: the provider's stdin is closed (its
    // stop signal), which also releases the pipe (a crashed provider's was otherwise held open
    // for the life of the runtime, one more with each restart).
    this.#stdinClosed = this.#writeChain.then(() => this.#writer.close()).catch(() => {
      // the pipe may already be gone
    });
  }
}

/** Replies with the answer's payload, or the error its status or a missing payload means. */
function settle(p: Pending, r: WireResponse): void {
  const code = r.status?.code ?? StatusCode.UNSPECIFIED;
  if (code !== StatusCode.OK) {
    const text = providerTextWithin(
      r.status?.message || "no message",
      PROVIDER_STATUS_MESSAGE_CHARS,
    );
    deliver(p.reply, new ProviderStatusError(code, `provider answered ${codeName(code)}: ${text}`));
    return;
  }
  const body = r[p.kind];
  if (body === undefined) {
    deliver(p.reply, new RuntimeError("INTERNAL", `provider response lacks the ${p.kind} payload`));
    return;
  }
  if (p.into !== null) {
    // A sendRead's answer that the fast path left to the generated decoder.
    const read = body as ResponsePayloads["read_signals"];
    p.into.fillFrom(read.values ?? [], read.device_id ?? "", p.read!.payload.device_id ?? "");
    deliverRead(p, p.into);
    return;
  }
  deliver(p.reply, null, body);
}

/**
 * Replies to a sendRead with its decoded answer, or with OtherDeviceAnswerError when the answer
 * is for another device (its samples are then not given as the asked device's).
 */
function deliverRead(p: Pending, into: SampleBatch): void {
  if (into.otherDeviceId === null) return deliver(p.reply, null, into);
  const err = new OtherDeviceAnswerError(p.read!.payload.device_id ?? "", into.otherDeviceId);
  into.clear();
  deliver(p.reply, err);
}

/**
 * Calls a reply. One that throws is reported as an uncaught error, as a timer's is, and never
 * ends the session (the read loop would take it for a bad frame).
 */
// deno-lint-ignore no-explicit-any
function deliver(reply: Reply<any> | ReadReply, err: Error | null, body?: unknown): void {
  try {
    // deno-lint-ignore no-explicit-any
    (reply as Reply<any>)(err, body);
  } catch (thrown) {
    queueMicrotask(() => {
      throw thrown;
    });
  }
}

/** A refusal before anything was sent, replied in a microtask (a reply is never synchronous). */
// deno-lint-ignore no-explicit-any
function replyLater(reply: Reply<any> | ReadReply, err: Error): void {
  unwritten.add(err);
  queueMicrotask(() => deliver(reply, err));
}

const CODE_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(StatusCode).map(([k, v]) => [v, k]),
);

function codeName(code: number): string {
  return CODE_NAMES[code] ?? `code ${code}`;
}
