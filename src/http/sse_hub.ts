/**
 * Server-Sent Events for GET /v0/events (docs/http-api.md, "Events (Server-Sent Events)").
 *
 * Each client subscribes to the event bus with a bounded queue of encoded frames. The bus
 * publishes synchronously, so the listener only filters and queues; the response stream pulls
 * from the queue as fast as the socket accepts. A client that does not keep up (more than
 * SSE_QUEUE_SIZE frames or SSE_QUEUE_MAX_BYTES queued) loses its oldest frames (the runtime and
 * other clients never wait for it) and is told so by a comment block `: dropped N events` sent
 * right before the next frame it receives.
 *
 * Resuming (docs/http-api.md, "Resuming a stream"): every frame's id is `<boot>-<n>`, `boot`
 * drawn at random when the hub starts, so an id names one event of one run of the runtime. The
 * hub keeps the recent events in an EventRing; a client that sends the id it saw last
 * (`Last-Event-ID`) first gets every later event the ring still holds, straight from the ring
 * (not through its bounded queue, so nothing is dropped), then the live ones. When the ring no
 * longer reaches back that far, or the id is from another run, it gets one `resync` event.
 */
import {
  type Clock,
  concatBytes,
  invalidArgument,
  type Logger,
  MAX_SSE_CLIENTS,
  quoteProviderTextWithin,
  type TimerId,
  toJsonText,
  unavailable,
} from "../common/mod.ts";
import type { EventBus, PublishedEvent, RuntimeEvent } from "../events/mod.ts";
import { EventRing, type OmittedEvent } from "./event_ring.ts";

/** Frames queued per client before the oldest is dropped (as anolis). */
export const SSE_QUEUE_SIZE = 100;
/**
 * Bytes of frames queued per client before the oldest is dropped (the newest is always kept): a
 * string or bytes value may be as large as an ADPP frame (1 MiB), and 100 of them would pin 100 MiB
 * for one client that stopped reading. 100 ordinary frames take about 30 KiB.
 */
export const SSE_QUEUE_MAX_BYTES = 1024 * 1024;
/**
 * A stream whose client has read nothing for this long while its queue overflowed, while its
 * replay had more to send, or while the stream's last bytes (frames, a keep-alive) waited to be
 * taken, ends, its connection dropped (frees its slot, subscription and connection): a frozen
 * tablet would otherwise hold one of the bounded stream slots for as long as its connection lives.
 * The last case is judged by a timer, not by the next event: a filtered stream may get none for
 * hours. The client, if it wakes, resumes with `Last-Event-ID`.
 */
export const SSE_STALLED_CLIENT_MS = 60_000;
/**
 * A stream ended while its client is there (its token no longer admits it) whose last bytes the
 * client has not taken this long after has its connection dropped: a client that stopped reading
 * would otherwise keep the request in flight, and its connection held, for as long as it lives.
 */
export const SSE_END_FLUSH_MS = 5_000;
/** A `: keepalive` comment is sent after this long without events (as anolis). */
export const SSE_KEEPALIVE_MS = 15_000;
/** A replay is sent in chunks of about this many bytes (the socket takes one at a time). */
export const SSE_REPLAY_CHUNK_BYTES = 64 * 1024;
/** The event a resuming client gets instead of the events it missed, when they are gone. */
export const SSE_RESYNC_EVENT = "resync";
/**
 * The event (no `id:`) that follows the `: dropped N events` comment, for a browser's
 * EventSource, which hands no comment to the page: `count`, `timestamp_ms`.
 */
export const SSE_DROPPED_EVENT = "dropped";

/** The notice of `count` events a stream lost: the comment, then the `dropped` event. */
function dropNotice(count: number, nowMs: number): Uint8Array {
  return encoder.encode(
    `: dropped ${count} events\n\nevent: ${SSE_DROPPED_EVENT}\n` +
      `data: {"count":${count},"timestamp_ms":${nowMs}}\n\n`,
  );
}

/** Why a stream could not be resumed (the `reason` of a `resync` event). */
export type ResyncReason = "too_old" | "restarted" | "unknown";

