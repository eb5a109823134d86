/**
 * ADPP stdio framing: uint32 little-endian payload length, then the payload.
 * Max payload 1 MiB (exactly 1 MiB allowed). Zero-length frames are never valid messages.
 */

import { PROVIDER_TEXT_CHARS, quoteProviderText } from "../common/mod.ts";

/** Largest payload either side accepts: `len > MAX_FRAME_BYTES` is an error. */
export const MAX_FRAME_BYTES = 1_048_576;

/** Why a frame stream ended badly. */
export type FrameErrorKind = "oversize" | "zero_length" | "truncated";

export class FrameError extends Error {
  readonly kind: FrameErrorKind;
  constructor(kind: FrameErrorKind, message: string) {
    super(message);
    this.name = "FrameError";
    this.kind = kind;
  }
}

/** Prefixes one payload with its length. Throws FrameError for an oversize or empty payload. */
export function encodeFrame(payload: Uint8Array, maxBytes = MAX_FRAME_BYTES): Uint8Array {
  checkFrameLength(payload.length, maxBytes);
  const out = new Uint8Array(4 + payload.length);
  writeFrame(out, 0, payload);
  return out;
}

/** Throws FrameError, as encodeFrame does, for a payload of `n` bytes that cannot be framed. */
export function checkFrameLength(n: number, maxBytes = MAX_FRAME_BYTES): void {
  if (n > maxBytes) throw new FrameError("oversize", `frame of ${n} bytes exceeds ${maxBytes}`);
  if (n === 0) throw new FrameError("zero_length", "zero-length frame");
}

/**
 * Writes one frame (prefix and payload) into `out` at `at` (room for 4 + payload bytes there;
 * the length unchecked: checkFrameLength). Returns where the frame ends.
 */
export function writeFrame(out: Uint8Array, at: number, payload: Uint8Array): number {
  const n = payload.length;
  // The prefix byte by byte, not through a DataView: one object less per frame (the poll path).
  out[at] = n & 0xff;
  out[at + 1] = (n >>> 8) & 0xff;
  out[at + 2] = (n >>> 16) & 0xff;
  out[at + 3] = n >>> 24;
  out.set(payload, at + 4);
  return at + 4 + n;
}

/**
 * Receives one payload: the bytes `buf[start..end)` (no view made per payload: the poll path
 * decodes them in place).
 */
export type PayloadSink = (buf: Uint8Array, start: number, end: number) => void;

/**
 * Splits bytes into payloads, whatever the chunk boundaries: a frame that arrives in pieces is
 * gathered into one buffer allocated once its length is known, so every payload byte is copied
 * exactly once; a frame inside one chunk is copied too, so an emitted payload never aliases the
 * chunk (whose buffer the caller may reuse). Throws FrameError on an oversize or zero-length
 * prefix (before buffering it) and, from `end`, on EOF mid-frame.
 */
class FrameSplitter {
  readonly #maxBytes: number;
  readonly #prefix = new Uint8Array(4);
  #prefixFill = 0; // bytes of the length prefix received so far
  #payload: Uint8Array | null = null; // the frame being gathered (its length is known)
  #payloadFill = 0;

  constructor(maxBytes: number) {
    this.#maxBytes = maxBytes;
  }

