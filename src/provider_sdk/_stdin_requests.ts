import { FrameReader, type PayloadSink } from "../adpp/mod.ts";

/**
 * Bytes of requests (payloads) read from stdin and not yet served past which the SDK stops reading
 * stdin until the serve loop takes one: the pipe's capacity (64 KiB), so a provider whose handler
 * hangs holds about what the pipe would have held (plus the frames one read completes: at most
 * FRAME_READ_CHUNK_BYTES, or one frame of up to MAX_FRAME_BYTES gathered over several reads). The
 * runtime sends a poll pass in at most PIPE_BUF bytes and keeps at most DEFAULT_MAX_IN_FLIGHT (64)
 * requests in flight, so this and STDIN_READ_AHEAD_REQUESTS are reached only by a client that
 * keeps writing to a hung provider; stdin's close is then seen once the hung handler ends (or at
 * SIGTERM), as before.
 */
export const STDIN_READ_AHEAD_BYTES = 65_536;

/**
 * Requests read from stdin and not yet served past which the SDK stops reading stdin (as
 * STDIN_READ_AHEAD_BYTES, for small requests: each one held costs an object and a buffer). Four
 * times the runtime's DEFAULT_MAX_IN_FLIGHT; one read past it may complete more (a read is at most
 * FRAME_READ_CHUNK_BYTES).
 */
export const STDIN_READ_AHEAD_REQUESTS = 256;

/**
 * The requests of a provider's stdin, read ahead of the serve loop: one read of stdin is in flight
 * at all times (while under STDIN_READ_AHEAD_BYTES and STDIN_READ_AHEAD_REQUESTS and not at the
 * end), also while a handler runs, so the end of stdin is seen while a request is in progress
 * (`onEof`), not only once the loop comes back to read. The loop takes the requests in order with `take`, synchronously (no promise
 * per request), and waits with `next` only when none is left. `sameRead` keeps the boundaries of
 * the reads of stdin: the loop answers the requests of one read together.
 *
 * One promise per read of stdin (FrameReader.readFrames: the payloads of a read are handed over
 * synchronously), one copy of each payload (the read buffer is reused), no timer.
 */
export class StdinRequests {
  readonly #frames: FrameReader;
  /** Payloads read and not yet taken, from `#at` on (reset once all are taken). */
  readonly #payloads: Uint8Array[] = [];
  #at = 0;
  /**
   * Where the payloads of each read end in `#payloads` (only reads that completed one), from
   * `#endAt` on. The last is where the payloads the loop may take end; those past it belong to
   * the read in flight, and are dropped if it fails.
   */
  readonly #ends: number[] = [];
  #endAt = 0;
  /** Bytes of the payloads not yet taken. */
  #bytes = 0;
  #reading = false;
  /** How stdin ended: null while open, true at a clean EOF, else the read's error. */
  #end: true | { readonly error: unknown } | null = null;
  #cancelled = false;
  /** The loop waiting in `next`: handed the next request (or the end) by the read. */
  #waiter: { resolve(p: Uint8Array | null): void; reject(e: unknown): void } | null = null;
  readonly #arrived: () => void;
  /** Called once when stdin reaches a clean EOF (not after `cancel`). */
  onEof: () => void = () => {};

  /** `arrived` is called when a read of stdin brings requests (the lease: a request arrived). */
  constructor(readable: ReadableStream<Uint8Array>, arrived: () => void) {
    this.#frames = new FrameReader(readable);
    this.#arrived = arrived;
  }

  /** The next request read, or undefined when none is left to take (then `next`). */
  take(): Uint8Array | undefined {
    const at = this.#at;
    if (at >= this.#visible()) return undefined;
    if (at === this.#ends[this.#endAt]) this.#endAt++; // the read before is all taken
    const payload = this.#payloads[at]!;
    this.#at = at + 1;
    this.#bytes -= payload.length;
    if (!this.#reading) this.#fill();
    return payload;
  }

  /**
   * True while another request of the read the last one taken came from waits: the loop keeps
   * the answers of one read to write them together.
   */
  get sameRead(): boolean {
    return this.#at < (this.#ends[this.#endAt] ?? 0);
  }

  /** Requests read and not yet taken (those of a read still in flight not counted). */
  get waiting(): number {
    return this.#visible() - this.#at;
  }

  /**
   * Waits for stdin: resolves with the next request (take), null at a clean EOF once every
   * request read was taken; rejects with the read's error (FrameError, a read failure) then.
   */
  next(): Promise<Uint8Array | null> {
    const payload = this.take();
    if (payload !== undefined) return Promise.resolve(payload);
    const end = this.#end;
    if (end === true) return Promise.resolve(null);
    if (end !== null) return Promise.reject(end.error);
    this.#fill();
    return new Promise((resolve, reject) => this.#waiter = { resolve, reject });
  }

  /** Stops reading and releases stdin; `onEof` is not called any more. */
  cancel(): Promise<void> {
    this.#cancelled = true;
    this.onEof = () => {};
    return this.#frames.cancel();
  }

  #visible(): number {
    const ends = this.#ends;
    return ends.length === 0 ? 0 : ends[ends.length - 1]!;
  }

  #fill(): void {
    if (this.#reading || this.#end !== null || this.#cancelled) return;
    if (
      this.#bytes >= STDIN_READ_AHEAD_BYTES ||
      this.#payloads.length - this.#at >= STDIN_READ_AHEAD_REQUESTS
    ) {
      return;
    }
    if (this.#at === this.#payloads.length) {
      // All taken: start the arrays over (no read in flight, nothing kept).
      this.#payloads.length = 0;
      this.#ends.length = 0;
      this.#at = 0;
      this.#endAt = 0;
    }
    this.#reading = true;
    this.#frames.readFrames(this.#sink).then(this.#onRead, this.#onError);
  }

  readonly #sink: PayloadSink = (buf, start, end) => {
    this.#payloads.push(buf.slice(start, end)); // buf may be the reused read buffer
    this.#bytes += end - start;
  };

  readonly #onRead = (eof: boolean): void => {
    this.#reading = false;
    const n = this.#payloads.length;
    if (n > this.#visible()) {
      this.#ends.push(n);
      this.#arrived();
    }
    if (eof) {
      this.#end = true;
      if (!this.#cancelled) this.onEof();
    } else {
      this.#fill();
    }
    this.#woken();
  };

  readonly #onError = (error: unknown): void => {
    this.#reading = false;
    // The requests of the failed read before its error are dropped, as FrameReader.read does.
    const visible = this.#visible();
    for (let i = visible; i < this.#payloads.length; i++) this.#bytes -= this.#payloads[i]!.length;
    this.#payloads.length = visible;
    this.#end = { error };
    this.#woken();
  };

  /** Hands the loop waiting in `next` its request, or the end. */
  #woken(): void {
    const waiter = this.#waiter;
    if (waiter === null) return;
    const payload = this.take();
    if (payload === undefined && this.#end === null) return; // a read that completed no request
    this.#waiter = null;
    if (payload !== undefined) waiter.resolve(payload);
    else if (this.#end === true) waiter.resolve(null);
    else waiter.reject((this.#end as { readonly error: unknown }).error);
  }
}
