/**
 * Server-Sent Events for GET /v0/events (docs/http-api.md, "Events (Server-Sent Events)").
 *
 * Each client subscribes to the event bus with a bounded queue of encoded frames. The bus
 * publishes synchronously, so the listener only filters and queues; the response stream pulls
 * from the queue as fast as the socket accepts. A client that does not keep up loses its oldest
 * frames (the runtime and other clients never wait for it) and is told so by a comment block
 * `: dropped N events` sent right before the next frame it receives.
 */
import { type Clock, type Logger, toJsonText, unavailable } from "../common/mod.ts";
import type { EventBus, PublishedEvent, RuntimeEvent } from "../events/mod.ts";

/** Concurrent event streams allowed (as anolis: the 33rd gets 503). */
export const MAX_SSE_CLIENTS = 32;
/** Frames queued per client before the oldest is dropped (as anolis). */
export const SSE_QUEUE_SIZE = 100;
/** A `: keepalive` comment is sent after this long without events (as anolis). */
export const SSE_KEEPALIVE_MS = 15_000;

/** Exact-match filters; "" means no filter (the kinds each applies to: docs/http-api.md). */
export interface SseFilter {
  readonly providerId: string;
  readonly deviceId: string;
  readonly signalId: string;
}

export interface SseHubOptions {
  readonly bus: EventBus;
  readonly log: Logger;
  /** The keep-alive timers. */
  readonly clock: Pick<Clock, "setTimer" | "clearTimer">;
  readonly keepAliveMs?: number | undefined;
  readonly maxClients?: number | undefined;
  readonly queueSize?: number | undefined;
}

const SSE_HEADERS: Record<string, string> = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "connection": "keep-alive",
  "x-accel-buffering": "no",
};

const encoder = new TextEncoder();
const KEEPALIVE = encoder.encode(": keepalive\n\n");

/** Whether an event passes a client's filters. */
export function eventPasses(e: RuntimeEvent, f: SseFilter): boolean {
  if (e.kind === "state_update" || e.kind === "quality_change") {
    if (f.signalId !== "" && e.signal_id !== f.signalId) return false;
  } else if (e.kind !== "device_availability") {
    return true; // every other kind is always delivered
  }
  if (f.providerId !== "" && e.provider_id !== f.providerId) return false;
  if (f.deviceId !== "" && e.device_id !== f.deviceId) return false;
  return true;
}

/**
 * One SSE frame: `event:`, `id:`, one-line JSON `data:`, blank line. Exact 64-bit integers are
 * written as their decimal digits (toJsonText), as in HTTP bodies.
 */
export function formatSseFrame(published: PublishedEvent): string {
  const { kind, ...data } = published.event;
  return `event: ${kind}\nid: ${published.id}\ndata: ${toJsonText(data)}\n\n`;
}

/** Owns every open event stream; bounded in clients and per-client queue. */
export class SseHub {
  readonly #bus: EventBus;
  readonly #log: Logger;
  readonly #clock: Pick<Clock, "setTimer" | "clearTimer">;
  readonly #keepAliveMs: number;
  readonly #maxClients: number;
  readonly #queueSize: number;
  readonly #clients = new Set<SseClient>();
  #closed = false;
  /** Frames dropped from any client's full queue since start. */
  #droppedTotal = 0;
  /** The bus fans out synchronously, so consecutive clients reuse the last encoding. */
  #lastEncoded: { id: number; bytes: Uint8Array } | null = null;

  constructor(options: SseHubOptions) {
    this.#bus = options.bus;
    this.#log = options.log;
    this.#clock = options.clock;
    this.#keepAliveMs = options.keepAliveMs ?? SSE_KEEPALIVE_MS;
    this.#maxClients = options.maxClients ?? MAX_SSE_CLIENTS;
    this.#queueSize = options.queueSize ?? SSE_QUEUE_SIZE;
  }

  get clientCount(): number {
    return this.#clients.size;
  }

  /** Frames dropped from full client queues since start (every client, closed ones included). */
  get droppedTotal(): number {
    return this.#droppedTotal;
  }