  /**
   * Feeds one chunk; calls `emit` for each payload completed by it: the payload is
   * `buf[start..end)`, where `buf` is a buffer of its own (start 0, end its length) or, with
   * `alias`, for a payload wholly inside the chunk, the chunk itself (valid while `emit` runs; no
   * view or copy made).
   */
  push(chunk: Uint8Array, emit: PayloadSink, alias = false): void {
    let off = 0;
    while (off < chunk.length) {
      if (this.#payload === null) {
        let need: number;
        let prefix: Uint8Array;
        let prefixAt: number;
        if (this.#prefixFill === 0 && chunk.length - off >= 4) {
          need = readLength(chunk, off);
          prefix = chunk;
          prefixAt = off;
          off += 4;
        } else {
          while (this.#prefixFill < 4 && off < chunk.length) {
            this.#prefix[this.#prefixFill++] = chunk[off++]!;
          }
          if (this.#prefixFill < 4) return;
          this.#prefixFill = 0;
          need = readLength(this.#prefix, 0);
          prefix = this.#prefix;
          prefixAt = 0;
        }
        if (need > this.#maxBytes) {
          throw new FrameError(
            "oversize",
            `frame length ${need} exceeds ${this.#maxBytes}` +
              textInsteadOfFrame(prefix, prefixAt, chunk, off),
          );
        }
        if (need === 0) throw new FrameError("zero_length", "zero-length frame");
        if (chunk.length - off >= need) {
          // whole frame in this chunk
          if (alias) emit(chunk, off, off + need);
          else emit(chunk.slice(off, off + need), 0, need);
          off += need;
          continue;
        }
        this.#payload = new Uint8Array(need);
        this.#payloadFill = 0;
      }
      const payload = this.#payload;
      const take = Math.min(payload.length - this.#payloadFill, chunk.length - off);
      payload.set(chunk.subarray(off, off + take), this.#payloadFill);
      this.#payloadFill += take;
      off += take;
      if (this.#payloadFill === payload.length) {
        this.#payload = null;
        emit(payload, 0, payload.length);
      }
    }
  }

  /** The input ended: throws FrameError (truncated) when it ended in the middle of a frame. */
  end(): void {
    if (this.#payload !== null || this.#prefixFill > 0) {
      throw new FrameError("truncated", "stream ended in the middle of a frame");
    }
  }
}

/**
 * Splits a byte stream into payloads (see FrameSplitter). Errors the stream on an oversize or
 * zero-length prefix and on EOF mid-frame; a clean EOF between frames just ends the stream.
 */
export class FrameDecoderStream extends TransformStream<Uint8Array, Uint8Array> {
  constructor(maxBytes = MAX_FRAME_BYTES) {
    const splitter = new FrameSplitter(maxBytes);
    super({
      transform(chunk, controller) {
        splitter.push(chunk, (payload) => controller.enqueue(payload)); // (a buffer of its own)
      },
      flush() {
        splitter.end();
      },
    });
  }
}

/**
 * Bytes asked for per read from a byte stream (a provider's stdout, the process's stdin). One
 * buffer of this size per FrameReader, reused for every read, and resident (it is zeroed when
 * made): the runtime holds one per provider. A poll pass's answers are a few KiB (the runtime
 * writes a pass's requests in at most PIPE_BUF bytes); a longer frame is put together over
 * several reads. Was 64 KiB, the pipe's capacity: 48 KiB more per provider for nothing.
 */
export const FRAME_READ_CHUNK_BYTES = 16_384;

/**
 * Reads payloads from a byte stream, like `readable.pipeThrough(new FrameDecoderStream())` but
 * without allocating per read: a byte stream (Deno's stdio and child pipes) is read through a
 * BYOB reader into one reused buffer of FRAME_READ_CHUNK_BYTES, where the default reader would
 * allocate a fresh 64 KiB buffer for every read (each poll answer) and leave it to the garbage
 * collector. Any other stream is read with its default reader. `read` rejects with FrameError on
 * a framing error and resolves `done` on a clean EOF between frames.
 */
export class FrameReader {
  readonly #splitter: FrameSplitter;
  readonly #byob: ReadableStreamBYOBReader | null;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array> | null;
  #buffer: ArrayBuffer | null;
  /** Payloads completed by the last chunk and not yet returned (drained before the next read). */
  #ready: Uint8Array[] = [];
  #readyAt = 0;
  readonly #emit: PayloadSink = (payload) => void this.#ready.push(payload); // its own buffer

  constructor(
    readable: ReadableStream<Uint8Array>,
    maxBytes = MAX_FRAME_BYTES,
    chunkBytes = FRAME_READ_CHUNK_BYTES,
  ) {
    this.#splitter = new FrameSplitter(maxBytes);
    let byob: ReadableStreamBYOBReader | null = null;
    try {
      byob = readable.getReader({ mode: "byob" });
    } catch {
      // not a byte stream: the default reader below
    }
    this.#byob = byob;
    this.#reader = byob === null ? readable.getReader() : null;
    this.#buffer = byob === null ? null : new ArrayBuffer(chunkBytes);
  }

  /** The next payload, or done at a clean EOF between frames. */
  read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    // Promise chains rather than async functions: a payload reaches the caller in as few
    // microtask turns as through a pipeThrough (callers may rely on that ordering).
    if (this.#readyAt < this.#ready.length) return Promise.resolve(this.#take());
    if (this.#byob === null) return this.#reader!.read().then(this.#onChunk);
    return this.#byob.read(new Uint8Array(this.#buffer!)).then(this.#onView);
  }

  /**
   * Reads the next chunk and gives each payload it completes to `onPayload`, synchronously and
   * in order, with no promise per payload (the ADPP client: a provider's answers to one poll pass
   * arrive in one chunk). A payload is `buf[start..end)` (PayloadSink), `buf` often the reused
   * read buffer: it is valid while `onPayload` runs. Resolves true at a clean EOF between frames,
   * false otherwise; rejects with FrameError on a framing error (the payloads before it in the
   * chunk were given). Not to be mixed with `read` on one reader.
   */
  readFrames(onPayload: PayloadSink): Promise<boolean> {
    this.#sink = onPayload;
    if (this.#byob === null) return this.#reader!.read().then(this.#feedChunk);
    return this.#byob.read(new Uint8Array(this.#buffer!)).then(this.#feedView);
  }

  #sink: PayloadSink = () => {};

  readonly #feedView = (r: ReadableStreamReadResult<Uint8Array>): boolean => {
    if (r.value !== undefined) this.#buffer = r.value.buffer as ArrayBuffer;
    return this.#feedChunk(r);
  };

  readonly #feedChunk = (r: ReadableStreamReadResult<Uint8Array>): boolean => {
    if (r.done) {
      this.#splitter.end();
      return true;
    }
    this.#splitter.push(r.value, this.#sink, true);
    return false;
  };

  /**
   * True while a complete payload from the last chunk waits to be returned: the next `read`
   * resolves without reading the stream (a provider answering several requests of one chunk).
   */
  get buffered(): boolean {
    return this.#readyAt < this.#ready.length;
  }

  /** Stops reading and releases the stream. */
  cancel(reason?: unknown): Promise<void> {
    return (this.#byob ?? this.#reader)!.cancel(reason);
  }

  readonly #onView = (r: ReadableStreamReadResult<Uint8Array>) => {
    if (r.value !== undefined) this.#buffer = r.value.buffer as ArrayBuffer; // the same memory, handed back
    return this.#onChunk(r);
  };

  readonly #onChunk = (
    r: ReadableStreamReadResult<Uint8Array>,
  ): ReadableStreamReadResult<Uint8Array> | Promise<ReadableStreamReadResult<Uint8Array>> => {
    if (r.done) {
      this.#splitter.end();
      return { done: true } as ReadableStreamReadDoneResult<Uint8Array>;
    }
    try {
      this.#splitter.push(r.value, this.#emit);
    } catch (err) {
      this.#ready.length = this.#readyAt = 0; // an erroring stream delivers nothing more
      throw err;
    }
    return this.#readyAt < this.#ready.length ? this.#take() : this.read();
  };

  #take(): ReadableStreamReadResult<Uint8Array> {
    const value = this.#ready[this.#readyAt++]!;
    if (this.#readyAt === this.#ready.length) this.#ready.length = this.#readyAt = 0;
    return { done: false, value };
  }
}

/** Bytes of text read to quote it: enough for PROVIDER_TEXT_CHARS characters and the cut's mark. */
const QUOTED_TEXT_BYTES = 4 * (PROVIDER_TEXT_CHARS + 1);

/** Whether a byte is printable ASCII, a tab or a line break: what a print writes. */
function isTextByte(b: number): boolean {
  return (b >= 0x20 && b < 0x7f) || b === 0x09 || b === 0x0a || b === 0x0d;
}

/** Whether a byte may be part of printed text: a text byte or one of a UTF-8 sequence. */
function mayBeText(b: number): boolean {
  return b >= 0x80 || isTextByte(b);
}

/**
 * What to add to the oversize error of the length prefix `prefix[at..at+4)` (the rest of the
 * chunk from `rest[from..]`): when the prefix is text (a print to the stream, as a provider's
 * console.log on its stdout), that it is, and the text quoted up to the first control byte (a
 * frame written after it) and cut to PROVIDER_TEXT_CHARS; else nothing. Four text bytes read as a
 * length of at least 0x09090909 (over 144 MiB): text between frames always meets the bound, and
 * was named only as a frame of that many bytes.
 */
function textInsteadOfFrame(
  prefix: Uint8Array,
  at: number,
  rest: Uint8Array,
  from: number,
): string {
  for (let i = at; i < at + 4; i++) if (!isTextByte(prefix[i]!)) return "";
  const last = Math.min(rest.length, from + QUOTED_TEXT_BYTES - 4);
  let end = from;
  while (end < last && mayBeText(rest[end]!)) end++;
  const bytes = new Uint8Array(4 + end - from);
  bytes.set(prefix.subarray(at, at + 4));
  bytes.set(rest.subarray(from, end), 4);
  const text = new TextDecoder().decode(bytes);
  return `: text, not an ADPP frame (printed to the stream?): ${quoteProviderText(text)}`;
}

function readLength(bytes: Uint8Array, at: number): number {
  return (bytes[at]! | (bytes[at + 1]! << 8) | (bytes[at + 2]! << 16) | (bytes[at + 3]! << 24)) >>>
    0;
}

/** Prefixes each payload with its length; errors on an oversize or empty payload. */
export class FrameEncoderStream extends TransformStream<Uint8Array, Uint8Array> {
  constructor(maxBytes = MAX_FRAME_BYTES) {
    super({
      transform(payload, controller) {
        controller.enqueue(encodeFrame(payload, maxBytes));
      },
    });
  }
}

/** Bytes a pipe writes atomically (POSIX PIPE_BUF on Linux): the bound of one coalesced write. */
export const PIPE_BUF = 4096;

/** Frames [from, to) one after the other in one buffer of `bytes`. */
export function concatFrames(
  frames: readonly Uint8Array[],
  from: number,
  to: number,
  bytes: number,
): Uint8Array {
  const out = new Uint8Array(bytes);
  let at = 0;
  for (let i = from; i < to; i++) {
    out.set(frames[i]!, at);
    at += frames[i]!.length;
  }
  return out;
}
