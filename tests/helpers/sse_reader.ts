/**
 * A minimal Server-Sent Events reader over a fetch body for the event-stream tests: one block per
 * blank-line-terminated frame, ids read as `<boot>-<n>` (docs/http-api.md, "Resuming a stream").
 */
export interface SseBlock {
  comments: string[];
  event?: string;
  /** The event's number: `n` of the id `<boot>-<n>`. */
  id?: number;
  /** The run's prefix: `boot` of the id. */
  boot?: string;
  /** The id as sent. */
  rawId?: string;
  // deno-lint-ignore no-explicit-any
  data?: any;
}

/** One block per blank-line-terminated frame. */
export class SseReader {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new TextDecoder();
  #buf = "";

  constructor(body: ReadableStream<Uint8Array>) {
    this.#reader = body.getReader();
  }

  /** The next block, or null when the stream ended. */
  async next(): Promise<SseBlock | null> {
    for (;;) {
      const end = this.#buf.indexOf("\n\n");
      if (end >= 0) {
        const raw = this.#buf.slice(0, end);
        this.#buf = this.#buf.slice(end + 2);
        return parseBlock(raw);
      }
      const { done, value } = await this.#reader.read();
      if (done) return null;
      this.#buf += this.#decoder.decode(value, { stream: true });
    }
  }

  /** The next block that carries an event (skips comments). */
  async nextEvent(): Promise<SseBlock> {
    for (;;) {
      const b = await this.next();
      if (b === null) throw new Error("stream ended");
      if (b.event !== undefined) return b;
    }
  }

  async cancel(): Promise<void> {
    await this.#reader.cancel().catch(() => {});
  }
}

export function parseBlock(raw: string): SseBlock {
  const block: SseBlock = { comments: [] };
  for (const line of raw.split("\n")) {
    if (line.startsWith(":")) block.comments.push(line.slice(1).trim());
    else if (line.startsWith("event: ")) block.event = line.slice(7);
    else if (line.startsWith("id: ")) {
      const m = /^([0-9a-z]+)-(\d+)$/.exec(line.slice(4));
      if (m === null) throw new Error(`unexpected SSE id: ${line}`);
      block.rawId = line.slice(4);
      block.boot = m[1]!;
      block.id = Number(m[2]);
    } else if (line.startsWith("data: ")) block.data = JSON.parse(line.slice(6));
    else throw new Error(`unexpected SSE line: ${line}`);
  }
  return block;
}
