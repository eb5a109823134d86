/**
 * The recent events an event stream can resume from (GET /v0/events with `Last-Event-ID`,
 * docs/http-api.md "Resuming a stream"). Bounded in count (SSE_REPLAY_MAX_EVENTS) and in bytes
 * (SSE_REPLAY_MAX_BYTES, an upper estimate of each event's frame); the oldest go first. An event
 * larger than the byte bound is kept as its place only (its kind and ids, counted in
 * omittedTotal): a replay says it was dropped, and the events around it stay resumable.
 *
 * What it costs the poll path, which publishes every changed sample: no frame is written (that
 * is 1-5 us an event, hundreds a second at 10 providers, whether or not anyone ever resumes; a
 * replay serialises what it sends), and no object is kept. A `state_update` with a number or bool
 * value (nearly all of them) goes into typed columns: its ids are the long-lived strings the cache
 * and the decoder already hold, its value, quality and time numbers. Keeping the event objects
 * instead made each survive into V8's old space: the 100-signal poll's p99 went from ~130 to ~400
 * us in bench/poll_path.bench.ts, and the idle runtime at 10 providers took ~0.4 % of a core more.
 * Other kinds (rare) keep their object; so does a value that is a string, bytes, an exact integer
 * beyond 2^53 or a non-finite double.
 */
import type { PublishedEvent, RuntimeEvent } from "../events/mod.ts";
import type { Quality, TypedValue } from "../common/mod.ts";

/** Events kept for resuming streams (a few seconds of a busy machine, minutes of a quiet one). */
export const SSE_REPLAY_MAX_EVENTS = 8192;
/** Bytes kept for resuming streams (the sum of each event's estimated frame size). */
export const SSE_REPLAY_MAX_BYTES = 2 * 1024 * 1024;

/**
 * What an event too large for the ring is kept as (its kind and ids, not its content): the place
 * it holds in the sequence, so the events around it stay resumable.
 */
export interface OmittedEvent {
  readonly kind: RuntimeEvent["kind"];
  readonly provider_id?: string;
  readonly device_id?: string;
  readonly signal_id?: string;
}

/** A frame's `event:`, `id:`, `data:` lines and the JSON members common to the kinds. */
const FRAME_OVERHEAD = 200;

/**
 * An upper estimate of an event's frame in bytes, cheap for the kinds the poll path publishes
 * (state_update, quality_change: a few length reads) and exact enough for the others (their
 * strings summed; JSON escaping and UTF-8 may take more for unusual text, which only makes the
 * ring hold fewer events than its count bound).
 */
export function estimateFrameBytes(e: RuntimeEvent): number {
  switch (e.kind) {
    case "state_update":
      return FRAME_OVERHEAD + 3 * (e.provider_id.length + e.device_id.length + e.signal_id.length) +
        valueBytes(e.value);
    case "quality_change":
    case "device_availability":
      return FRAME_OVERHEAD + 64 + 3 * (e.provider_id.length + e.device_id.length) +
        (e.kind === "quality_change" ? 3 * e.signal_id.length : 0);
    case "provider_health_change":
      return FRAME_OVERHEAD + 64 + 3 * e.provider_id.length;
    case "mode_change":
      return FRAME_OVERHEAD + 64;
    default:
      return FRAME_OVERHEAD + stringBytes(e);
  }
}

function valueBytes(v: TypedValue): number {
  if (v.type === "string") return 6 * v.string.length; // a control character escapes to 6
  if (v.type === "bytes") return v.base64.length;
  return 32;
}

/** 3 bytes per UTF-16 unit of every string inside (UTF-8 worst case), 24 per other leaf. */
function stringBytes(x: unknown): number {
  if (typeof x === "string") return 3 * x.length + 2;
  if (Array.isArray(x)) {
    let n = 2;
    for (const y of x) n += stringBytes(y) + 1;
    return n;
  }
  if (x !== null && typeof x === "object") {
    let n = 2;
    for (const [k, y] of Object.entries(x)) n += k.length + 4 + stringBytes(y);
    return n;
  }
  return 24;
}

function omittedOf(e: RuntimeEvent): OmittedEvent {
  const ids = e as { provider_id?: unknown; device_id?: unknown; signal_id?: unknown };
  return {
    kind: e.kind,
    ...(typeof ids.provider_id === "string" ? { provider_id: ids.provider_id } : {}),
    ...(typeof ids.device_id === "string" ? { device_id: ids.device_id } : {}),
    ...(typeof ids.signal_id === "string" ? { signal_id: ids.signal_id } : {}),
  };
}