/** Exact-match filters; "" means no filter (the kinds each applies to: docs/http-api.md). */
export interface SseFilter {
  readonly providerId: string;
  readonly deviceId: string;
  readonly signalId: string;
}

export interface SseHubOptions {
  readonly bus: EventBus;
  readonly log: Logger;
  /** The keep-alive timers, the time of a `resync` event, how long a client has not read. */
  readonly clock: Pick<Clock, "setTimer" | "clearTimer" | "nowMs" | "monoMs">;
  readonly keepAliveMs?: number | undefined;
  readonly maxClients?: number | undefined;
  readonly queueSize?: number | undefined;
  readonly queueMaxBytes?: number | undefined;
  /** Bounds of the resume ring (event_ring.ts defaults). */
  readonly replayMaxEvents?: number | undefined;
  readonly replayMaxBytes?: number | undefined;
  /** This run's id prefix (default: 8 random hex digits); lowercase letters and digits. */
  readonly bootId?: string | undefined;
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
export function eventPasses(e: RuntimeEvent | OmittedEvent, f: SseFilter): boolean {
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
 * One SSE frame: `event:`, `id: <boot>-<n>`, one-line JSON `data:`, blank line. Exact 64-bit
 * integers are written as their decimal digits (toJsonText), as in HTTP bodies.
 */
export function formatSseFrame(published: PublishedEvent, bootId: string): string {
  const { kind, ...data } = published.event;
  return `event: ${kind}\nid: ${bootId}-${published.id}\ndata: ${toJsonText(data)}\n\n`;
}

/** What a `Last-Event-ID` names: nothing, an event of this run, or of another run. */
export type LastEventId =
  | { readonly kind: "none" }
  | { readonly kind: "this_run"; readonly id: number }
  | { readonly kind: "other_run" };

const OUR_ID = /^([0-9a-z]{1,32})-(\d{1,15})$/;
/**
 * Longest part of a client's `Last-Event-ID` quoted back (the refusal's message, the `resync`
 * frame's `last_event_id`): a client's text cannot make an answer or a frame of any length.
 */
const LAST_EVENT_ID_QUOTED_CHARS = 64;
/** Ids as anolis (and this runtime before resuming) write them: a number from 1 per run. */
const PLAIN_ID = /^\d{1,20}$/;
/** Without its anchors: an id's form as part of LAST_EVENT_ID_PATTERN. */
const inner = (r: RegExp) => r.source.slice(1, -1);
/**
 * What `last_event_id` accepts (parseLastEventId after trim), as the OpenAPI pattern of the
 * parameter: blank (none), an id of our form or a plain number, with spaces around it.
 */
export const LAST_EVENT_ID_PATTERN = String.raw`^\s*(?:${inner(OUR_ID)}|${inner(PLAIN_ID)})?\s*$`;

/**
 * Reads a `Last-Event-ID` (header or `last_event_id` query parameter): "" is none, an id this run
 * wrote names its event, any other id of our shape or a plain number is another run's.
 * @throws INVALID_ARGUMENT for text no runtime sends as an event id, naming where it came from.
 */
export function parseLastEventId(text: string, bootId: string, where: string): LastEventId {
  if (text === "") return { kind: "none" };
  const m = OUR_ID.exec(text);
  if (m) return m[1] === bootId ? { kind: "this_run", id: Number(m[2]) } : { kind: "other_run" };
  if (PLAIN_ID.test(text)) return { kind: "other_run" };
  throw invalidArgument(
    `${where}: not an event id this runtime sends (<boot>-<number>, e.g. "3f9a0c12-57"): ` +
      quoteProviderTextWithin(text, LAST_EVENT_ID_QUOTED_CHARS),
  );
}

function randomBootId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(4));
  return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Who opened a stream, to be asked again when the API tokens change (SseHub.recheck). */
export interface StreamHolder {
  /** The principal's name (a token's name, `local`, `anonymous`): for the log, never a token. */
  readonly principal: string;
  /** Whether the request's credentials admit it to the stream under the tokens in force now. */
  readonly admitted: () => Promise<boolean>;
  /**
   * False when the tokens changed after the request was admitted: a stream opened after a
   * recheck had walked the open ones is asked on its own.
   */
  readonly current: () => boolean;
}

/** Owns every open event stream; bounded in clients and per-client queue. */
export class SseHub {
  readonly #bus: EventBus;
  readonly #log: Logger;
  readonly #clock: Pick<Clock, "setTimer" | "clearTimer" | "nowMs" | "monoMs">;
  readonly #ring: EventRing;
  readonly #unsubscribeRing: () => void;
  /** This run's prefix of every event id. */
  readonly bootId: string;
  readonly #keepAliveMs: number;
  #maxClients: number;
  /** What set a bound lower than MAX_SSE_CLIENTS (for the 503), "" otherwise. */
  #maxClientsWhy = "";
  readonly #queueSize: number;
  readonly #queueMaxBytes: number;
  readonly #clients = new Set<SseClient>();
  /** Streams ended by recheck whose connection is dropped if its client does not take the end. */
  readonly #flushing = new Set<SseClient>();
  /**
   * Streams recheck ended whose answer is not written yet (their client has not taken the end):
   * each still holds its connection, so it counts against the bound on streams until its answer
   * is written, its connection is gone, or its drop is asked for (SSE_END_FLUSH_MS).
   */
  readonly #ending = new Set<SseClient>();
  #closed = false;
  /**
   * Frames dropped from any client's full queue since start, and those still queued when a
   * stalled stream was ended (SSE_STALLED_CLIENT_MS).
   */
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
    this.#queueMaxBytes = options.queueMaxBytes ?? SSE_QUEUE_MAX_BYTES;
    this.bootId = options.bootId ?? randomBootId();
    if (!/^[0-9a-z]{1,32}$/.test(this.bootId)) {
      throw new Error(`SseHub bootId: 1-32 lowercase letters or digits, got "${this.bootId}"`);
    }
    this.#ring = new EventRing({
      maxEvents: options.replayMaxEvents,
      maxBytes: options.replayMaxBytes,
    });
    this.#ring.startAfter(this.#bus.publishedCount);
    const ring = this.#ring;
    this.#unsubscribeRing = this.#bus.subscribe((p) => ring.push(p));
  }

  /** Events kept for resuming streams now, and their estimated bytes. */
  get replayEvents(): number {
    return this.#ring.count;
  }

  get replayBytes(): number {
    return this.#ring.bytes;
  }

  /** Events too large for the resume ring (kept as their place only) since start. */
  get replayOmittedTotal(): number {
    return this.#ring.omittedTotal;
  }

  /**
   * Lowers the bound on open streams to `max` (never raises it), `why` naming the setting that
   * decides it (in the 503). Streams open beyond it stay open; new ones wait for room.
   */
  limitClients(max: number, why: string): void {
    if (max >= this.#maxClients) return;
    this.#maxClients = Math.max(1, max);
    this.#maxClientsWhy = why;
  }

  get clientCount(): number {
    return this.#clients.size;
  }

  /**
   * Frames dropped from full client queues since start, and those left queued when a stalled
   * stream was ended (every client, closed ones included).
   */
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
   * Opens a stream; with `lastEventId` (its text, and where it came from for an error) the
   * stream resumes after that event, or starts with a `resync` event when it cannot. Throws
   * UNAVAILABLE when the client bound is reached or the hub is closed, INVALID_ARGUMENT for an id
   * no runtime sends. The stream ends and frees its subscription when the client goes (the server
   * cancels the body) or on closeAll(). `dropConnection` closes the stream's connection: a stream
   * ended because its client reads nothing (SSE_STALLED_CLIENT_MS) drops it too. `answered`
   * settles once the stream's answer is written or its connection has ended.
   */
  open(
    filter: SseFilter,
    lastEventId?: { text: string; where: string },
    holder?: StreamHolder,
    dropConnection?: () => void,
    answered?: Promise<void>,
  ): Response {
    const last = lastEventId
      ? parseLastEventId(lastEventId.text, this.bootId, lastEventId.where)
      : { kind: "none" as const };
    if (this.#closed) throw unavailable("Event stream unavailable: server is shutting down");
    if (this.#clients.size + this.#ending.size >= this.#maxClients) {
      throw unavailable(
        `Too many event streams: at most ${this.#maxClients} may be open` +
          (this.#maxClientsWhy === "" ? "" : ` (${this.#maxClientsWhy})`) +
          (this.#ending.size === 0
            ? ""
            : `, ${this.#ending.size} of them ended and still closing their connections`),
      );
    }
    let start: ClientStart = { kind: "live" };
    if (last.kind === "other_run") {
      start = { kind: "gap", frame: this.#resyncFrame("restarted", lastEventId!.text) };
    } else if (last.kind === "this_run") {
      const at = this.#ring.resumeFrom(last.id);
      start = at.ok
        ? { kind: "replay", from: last.id + 1 }
        : { kind: "gap", frame: this.#resyncFrame(at.reason, lastEventId!.text) };
    }
    const client = new SseClient({
      filter,
      queueSize: this.#queueSize,
      queueMaxBytes: this.#queueMaxBytes,
      keepAliveMs: this.#keepAliveMs,
      clock: this.#clock,
      start,
      ring: this.#ring,
      resync: (reason, lastId) => this.#resyncFrame(reason, `${this.bootId}-${lastId}`),
      encode: (p) => this.#encode(p),
      holder: holder ?? null,
      dropConnection: dropConnection ?? null,
      answered: answered ?? null,
      onDrop: () => this.#droppedTotal++,
      onStalled: (c, forMs, why) => {
        // Its queued frames are never sent: dropped as an overflow's are (a resume may still
        // get them from the ring, as it may those an overflow dropped before).
        const lost = c.queued;
        this.#droppedTotal += lost;
        c.abort();
        this.#log.info(
          `event stream ended: its client read nothing for ${forMs} ms while ${why}` +
            (lost === 0 ? "" : `, ${lost} queued events dropped`) +
            (c.holder === null ? "" : ` ('${c.holder.principal}')`),
        );
      },
      onClose: (c) => {
        this.#clients.delete(c);
        this.#log.debug(`event stream closed (${this.#clients.size} open)`);
      },
    });
    this.#clients.add(client);
    client.attach(this.#bus);
    this.#log.debug(`event stream opened (${this.#clients.size} open)`);
    // Admitted under tokens a reload has replaced since: asked again now, not at the next reload.
    if (holder && !holder.current()) void this.#recheckOne(client, holder);
    return new Response(client.stream, { status: 200, headers: SSE_HEADERS });
  }

  /**
   * Asks every open stream's holder whether its credentials still admit it (after the API tokens
   * changed: a reload) and ends the streams of those refused now; resolves with how many it
   * ended. The client sees its stream end; reconnecting with the removed token gets a 401.
   */
  async recheck(): Promise<number> {
    let ended = 0;
    for (const client of [...this.#clients]) {
      const holder = client.holder;
      if (holder && await this.#recheckOne(client, holder)) ended++;
    }
    return ended;
  }

  /** Ends `client`'s stream when its holder is refused now; true when it ended it. */
  async #recheckOne(client: SseClient, holder: StreamHolder): Promise<boolean> {
    if (await holder.admitted()) return false;
    if (client.closed) return false; // went meanwhile
    this.#flushing.add(client);
    this.#ending.add(client);
    const answered = client.answered;
    // Counted until its drop is asked for, too: over HTTP/1.1 its connection closes then, and
    // over HTTP/2 the connection carries other requests (another tab's stream may never end), is
    // dropped only once they are answered, and is no more this stream's than theirs.
    client.closeThenDrop(SSE_END_FLUSH_MS, () => {
      this.#flushing.delete(client);
      this.#ending.delete(client);
    });
    // Its client took the end (or the connection is gone): nothing left to drop or to count.
    const gone = () => {
      this.#ending.delete(client);
      client.cancelDrop();
    };
    answered?.then(gone, gone);
    this.#log.info(
      `event stream of '${holder.principal}' ended: its token no longer admits it (API tokens changed)`,
    );
    return true;
  }

  /** Ends every stream and refuses new ones (server shutdown). */
  closeAll(): void {
    this.#closed = true;
    this.#unsubscribeRing();
    for (const c of [...this.#clients]) c.close();
    // The server's shutdown bounds what is left to write (HTTP_SHUTDOWN_DRAIN_MS).
    for (const c of this.#flushing) c.cancelDrop();
    this.#flushing.clear();
    this.#ending.clear();
  }

  #encode(p: PublishedEvent): Uint8Array {
    if (this.#lastEncoded?.id !== p.id) {
      this.#lastEncoded = { id: p.id, bytes: encoder.encode(formatSseFrame(p, this.bootId)) };
    }
    return this.#lastEncoded.bytes;
  }

  /**
   * The `resync` frame: its id is the newest event's, so that a client resuming from it later
   * gets exactly what followed.
   */
  #resyncFrame(reason: ResyncReason, lastEventIdText: string): Uint8Array {
    const data = {
      reason,
      // Cut without a mark: a client compares it with the id it sent.
      last_event_id: lastEventIdText.slice(0, LAST_EVENT_ID_QUOTED_CHARS),
      timestamp_ms: this.#clock.nowMs(),
    };
    return encoder.encode(
      `event: ${SSE_RESYNC_EVENT}\nid: ${this.bootId}-${this.#ring.lastId}\n` +
        `data: ${JSON.stringify(data)}\n\n`,
    );
  }
}

/** How a stream starts: live, after a `resync` frame, or replaying from an id. */
type ClientStart =
  | { readonly kind: "live" }
  | { readonly kind: "gap"; readonly frame: Uint8Array }
  | { readonly kind: "replay"; readonly from: number };

interface SseClientOptions {
  readonly filter: SseFilter;
  readonly queueSize: number;
  readonly queueMaxBytes: number;
  readonly keepAliveMs: number;
  readonly clock: Pick<Clock, "setTimer" | "clearTimer" | "nowMs" | "monoMs">;
  readonly start: ClientStart;
  readonly ring: EventRing;
  /** The `resync` frame for a replay the ring outran (`lastId`: the last event sent). */
  readonly resync: (reason: ResyncReason, lastId: number) => Uint8Array;
  readonly encode: (p: PublishedEvent) => Uint8Array;
  /** Who opened the stream (asked again when the API tokens change); null when none said. */
  readonly holder: StreamHolder | null;
  /** Closes the stream's connection at once while its answer is unwritten; null: no server. */
  readonly dropConnection: (() => void) | null;
  /** Settles once the stream's answer is written or its connection has ended; null: no server. */
  readonly answered: Promise<void> | null;
  readonly onDrop: () => void;
  /**
   * The client has read nothing for SSE_STALLED_CLIENT_MS (`forMs`) while frames were dropped,
   * while its replay had more to send, or while the bytes last handed to the server waited.
   */
  readonly onStalled: (c: SseClient, forMs: number, why: string) => void;
  readonly onClose: (c: SseClient) => void;
}

class SseClient {
  readonly stream: ReadableStream<Uint8Array>;
  readonly #opts: SseClientOptions;
  readonly #queue: Uint8Array[] = [];
  /** Bytes of the frames in #queue. */
  #queuedBytes = 0;
  #dropped = 0;
  #closed = false;
  #controller: ReadableStreamDefaultController<Uint8Array> | null = null;
  #unsubscribe: (() => void) | null = null;
  /** Resolves the pull that waits for a frame, the keep-alive timer or close. */
  #wake: (() => void) | null = null;
  /** The next id to send from the ring while replaying; null once live. */
  #cursor: number | null = null;
  /** A `resync` frame to send before anything queued (never dropped with the queue's oldest). */
  #first: Uint8Array | null = null;
  /** When the stream last asked for data (monotonic ms): the client was reading then. */
  #lastReadMs: number;
  /**
   * Armed once bytes are handed to the server and no read waits (SSE_STALLED_CLIENT_MS): the
   * stall check of a stream no event reaches. At most one per stream; null while unarmed.
   */
  #stallTimer: TimerId | null = null;
  /** The drop closeThenDrop planned, until it fires or is cancelled. */
  #dropTimer: { readonly id: TimerId; readonly settled: () => void } | null = null;

  constructor(opts: SseClientOptions) {
    this.#opts = opts;
    this.#lastReadMs = opts.clock.monoMs();
    if (opts.start.kind === "gap") this.#first = opts.start.frame;
    else if (opts.start.kind === "replay") this.#cursor = opts.start.from;
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

  get holder(): StreamHolder | null {
    return this.#opts.holder;
  }

  get answered(): Promise<void> | null {
    return this.#opts.answered;
  }

  get closed(): boolean {
    return this.#closed;
  }

  attach(bus: EventBus): void {
    this.#unsubscribe = bus.subscribe((p) => this.#push(p));
  }

  /** Ends the stream: its client gets the end once it has read what was sent before. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#unsubscribe?.();
    this.#unsubscribe = null;
    this.#queue.length = 0;
    this.#queuedBytes = 0;
    if (this.#stallTimer !== null) {
      this.#opts.clock.clearTimer(this.#stallTimer);
      this.#stallTimer = null;
    }
    try {
      this.#controller?.close();
    } catch {
      // already cancelled by the client
    }
    this.#wake?.();
    this.#opts.onClose(this);
  }

  /**
   * Ends the stream and drops its connection: for a client that reads nothing, which would never
   * take the stream's last bytes (erroring the stream is not enough: the server is stuck writing
   * the bytes before), so a graceful end would keep its request in flight, and its connection (one
   * of http.max_connections) held, for as long as the client lives.
   */
  abort(): void {
    if (this.#closed) return;
    this.close();
    this.#opts.dropConnection?.();
  }

  /**
   * Ends the stream, and drops its connection `ms` later unless the client has taken the end by
   * then (the server ignores the drop once the answer is written); `settled` when the timer is
   * done with.
   */
  closeThenDrop(ms: number, settled: () => void): void {
    if (this.#closed) return;
    this.close();
    const drop = this.#opts.dropConnection;
    if (drop === null) return settled();
    this.#dropTimer = {
      id: this.#opts.clock.setTimer(() => {
        this.#dropTimer = null;
        settled();
        drop();
      }, ms),
      settled,
    };
  }

  /** Forgets a drop closeThenDrop planned. */
  cancelDrop(): void {
    if (this.#dropTimer === null) return;
    this.#opts.clock.clearTimer(this.#dropTimer.id);
    this.#dropTimer.settled();
    this.#dropTimer = null;
  }

  #push(p: PublishedEvent): void {
    if (this.#closed) return;
    if (this.#cursor !== null) {
      // While replaying, the ring holds this event: the replay reaches it. A client that has not
      // asked for the replay's next chunk for SSE_STALLED_CLIENT_MS is as stalled as a live one
      // whose queue overflowed (its replay would otherwise hold the stream for ever).
      const unread = this.#opts.clock.monoMs() - this.#lastReadMs;
      if (unread >= SSE_STALLED_CLIENT_MS) {
        this.#opts.onStalled(this, unread, "its replay had more to send");
      }
      return;
    }
    if (!eventPasses(p.event, this.#opts.filter)) return;
    const frame = this.#opts.encode(p);
    this.#queue.push(frame);
    this.#queuedBytes += frame.byteLength;
    while (
      this.#queue.length > this.#opts.queueSize ||
      (this.#queuedBytes > this.#opts.queueMaxBytes && this.#queue.length > 1)
    ) {
      this.#queuedBytes -= this.#queue.shift()!.byteLength;
      this.#dropped++;
      this.#opts.onDrop();
    }
    // Dropped since the client last read, and no read waiting for data (that one is reading).
    const unread = this.#dropped > 0 && this.#wake === null
      ? this.#opts.clock.monoMs() - this.#lastReadMs
      : 0;
    if (unread >= SSE_STALLED_CLIENT_MS) {
      this.#opts.onStalled(this, unread, "its queue overflowed");
      return;
    }
    this.#wake?.();
  }

  async #pull(controller: ReadableStreamDefaultController<Uint8Array>): Promise<void> {
    this.#lastReadMs = this.#opts.clock.monoMs();
    while (!this.#closed) {
      if (this.#cursor !== null) {
        const chunk = this.#replayChunk();
        if (chunk !== null) {
          controller.enqueue(chunk);
          return this.#handed();
        }
        continue; // caught up: live from here (#cursor is null now)
      }
      if (this.#queue.length > 0 || this.#first !== null) {
        controller.enqueue(this.#drain());
        return this.#handed();
      }
      const keepAlive = await this.#waitForWork();
      if (this.#closed) return;
      if (keepAlive && this.#queue.length === 0) {
        controller.enqueue(KEEPALIVE);
        return this.#handed();
      }
    }
  }

  /**
   * Bytes were handed to the server, which asks for more once it has written them: until it
   * does, the stall timer runs (armed unless it already is).
   */
  #handed(): void {
    if (this.#stallTimer === null) this.#armStall(SSE_STALLED_CLIENT_MS);
  }

  #armStall(ms: number): void {
    this.#stallTimer = this.#opts.clock.setTimer(() => {
      this.#stallTimer = null;
      this.#checkStalled();
    }, ms);
  }

  /**
   * Ends the stream when the server has not asked for data for SSE_STALLED_CLIENT_MS: its last
   * bytes could not be written (the client's socket is full). A read waiting for data is a client
   * that reads: the next bytes handed arm the timer again.
   */
  #checkStalled(): void {
    if (this.#closed || this.#wake !== null) return;
    const unread = this.#opts.clock.monoMs() - this.#lastReadMs;
    if (unread >= SSE_STALLED_CLIENT_MS) {
      this.#opts.onStalled(this, unread, "its last frames waited to be sent");
    } else {
      this.#armStall(SSE_STALLED_CLIENT_MS - unread);
    }
  }

  /**
   * The next frames of a replay (about SSE_REPLAY_CHUNK_BYTES), or null once the replay has
   * caught up with the newest event: the stream is live from then on (the bus is synchronous,
   * so no event falls between the last one replayed and the first one queued). When the ring
   * dropped events before they were sent (a very slow reader), a `resync` frame and live.
   */
  #replayChunk(): Uint8Array | null {
    const ring = this.#opts.ring;
    const parts: Uint8Array[] = [];
    let bytes = 0;
    let id = this.#cursor!;
    if (id < ring.firstId) {
      this.#cursor = null;
      return this.#opts.resync("too_old", id - 1);
    }
    // Events too large for the ring since the last frame: said as a live stream says dropped
    // events, one notice for a run of them (at most the ring's count) before the next frame.
    let omitted = 0;
    const sayOmitted = () => {
      if (omitted === 0) return;
      const notice = dropNotice(omitted, this.#opts.clock.nowMs());
      parts.push(notice);
      bytes += notice.byteLength;
      omitted = 0;
    };
    for (; id <= ring.lastId && bytes < SSE_REPLAY_CHUNK_BYTES; id++) {
      const p = ring.get(id);
      if (p === undefined) {
        const left = ring.omitted(id);
        if (left !== undefined && eventPasses(left, this.#opts.filter)) omitted++;
        continue;
      }
      if (!eventPasses(p.event, this.#opts.filter)) continue;
      sayOmitted();
      const frame = this.#opts.encode(p);
      parts.push(frame);
      bytes += frame.byteLength;
    }
    sayOmitted();
    // Nothing more to replay: live (the loop stops early only once it has frames).
    this.#cursor = id > ring.lastId ? null : id;
    return parts.length === 0 ? null : concatBytes(parts);
  }

  /** Everything queued as one chunk, preceded by the drop notice when frames were lost. */
  #drain(): Uint8Array {
    const parts = this.#queue.splice(0);
    this.#queuedBytes = 0;
    if (this.#dropped > 0) {
      parts.unshift(dropNotice(this.#dropped, this.#opts.clock.nowMs()));
      this.#dropped = 0;
    }
    if (this.#first !== null) {
      parts.unshift(this.#first);
      this.#first = null;
    }
    return concatBytes(parts);
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