  /** Frames waiting in client queues now. */
  get queuedFrames(): number {
    let n = 0;
    for (const c of this.#clients) n += c.queued;
    return n;
  }

  /**
   * Opens a stream. Throws UNAVAILABLE when the client bound is reached or the hub is closed.
   * The stream ends and frees its subscription when the client goes (the server cancels the
   * body) or on closeAll().
   */
  open(filter: SseFilter): Response {
    if (this.#closed) throw unavailable("Event stream unavailable: server is shutting down");
    if (this.#clients.size >= this.#maxClients) {
      throw unavailable(`Too many event streams: at most ${this.#maxClients} may be open`);
    }
    const client = new SseClient({
      filter,
      queueSize: this.#queueSize,
      keepAliveMs: this.#keepAliveMs,
      clock: this.#clock,
      encode: (p) => this.#encode(p),
      onDrop: () => this.#droppedTotal++,
      onClose: (c) => {
        this.#clients.delete(c);
        this.#log.debug(`event stream closed (${this.#clients.size} open)`);
      },
    });
    this.#clients.add(client);
    client.attach(this.#bus);
    this.#log.debug(`event stream opened (${this.#clients.size} open)`);
    return new Response(client.stream, { status: 200, headers: SSE_HEADERS });
  }

  /** Ends every stream and refuses new ones (server shutdown). */
  closeAll(): void {
    this.#closed = true;
    for (const c of [...this.#clients]) c.close();
  }

  #encode(p: PublishedEvent): Uint8Array {
    if (this.#lastEncoded?.id !== p.id) {
      this.#lastEncoded = { id: p.id, bytes: encoder.encode(formatSseFrame(p)) };
    }
    return this.#lastEncoded.bytes;
  }
}

interface SseClientOptions {
  readonly filter: SseFilter;
  readonly queueSize: number;
  readonly keepAliveMs: number;
  readonly clock: Pick<Clock, "setTimer" | "clearTimer">;
  readonly encode: (p: PublishedEvent) => Uint8Array;
  readonly onDrop: () => void;
  readonly onClose: (c: SseClient) => void;
}

class SseClient {
  readonly stream: ReadableStream<Uint8Array>;
  readonly #opts: SseClientOptions;
  readonly #queue: Uint8Array[] = [];
  #dropped = 0;
  #closed = false;
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  #unsubscribe: (() => void) | null = null;
  /** Resolves the pull that waits for a frame, the keep-alive timer or close. */
  #wake: (() => void) | null = null;

  constructor(opts: SseClientOptions) {
    this.#opts = opts;
    // highWaterMark 0: frames wait in #queue (bounded, drop-oldest), never in the stream.
    this.stream = new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
      },
      pull: (controller) => this.#pull(controller),
      cancel: () => this.close(),
    }, { highWaterMark: 0 });
  }

  get queued(): number {
    return this.#queue.length;
  }

  attach(bus: EventBus): void {
    this.#unsubscribe = bus.subscribe((p) => this.#push(p));
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#queue.length = 0;
    try {
      this.#controller?.close();
    } catch {
      // already cancelled by the client
    }
    this.#wake?.();
    this.#opts.onClose(this);
  }

  #push(p: PublishedEvent): void {
    if (this.#closed || !eventPasses(p.event, this.#opts.filter)) return;
    this.#queue.push(this.#opts.encode(p));
    if (this.#queue.length > this.#opts.queueSize) {
      this.#queue.shift();
      this.#dropped++;
      this.#opts.onDrop();
    }
    this.#wake?.();
  }

  async #pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    while (!this.#closed) {
      if (this.#queue.length > 0) {
        controller.enqueue(this.#drain());
        return;
      }
      const keepAlive = await this.#waitForWork();
      if (this.#closed) return;
      if (keepAlive && this.#queue.length === 0) {
        controller.enqueue(KEEPALIVE);
        return;
      }
    }
  }

  /** Everything queued as one chunk, preceded by the drop notice when frames were lost. */
  #drain(): Uint8Array {
    const parts = this.#queue.splice(0);
    if (this.#dropped > 0) {
      parts.unshift(encoder.encode(`: dropped ${this.#dropped} events\n\n`));
      this.#dropped = 0;
    }
    if (parts.length === 1) return parts[0]!;
    const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
    let at = 0;
    for (const p of parts) {
      out.set(p, at);
      at += p.byteLength;
    }
    return out;
  }

  /** Resolves true when the keep-alive interval passed without anything to send. */
  #waitForWork(): Promise<boolean> {
    return new Promise((resolve) => {
      const clock = this.#opts.clock;
      const timer = clock.setTimer(() => {
        this.#wake = null;
        resolve(true);
      }, this.#opts.keepAliveMs);
      this.#wake = () => {
        clock.clearTimer(timer);
        this.#wake = null;
        resolve(false);
      };
    });
  }
}