export interface EventRingOptions {
  readonly maxEvents?: number | undefined;
  readonly maxBytes?: number | undefined;
}

/** What a stream resuming after `lastId` gets. */
export type ResumePoint =
  /** Every event after lastId is kept: replay from the event after it. */
  | { readonly ok: true }
  /** Some are gone (too old), or the id was never published here (ahead of the newest). */
  | { readonly ok: false; readonly reason: "too_old" | "unknown" };

const QUALITIES: readonly Quality[] = ["OK", "STALE", "UNAVAILABLE", "FAULT"];

/** How a slot holds its event. */
const OBJECT = 0; // #objects[slot] is the event
const DOUBLE = 1; // a state_update in the columns, value in #numbers
const BOOL = 2;
const INT64 = 3;
const UINT64 = 4;
const VALUE_OBJECT = 5; // a state_update in the columns, value object in #objects
const OMITTED = 6; // too large to keep: #objects[slot] is its OmittedEvent

/**
 * A circular buffer of the bus's events, contiguous in id (the bus numbers them 1, 2, 3, ...).
 * `push` must see every published event, in order.
 */
export class EventRing {
  readonly #maxEvents: number;
  readonly #maxBytes: number;
  readonly #sizes: Uint32Array;
  /** Per slot: OBJECT, or how a state_update's value is held. */
  readonly #form: Uint8Array;
  /** The event (OBJECT) or the state_update's value (VALUE_OBJECT). */
  readonly #objects: unknown[];
  readonly #providers: string[];
  readonly #devices: string[];
  readonly #signals: string[];
  readonly #numbers: Float64Array;
  readonly #qualities: Uint8Array;
  readonly #times: Float64Array;
  /** Slot of the oldest event kept. */
  #start = 0;
  #count = 0;
  #bytes = 0;
  /** Id of the newest event seen (0: none). */
  #lastId = 0;
  /** Id of the oldest event that can still be replayed (lastId + 1 when none is kept). */
  #firstId = 1;
  /** Events left out for their size since start. */
  #omittedTotal = 0;

  constructor(options: EventRingOptions = {}) {
    this.#maxEvents = Math.max(1, options.maxEvents ?? SSE_REPLAY_MAX_EVENTS);
    this.#maxBytes = Math.max(1, options.maxBytes ?? SSE_REPLAY_MAX_BYTES);
    const n = this.#maxEvents;
    this.#sizes = new Uint32Array(n);
    this.#form = new Uint8Array(n);
    this.#objects = new Array(n).fill(undefined);
    this.#providers = new Array(n).fill("");
    this.#devices = new Array(n).fill("");
    this.#signals = new Array(n).fill("");
    this.#numbers = new Float64Array(n);
    this.#qualities = new Uint8Array(n);
    this.#times = new Float64Array(n);
  }

  /** Events kept now. */
  get count(): number {
    return this.#count;
  }

  /** Their estimated bytes. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Events too large for the ring (over its byte bound) kept only as their place, since start. */
  get omittedTotal(): number {
    return this.#omittedTotal;
  }

  /** Id of the newest event seen (0 before the first). */
  get lastId(): number {
    return this.#lastId;
  }

