/** Server-sent events: a frame splitter (pure) and a streaming client built on fetch. */

/** One parsed SSE frame. Comment-only frames (keep-alives) parse to null. */
export interface SseFrame {
  readonly event: string;
  readonly id: string | null;
  readonly data: string;
}

/**
 * Splits a text stream into frames at blank lines. Holds at most `maxPendingChars` of an
 * unterminated frame, so a server that never ends a frame cannot grow the harness without bound.
 */
export class SseFrameSplitter {
  #buf = "";
  readonly #maxPending: number;

  constructor(maxPendingChars = 1 << 20) {
    this.#maxPending = maxPendingChars;
  }

  /** Appends text and returns the complete frames it finished (without the blank line). */
  push(text: string): string[] {
    this.#buf += text.includes("\r") ? text.replace(/\r\n?/g, "\n") : text;
    const frames: string[] = [];
    let start = 0;
    for (;;) {
      const end = this.#buf.indexOf("\n\n", start);
      if (end < 0) break;
      frames.push(this.#buf.slice(start, end));
      start = end + 2;
    }
    this.#buf = this.#buf.slice(start);
    if (this.#buf.length > this.#maxPending) {
      throw new Error(`SSE frame longer than ${this.#maxPending} characters`);
    }
    return frames;
  }
}

/** Parses a frame's `event:`, `id:` and `data:` lines (multi-line data joined with "\n"). */
export function parseSseFrame(frame: string): SseFrame | null {
  let event = "message";
  let id: string | null = null;
  const data: string[] = [];
  let any = false;
  for (const line of frame.split("\n")) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    any = true;
    if (field === "event") event = value;
    else if (field === "id") id = value;
    else if (field === "data") data.push(value);
  }
  return any ? { event, id, data: data.join("\n") } : null;
}

/**
 * The numeric id of a frame without a full parse (hot path of the fan-out workload, where the
 * harness reads ~100k frames/s): `n` of this runtime's `<boot>-<n>`, or a plain number (anolis);
 * null when the frame has no `id:` line.
 */
export function frameId(frame: string): number | null {
  const at = frame.startsWith("id: ") ? 0 : frame.indexOf("\nid: ");
  if (at < 0) return null;
  let from = at === 0 ? 4 : at + 5;
  const nl = frame.indexOf("\n", from);
  const end = nl < 0 ? frame.length : nl;
  const dash = frame.lastIndexOf("-", end);
  if (dash >= from) from = dash + 1;
  const n = Number(frame.slice(from, end));
  return Number.isFinite(n) ? n : null;
}

/** Called with every complete frame and the performance.now() of the chunk that completed it. */
export type FrameHandler = (frame: string, receivedAtMs: number) => void;

/** An open GET /v0/events stream read in the background until `close()`. */
export class SseClient {
  readonly #abort: AbortController;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #done: Promise<void>;
  #error: unknown = null;
  #closing = false;

  private constructor(
    abort: AbortController,
    body: ReadableStream<Uint8Array>,
    onFrame: FrameHandler,
  ) {
    this.#abort = abort;
    this.#reader = body.getReader();
    this.#done = this.#pump(onFrame);
  }

  /**
   * Opens the stream; resolves once the 200 header arrived. Throws with the status and body when
   * the server refuses (e.g. 503 at the client limit), or when no header comes within timeoutMs.
   */
  static async open(url: string, onFrame: FrameHandler, timeoutMs = 10_000): Promise<SseClient> {
    const abort = new AbortController();
    const timer = setTimeout(
      () => abort.abort(new Error(`no SSE response within ${timeoutMs} ms`)),
      timeoutMs,
    );
    let res: Response;
    try {
      res = await fetch(url, { signal: abort.signal, headers: { accept: "text/event-stream" } });
    } finally {
      clearTimeout(timer);
    }
    if (res.status !== 200 || !res.body) {
      const text = await res.text().catch(() => "");
      throw new Error(`GET ${url} -> HTTP ${res.status}: ${text.slice(0, 300)}`);
    }
    return new SseClient(abort, res.body, onFrame);
  }

  async #pump(onFrame: FrameHandler): Promise<void> {
    const splitter = new SseFrameSplitter();
    const decoder = new TextDecoder();
    const reader = this.#reader;
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const at = performance.now();
        for (const frame of splitter.push(decoder.decode(value, { stream: true }))) {
          onFrame(frame, at);
        }
      }
      if (!this.#closing) this.#error = new Error("event stream ended by the server");
    } catch (err) {
      if (!this.#closing) this.#error = err;
    }
  }

  /** The error that ended the stream early (server closed it, reset, bad frame), else null. */
  get error(): unknown {
    return this.#error;
  }

  /**
   * Cancels the body and waits for the reader to finish. Cancelling the reader is what ends a
   * pending read (aborting the fetch signal alone leaves it pending once the body streams).
   */
  async close(): Promise<void> {
    this.#closing = true;
    await this.#reader.cancel().catch(() => {});
    this.#abort.abort();
    await this.#done;
  }
}
