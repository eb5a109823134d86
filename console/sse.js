// GET /v0/events read with fetch (EventSource cannot send the bearer header), with its own
// reconnection: backoff after a failure, a "stale" state when nothing (not even the server's
// keep-alive comment) arrives for a while, and a fresh connection when the silence goes on. Each
// reconnection sends the id of the last event received (`Last-Event-ID`, as EventSource would):
// the runtime sends what was missed, or a `resync` event when it no longer can (onGap).

/** The runtime sends `: keepalive` after 15 s without events; silence past this is "stale". */
export const STALE_AFTER_MS = 20000;
/** Silence past this ends the connection and opens a new one. */
export const RECONNECT_AFTER_MS = 35000;
/**
 * While stale (and the page shown), how often the silence is told again (`stale` with the new
 * `silentMs`): the page counts it up until the stream is live again or reconnects.
 */
export const STALE_TICK_MS = 1000;
/** First wait before reconnecting after a failure; doubled per failure up to the maximum. */
export const BACKOFF_INITIAL_MS = 500;
export const BACKOFF_MAX_MS = 10000;
/** Longest text kept while waiting for the end of one event (the server's are < 64 KiB). */
export const MAX_PENDING_CHARS = 1 << 20;
/** The event the runtime sends instead of missed events it no longer holds. */
export const RESYNC_EVENT = "resync";
/** The event (no id) after a `: dropped N events` comment: this page reads the comment instead. */
export const DROPPED_EVENT = "dropped";

/** The run part of an event id `<boot>-<n>` ("" for an id of another shape). */
function idRun(id) {
  const m = /^([0-9a-z]+)-\d+$/.exec(id);
  return m === null ? "" : m[1];
}

/**
 * Splits an event stream into events (the SSE wire format: `event:`, `data:`, `id:` lines, a
 * blank line ends an event, `:` starts a comment).
 */
export class SseParser {
  /**
   * @param {(e: {event: string, data: string, id: string}) => void} onEvent
   * @param {(text: string) => void} [onComment]
   */
  constructor(onEvent, onComment = () => {}) {
    this.onEvent = onEvent;
    this.onComment = onComment;
    this.buffer = "";
    this.reset();
  }

  reset() {
    this.event = "";
    /** @type {string[]} */
    this.data = [];
    this.id = "";
  }

  /** Feeds decoded text; complete lines are handled, a partial one is kept. */
  push(text) {
    this.buffer += text;
    if (this.buffer.length > MAX_PENDING_CHARS) {
      throw new Error(`event stream: no line end within ${MAX_PENDING_CHARS} characters`);
    }
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      if (m === null) return;
      // A lone \r at the very end may be the first half of \r\n: wait for more.
      if (m[0] === "\r" && m.index === this.buffer.length - 1) return;
      const line = this.buffer.slice(0, m.index);
      this.buffer = this.buffer.slice(m.index + m[0].length);
      this.line(line);
    }
  }

  line(line) {
    if (line === "") {
      if (this.data.length > 0) {
        this.onEvent({ event: this.event || "message", data: this.data.join("\n"), id: this.id });
      }
      this.reset();
      return;
    }
    if (line.startsWith(":")) {
      this.onComment(line.slice(1).trim());
      return;
    }
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.event = value;
    else if (field === "data") this.data.push(value);
    else if (field === "id") this.id = value;
  }
}

/**
 * One event stream that keeps itself connected. States: `connecting`, `live`, `stale`,
 * `disconnected` (waiting `retryInMs` before the next attempt), `stopped`.
 */
export class EventStream {
  /**
   * @param {{
   *   url: string,
   *   headers?: () => Record<string, string>,
   *   onEvent: (e: {event: string, data: string, id: string}) => void,
   *   onComment?: (text: string) => void,
   *   onOpen?: (resumed: boolean) => void,
   *   onGap?: (reason: string) => void,
   *   onState?: (state: string, detail: {retryInMs?: number, error?: string, silentMs?: number}) => void,
   *   onUnauthorized?: () => Promise<boolean>,
   *   isHidden?: () => boolean,
   *   staleAfterMs?: number,
   *   reconnectAfterMs?: number,
   *   staleTickMs?: number,
   *   backoffInitialMs?: number,
   *   backoffMaxMs?: number,
   * }} options `onOpen(resumed)`: a connection opened; `resumed` when it asked to resume after an
   *   event. `onGap(reason)`: events were missed and cannot be sent (a `resync` event: too_old,
   *   restarted, unknown; or a resumed stream whose events come from another run: restarted);
   *   re-read the state. `isHidden`: whether the page is hidden (then a stale silence is not
   *   told again each STALE_TICK_MS; `recheck()` once it is shown).
   */
  constructor(options) {
    this.options = options;
    /** The id of the last event received ("" before the first): sent on reconnection. */
    this.lastEventId = "";
    this.state = "stopped";
    this.running = false;
    /** @type {AbortController | null} */
    this.abort = null;
    this.failures = 0;
    /** performance.now() of the last data: silence is measured on the monotonic clock, which a
     * step of the wall clock (NTP on the tablet) neither stretches nor cuts. */
    this.lastDataAt = 0;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.watchTimer = undefined;
    /** The silence check of the connection open now (null: none). */
    this.watchCheck = null;
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    this.retryTimer = undefined;
    /** @type {(() => void) | null} */
    this.wake = null;
    /** @type {Promise<void> | null} */
    this.loop = null;
  }