  /** Starts the ring after events the hub never saw (published before it subscribed). */
  startAfter(lastId: number): void {
    if (this.#count > 0 || this.#lastId !== 0) return;
    this.#lastId = lastId;
    this.#firstId = lastId + 1;
  }

  push(p: PublishedEvent): void {
    if (p.id !== this.#lastId + 1) this.#clear(p.id - 1); // never with one bus; kept honest
    this.#lastId = p.id;
    let size = Math.min(estimateFrameBytes(p.event), 0xffffffff);
    let omitted: OmittedEvent | null = null;
    if (size > this.#maxBytes) {
      // Larger than the whole ring: kept as its place only (a resumed stream is told it was
      // left out), not clearing the ring, which would answer every resume too_old.
      omitted = omittedOf(p.event);
      size = Math.min(FRAME_OVERHEAD + stringBytes(omitted), this.#maxBytes);
      this.#omittedTotal++;
    }
    while (this.#count >= this.#maxEvents || this.#bytes + size > this.#maxBytes) {
      this.#dropOldest();
    }
    const slot = (this.#start + this.#count) % this.#maxEvents;
    if (omitted === null) this.#keep(slot, p.event);
    else {
      this.#form[slot] = OMITTED;
      this.#objects[slot] = omitted;
    }
    this.#sizes[slot] = size;
    this.#count++;
    this.#bytes += size;
  }

  /** Whether a stream that last saw `lastId` (of this runtime) can be given what followed. */
  resumeFrom(lastId: number): ResumePoint {
    if (lastId > this.#lastId) return { ok: false, reason: "unknown" };
    if (lastId + 1 < this.#firstId) return { ok: false, reason: "too_old" };
    return { ok: true };
  }

  /**
   * The event with this id, when it is still kept (made anew from the columns); undefined too
   * for one left out for its size (see omitted()).
   */
  get(id: number): PublishedEvent | undefined {
    if (id < this.#firstId || id > this.#lastId || this.#count === 0) return undefined;
    const slot = (this.#start + (id - this.#firstId)) % this.#maxEvents;
    const form = this.#form[slot]!;
    if (form === OMITTED) return undefined;
    if (form === OBJECT) return { id, event: this.#objects[slot] as RuntimeEvent };
    const x = this.#numbers[slot]!;
    const value: TypedValue = form === DOUBLE
      ? { type: "double", double: x }
      : form === BOOL
      ? { type: "bool", bool: x !== 0 }
      : form === INT64
      ? { type: "int64", int64: x }
      : form === UINT64
      ? { type: "uint64", uint64: x }
      : this.#objects[slot] as TypedValue;
    // The members in the order the state cache publishes them: the same frame, byte for byte.
    return {
      id,
      event: {
        kind: "state_update",
        provider_id: this.#providers[slot]!,
        device_id: this.#devices[slot]!,
        signal_id: this.#signals[slot]!,
        value,
        quality: QUALITIES[this.#qualities[slot]!]!,
        timestamp_ms: this.#times[slot]!,
      },
    };
  }

  /** The kind and ids of the event with this id when it was left out for its size. */
  omitted(id: number): OmittedEvent | undefined {
    if (id < this.#firstId || id > this.#lastId || this.#count === 0) return undefined;
    const slot = (this.#start + (id - this.#firstId)) % this.#maxEvents;
    return this.#form[slot] === OMITTED ? this.#objects[slot] as OmittedEvent : undefined;
  }

  /** Stores an event in a slot: a state_update in the columns, anything else as it is. */
  #keep(slot: number, e: RuntimeEvent): void {
    if (e.kind !== "state_update") {
      this.#form[slot] = OBJECT;
      this.#objects[slot] = e;
      return;
    }
    const v = e.value;
    let form = VALUE_OBJECT;
    if (v.type === "double" && v.non_finite === undefined) {
      form = DOUBLE;
      this.#numbers[slot] = v.double;
    } else if (v.type === "bool") {
      form = BOOL;
      this.#numbers[slot] = v.bool ? 1 : 0;
    } else if (v.type === "int64" && typeof v.int64 === "number") {
      form = INT64;
      this.#numbers[slot] = v.int64;
    } else if (v.type === "uint64" && typeof v.uint64 === "number") {
      form = UINT64;
      this.#numbers[slot] = v.uint64;
    }
    this.#form[slot] = form;
    this.#objects[slot] = form === VALUE_OBJECT ? v : undefined;
    this.#providers[slot] = e.provider_id;
    this.#devices[slot] = e.device_id;
    this.#signals[slot] = e.signal_id;
    this.#qualities[slot] = QUALITIES.indexOf(e.quality);
    this.#times[slot] = e.timestamp_ms;
  }

  /** Id of the oldest event kept (lastId + 1 when none). */
  get firstId(): number {
    return this.#firstId;
  }

  #dropOldest(): void {
    this.#bytes -= this.#sizes[this.#start]!;
    this.#objects[this.#start] = undefined;
    this.#start = (this.#start + 1) % this.#maxEvents;
    this.#count--;
    this.#firstId++;
  }

  /** Forgets everything up to and including `id`. */
  #clear(id: number): void {
    this.#objects.fill(undefined);
    this.#start = 0;
    this.#count = 0;
    this.#bytes = 0;
    this.#lastId = id;
    this.#firstId = id + 1;
  }
}