  /** Starts connecting (no-op when running). */
  start() {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  /** Closes the stream and stops reconnecting; resolves once everything is released. */
  async stop() {
    this.running = false;
    this.abort?.abort();
    clearTimeout(this.retryTimer);
    clearTimeout(this.watchTimer);
    this.wake?.();
    await this.loop;
    this.setState("stopped", {});
  }

  /** Ends the wait before the next attempt (e.g. once a token was entered). */
  retryNow() {
    if (this.state !== "disconnected") return;
    this.failures = 0;
    clearTimeout(this.retryTimer);
    this.wake?.();
  }

  /** Checks the silence now (e.g. the page is shown again: a stale count moves on at once). */
  recheck() {
    if (this.watchCheck === null) return;
    clearTimeout(this.watchTimer);
    this.watchCheck();
  }

  setState(state, detail) {
    this.state = state;
    this.options.onState?.(state, detail);
  }

  async run() {
    while (this.running) {
      let error = "";
      try {
        error = await this.connectOnce();
      } catch (err) {
        error = err instanceof Error ? err.message : String(err);
      }
      clearTimeout(this.watchTimer);
      if (!this.running) break;
      const initial = this.options.backoffInitialMs ?? BACKOFF_INITIAL_MS;
      const max = this.options.backoffMaxMs ?? BACKOFF_MAX_MS;
      const wait = Math.min(max, initial * 2 ** Math.min(this.failures, 20));
      this.failures++;
      this.setState("disconnected", { retryInMs: wait, error });
      await new Promise((resolve) => {
        this.wake = () => resolve(undefined);
        this.retryTimer = setTimeout(resolve, wait);
      });
      this.wake = null;
    }
  }

  /** One connection, until it ends; resolves with why it ended. */
  async connectOnce() {
    this.setState("connecting", {});
    const abort = new AbortController();
    this.abort = abort;
    let res;
    const resumeFrom = this.lastEventId;
    try {
      res = await fetch(this.options.url, {
        headers: {
          accept: "text/event-stream",
          ...(this.options.headers?.() ?? {}),
          ...(resumeFrom ? { "last-event-id": resumeFrom } : {}),
        },
        signal: abort.signal,
        cache: "no-store",
      });
    } catch (err) {
      return `no answer (${err instanceof Error ? err.message : err})`;
    }
    if (res.status === 401) {
      await res.body?.cancel();
      if (this.options.onUnauthorized && await this.options.onUnauthorized()) {
        this.failures = 0;
        return "unauthorized; retrying with the new token";
      }
      return "401 UNAUTHENTICATED";
    }
    if (!res.ok || res.body === null) {
      const text = await res.text().catch(() => "");
      return `${res.status} ${text}`.trim();
    }
    let first = true;
    const parser = new SseParser((e) => {
      // Said by the comment before it (onComment); no id, so it says nothing of the run either.
      if (e.event === DROPPED_EVENT) return;
      // A runtime that does not resume (another run, or one that ignores the id) shows itself
      // by its ids: the first event after a resume must be of the same run.
      const checkRun = first && resumeFrom !== "" && e.event !== RESYNC_EVENT;
      first = false;
      if (e.id !== "") this.lastEventId = e.id;
      if (e.event === RESYNC_EVENT) {
        let reason = "unknown";
        try {
          reason = JSON.parse(e.data).reason ?? reason;
        } catch {
          // a resync without readable data is still a resync
        }
        this.options.onGap?.(reason);
        return;
      }
      if (checkRun && idRun(e.id) !== idRun(resumeFrom)) this.options.onGap?.("restarted");
      this.options.onEvent(e);
    }, this.options.onComment);
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    this.failures = 0;
    this.lastDataAt = performance.now();
    this.setState("live", {});
    this.options.onOpen?.(resumeFrom !== "");
    this.watch(abort);
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return "the runtime ended the stream";
        this.lastDataAt = performance.now();
        if (this.state !== "live") this.setState("live", {});
        parser.push(value);
      }
    } catch (err) {
      return abort.signal.aborted
        ? "closed"
        : `stream broken (${err instanceof Error ? err.message : err})`;
    } finally {
      abort.abort();
      await reader.cancel().catch(() => {});
    }
  }

  /**
   * Marks the stream stale after a silence, tells the silence again every STALE_TICK_MS while
   * stale and shown (bounded: until data comes or the longer silence ends the connection), and
   * ends it after a longer one.
   */
  watch(abort) {
    const stale = this.options.staleAfterMs ?? STALE_AFTER_MS;
    const dead = this.options.reconnectAfterMs ?? RECONNECT_AFTER_MS;
    const tick = this.options.staleTickMs ?? STALE_TICK_MS;
    const period = Math.max(50, Math.min(stale, dead) / 4);
    /** performance.now() when the stale silence was last told. */
    let toldAt = 0;
    const check = () => {
      if (abort.signal.aborted) {
        if (this.watchCheck === check) this.watchCheck = null;
        return;
      }
      const now = performance.now();
      const silent = now - this.lastDataAt;
      if (silent >= dead) {
        // Stale on the way, also when this check comes late (a busy or throttled page): the
        // states an operator sees always run live -> stale -> disconnected.
        if (this.state === "live") this.setState("stale", { silentMs: silent });
        if (this.watchCheck === check) this.watchCheck = null;
        abort.abort();
        return;
      }
      const hidden = this.options.isHidden?.() ?? false;
      if (silent >= stale && this.state === "live") {
        this.setState("stale", { silentMs: silent });
        toldAt = now;
      } else if (this.state === "stale" && !hidden && now - toldAt >= tick) {
        this.setState("stale", { silentMs: silent });
        toldAt = now;
      }
      // Stale and shown: back in time for the next count; otherwise the silence check alone.
      const next = this.state === "stale" && !hidden
        ? Math.max(1, Math.min(period, tick - (now - toldAt)))
        : period;
      this.watchTimer = setTimeout(check, next);
    };
    this.watchCheck = check;
    this.watchTimer = setTimeout(check, period);
  }
}
