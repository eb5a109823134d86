/**
 * The connection layer under the HTTP server: our own accept loop that counts connections,
 * bounds them, closes idle and slow ones, survives accept errors, and hands each admitted
 * connection to Deno's HTTP engine (the hyper-based one behind Deno.serve).
 *
 * Why not Deno.serve alone (Deno 2.9.6): it accepts in Rust and exposes no connection count, no
 * limit, no header-read or keep-alive timeout (an idle connection stays open for ever), and an
 * accept error such as EMFILE ends the whole server with a rejected `finished` promise. The only
 * way to keep its engine and still see connections is `serveHttpOnConnection`, the function
 * Deno.serve itself is built from, reached through `Deno[Deno.internal]` (no public API hands a
 * connection to it; `Deno.serveHttp` is the removed 1.x API). See serve.ts for the measurements
 * behind the choice and `internalServeOnConnection` for how its absence is reported.
 *
 * Per request the layer adds two counter updates and a `completed` callback; the sweeper that
 * enforces the timeouts is one timer (re-armed after each run) over at most `maxConnections`
 * records, not a timer per request. Its time and timers come from the clock port.
 */
import { type Clock, errorMessage, type Logger, raceTimeout, type TimerId } from "../common/mod.ts";

/**
 * The request handler the server drives (HttpApi.handle). `info.dropConnection` closes the
 * connection the request came on while its answer is not completely written (nothing after): for
 * an answer its client will never read to its end (an event stream to a client that stopped
 * reading), which would keep the request in flight and the connection held for as long as the
 * client lives. Under HTTP/2 (a browser's tabs share one connection) the connection is dropped
 * only once every request in flight on it has asked so: its other requests, an e-stop among
 * them, are answered first. `info.answered` settles once the request's answer is written, or its
 * connection has ended: from then on the request holds nothing of the connection.
 */
export type ServeHandler = (
  req: Request,
  info: {
    readonly remoteAddr: string;
    readonly dropConnection: () => void;
    readonly answered: Promise<void>;
  },
) => Promise<Response>;

/** How often the sweeper checks deadlines at most / at least (ms). */
const SWEEP_INTERVAL_MIN_MS = 50;
const SWEEP_INTERVAL_MAX_MS = 1000;
/** Back-off after a failed accept (EMFILE, ENFILE, ...): doubles from MIN up to MAX (ms). */
export const ACCEPT_ERROR_BACKOFF_MIN_MS = 10;
export const ACCEPT_ERROR_BACKOFF_MAX_MS = 1000;
/** At most one log line per this period for accept errors and for refused/evicted connections. */
export const CONNECTION_LOG_INTERVAL_MS = 10_000;
/** Size of each direction's copy buffer of the TLS relay (one TLS record is at most 16 KiB). */
export const TLS_RELAY_BUFFER_BYTES = 16 * 1024;
/**
 * Shutdown lets requests in flight finish for at most this long, then drops their connections: a
 * client that stopped reading (an event stream to a frozen tablet, a half-open connection) would
 * otherwise hold the server's shutdown, and the runtime's stop behind it, for ever.
 */
export const HTTP_SHUTDOWN_DRAIN_MS = 1000;
/**
 * A request whose answer is still being made when shutdown begins (its handler has not returned:
 * a device call waiting for its provider, which stays up until the server is down) gets this long
 * from then to be answered and its answer written: the default providers[].timeout_ms, so a call
 * is not cut off after it was sent and its client left not knowing whether it acted. Answers
 * already handed over (event streams, which the API ends first, and bodies a client does not read)
 * keep HTTP_SHUTDOWN_DRAIN_MS. The process's shutdown budget adds it (src/app/process.ts).
 */
export const HTTP_SHUTDOWN_ANSWER_MS = 5000;

/**
 * The answer a request gets in place of its own when that is still being made at the end of
 * HTTP_SHUTDOWN_ANSWER_MS (a call to a provider whose timeout_ms is longer): 504
 * DEADLINE_EXCEEDED, saying that what it asked for may have been carried out. A cut connection
 * would say nothing (a client may take it for "not done" and repeat a call that acted). `extra`:
 * the headers the request's own answer would have carried (CORS, from standInHeaders), so a
 * browser page may read it.
 */
function lateAnswer(extra: Headers | null): Response {
  const body = JSON.stringify({
    status: {
      code: "DEADLINE_EXCEEDED",
      message: `the runtime is shutting down and this request's answer was not ready within ` +
        `${HTTP_SHUTDOWN_ANSWER_MS} ms: its outcome is unknown (a device call may have been ` +
        "carried out); check the device's state before repeating it",
    },
  });
  const headers = new Headers(extra ?? undefined);
  headers.set("content-type", "application/json");
  return new Response(body, { status: 504, headers });
}
/**
 * HTTP/2: a connection whose last request not asking to drop it has just been answered is dropped
 * this long after (its answer's bytes leave first: dropping at once lost them).
 */
export const HTTP2_DROP_FLUSH_MS = 1000;
/**
 * Shutdown: a connection dropped at the end of a shutdown bound (HTTP_SHUTDOWN_DRAIN_MS,
 * HTTP_SHUTDOWN_ANSWER_MS) less than this long after one of its requests' answers was written is
 * dropped this long after that answer instead, so that the answer's bytes leave first. HTTP/2: a
 * call answered at the bound on a connection that also carries a stream its client does not read
 * (which keeps the connection from ever draining) lost its answer when the connection was
 * dropped at once. The process's shutdown budget adds it (src/app/process.ts).
 */
export const HTTP_SHUTDOWN_FLUSH_MS = 1000;
/**
 * The whole of shutdown ends at most this long after it began (the HTTP part of the process's
 * shutdown budget, src/app/process.ts): connections still open then are cut, in one WARN line.
 * A connection whose graceful end has begun (its requests answered) can no longer be dropped,
 * and an HTTP/2 stream its client opened just before that end (the server still accepts one
 * until its GOAWAY's PING is answered) with an answer the client never reads held it, and
 * shutdown with it, until the process overran its budget (exit 4). HTTPS connections are cut by
 * closing the relay's sockets; a plain one in its graceful end cannot be (Deno holds its socket
 * then, out of reach) and is left to the process's exit.
 */
export const HTTP_SHUTDOWN_MAX_MS = HTTP_SHUTDOWN_ANSWER_MS + HTTP_SHUTDOWN_DRAIN_MS +
  HTTP_SHUTDOWN_FLUSH_MS;
/**
 * At the limit with no idle connection, a connection whose every request in flight has had its
 * answer handed over this long ago without it being written (its client reads nothing: a zero TCP
 * window) is evicted for the new one: a few clients that never read a large answer would
 * otherwise lock every new connection out, the e-stop's included. Event streams
 * (text/event-stream) are exempt: their share is bounded and their own stall bound ends them.
 */
export const HTTP_UNREAD_ANSWER_EVICT_MS = 1000;
/** At the limit, the next accept waits for the evicted connection's socket at most this long. */
const EVICTION_WAIT_MAX_MS = 1000;
/**
 * HTTPS: once the server of a relayed connection has ended (an answer with `Connection: close`,
 * a graceful shutdown), the relay gets at most this long to copy the last bytes that server wrote
 * to the client before both ends are closed. Closing them at once cut the tail of that last
 * answer (of a 4 MiB answer, ~270 KiB were lost every time).
 */
export const TLS_RELAY_FLUSH_MS = 1000;
/** A connection to the internal TLS listener that no relay claims within this time is closed. */
const TLS_RELAY_MATCH_TIMEOUT_MS = 1000;
/**
 * HTTPS: the relay's loopback connect to the internal TLS listener gets at most this long, then
 * the client's connection is closed (one WARN line). Such a connect is immediate unless the
 * listener's accept backlog is full (its accept loop backing off after EMFILE), when the kernel
 * retries the SYN for minutes: only the request-header timeout bounded it, and shutdown waited
 * for it.
 */
export const TLS_RELAY_CONNECT_TIMEOUT_MS = 1000;

/**
 * At the limit, how long a refused plain-HTTP connection's request head is waited for before it
 * is answered 503: the head's Origin decides the CORS headers of that 503 (a page of a granted
 * origin would see a network error instead of it). A client that sends nothing in time is answered
 * without them.
 */
export const REFUSAL_HEAD_WAIT_MS = 250;
/** Of a refused connection's request head, at most this many bytes are read (for its Origin). */
export const REFUSAL_HEAD_MAX_BYTES = 8192;
/**
 * Refused connections whose request head is being read at once (REFUSAL_HEAD_WAIT_MS): beyond
 * it a refused connection is answered at once, without CORS headers, and the next accept waits for
 * that answer, so a flood holds at most this many descriptors beyond http.max_connections.
 */
export const MAX_REFUSALS_READING = 8;

/** The answer a refused plain-HTTP connection gets before it is closed, with `headers` added. */
function refusalResponse(maxConnections: number, headers: Headers | null = null): Uint8Array {
  const body = JSON.stringify({
    status: {
      code: "UNAVAILABLE",
      message: `too many open connections (http.max_connections = ${maxConnections}); retry later`,
    },
  });
  let extra = "";
  for (const [name, value] of headers ?? []) extra += `${name}: ${value}\r\n`;
  return new TextEncoder().encode(
    "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n" +
      `content-length: ${body.length}\r\nretry-after: 1\r\nconnection: close\r\n${extra}\r\n` +
      body,
  );
}

/**
 * The request a refused connection's head names, as far as its CORS headers need it (its Origin,
 * the Host it was sent to), or null when the head is incomplete or malformed.
 */
function requestOfHead(head: Uint8Array): Request | null {
  const text = new TextDecoder().decode(head);
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return null;
  const fields = new Map<string, string>();
  for (const line of text.slice(0, end).split("\r\n").slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) return null;
    fields.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  const origin = fields.get("origin");
  if (origin === undefined) return null;
  try {
    return new Request(`http://${fields.get("host") ?? "localhost"}/`, { headers: { origin } });
  } catch {
    return null; // a Host or an Origin no URL or header can hold
  }
}

/** What Deno's internal per-connection server returns (the shape of Deno.HttpServer). */
interface ConnectionServer {
  readonly finished: Promise<void>;
  shutdown(): Promise<void>;
}

/**
 * What serveHttpOnConnection does with its `signal`: it only registers one "abort" listener that
 * cancels the connection. We pass this object instead of an AbortSignal to get that listener and
 * call it ourselves: an AbortSignal would run it inside event dispatch, where its error (Bad
 * resource ID, when the connection ended an instant before) is reported as an uncaught error,
 * which src/main.ts treats as a crash.
 */
interface CancelHook {
  addEventListener(type: "abort", listener: () => void, options?: unknown): void;
}

type ServeOnConnection = (
  conn: Deno.Conn,
  signal: CancelHook,
  handler: (req: Request, info: Deno.ServeHandlerInfo) => Promise<Response>,
  onError: (err: unknown) => Response,
  onListen: () => void,
) => ConnectionServer;

/**
 * Deno's `serveHttpOnConnection` (ext/http/00_serve.ts), or null when this Deno does not have it.
 * It is internal: a Deno upgrade may move it, which tests/http/connection_limits_test.ts catches.
 */
export function internalServeOnConnection(): ServeOnConnection | null {
  const key = (Deno as unknown as { internal?: symbol }).internal;
  if (key === undefined) return null;
  const internals = (Deno as unknown as Record<symbol, Record<string, unknown> | undefined>)[key];
  const fn = internals?.serveHttpOnConnection;
  return typeof fn === "function" ? fn as ServeOnConnection : null;
}

export interface ConnectionLayerOptions {
  /** The public listener (plain TCP, also for HTTPS: TLS runs behind the relay). */
  readonly listener: Deno.Listener;
  /** HTTPS: the loopback TLS listener the relay feeds; null for plain HTTP. */
  readonly tlsListener: Deno.TlsListener | null;
  readonly maxConnections: number;
  readonly requestHeaderTimeoutMs: number;
  readonly keepAliveTimeoutMs: number;
  readonly handler: ServeHandler;
  /**
   * The answer to a request whose handler failed (threw or rejected); it gets standInHeaders
   * added. Also told of errors Deno's engine reports outside a handler (its answer unused then).
   */
  readonly onError: (err: unknown) => Response;
  readonly log: Logger;
  readonly serveOnConnection: ServeOnConnection;
  /** The time (monoMs) and the timers of every bound above (tests pass a manual clock). */
  readonly clock: Clock;
  /**
   * Headers the request's own answer would have carried (the HTTP layer's CORS headers), for an
   * answer made in its place: the 504 at shutdown (lateAnswer) and the 500 of onError; null: none.
   */
  readonly standInHeaders: ((req: Request) => Headers) | null;
}

/** Counters since start (observability and tests). */
export interface ConnectionStats {
  /** Connections held now (admitted, not yet closed). */
  open: number;
  accepted: number;
  /** Closed because the first request's headers (HTTPS: and the TLS handshake) took too long. */
  headerTimeouts: number;
  /** Closed after http.keep_alive_timeout_ms without a request. */
  idleTimeouts: number;
  /**
   * Connections closed to make room for a new one at the limit: idle ones, and ones whose clients
   * have not read their answers (unreadEvicted).
   */
  evicted: number;
  /** Of `evicted`: connections whose answers their clients did not read (HTTP_UNREAD_ANSWER_EVICT_MS). */
  unreadEvicted: number;
  /** New connections refused at the limit (every held connection had a request in flight). */
  refused: number;
  acceptErrors: number;
}

/** One admitted connection. */
interface Conn {
  /** The client's TCP connection. */
  readonly conn: Deno.Conn;
  readonly info: { readonly remoteAddr: string };
  readonly acceptedAt: number;
  idleSince: number;
  requests: number;
  inFlight: number;
  /** Requests whose handler has not returned its Response yet (the answer is being made). */
  answering: number;
  /**
   * Per request being answered: gives it lateAnswer() in place of its own (shutdown), and the
   * promise that settles once its answer is written or its connection has ended.
   */
  readonly late: Map<() => void, Promise<void>>;
  /**
   * Per request whose answer (not an event stream) was handed over and is not written yet: when
   * it was handed over (clock.monoMs()). HTTP_UNREAD_ANSWER_EVICT_MS.
   */
  readonly unwritten: Set<{ readonly at: number }>;
  /**
   * Requests in flight that asked to drop the connection (dropConnection); it is dropped once
   * they are all of its requests in flight (HTTP/1.1: at once).
   */
  dropWanted: number;
  /** The drop planned once the other requests were answered (HTTP2_DROP_FLUSH_MS). */
  dropTimer: TimerId | null;
  /** When one of its requests' answers was last written (monoMs; HTTP_SHUTDOWN_FLUSH_MS). */
  lastWrittenAt: number;
  /**
   * Its close, planned for the last bytes to leave: at shutdown HTTP_SHUTDOWN_FLUSH_MS after its
   * last answer was written; HTTPS, TLS_RELAY_FLUSH_MS after its server ended.
   */
  flushTimer: TimerId | null;
  /**
   * The flushTimer is shutdown's drop (#drop), planned anew from each answer written until it
   * fires; not the TLS relay's flush.
   */
  shutdownDrop: boolean;
  /** HTTPS: its server (the TLS side) has ended; the relay is copying what it wrote last. */
  serverEnded: boolean;
  closed: boolean;
  /** Cancels Deno's connection server (drops the connection); null once it has ended. */
  cancel: (() => void) | null;
  server: ConnectionServer | null;
  /**
   * HTTPS: our end of the loopback connection to the TLS listener, and its local address and
   * port (relayKey), by which the listener's side is matched to it; "" until it is made.
   */
  inner: Deno.Conn | null;
  innerKey: string;
  /** Called once the connection's socket is gone (its server or relay has ended). */
  onEnded: (() => void) | null;
  /** Settles once the connection's socket is gone (as onEnded). */
  readonly gone: Promise<void>;
  readonly markGone: () => void;
  /** Shutdown: called when its last request in flight has been answered. */
  onIdle: (() => void) | null;
  ended: boolean;
  readonly requestDone: () => void;
  readonly answerMade: () => void;
}

/** The accept loop, the admitted connections and their deadlines. */
export class ConnectionLayer {
  readonly #o: ConnectionLayerOptions;
  readonly #conns = new Set<Conn>();
  readonly #stats: ConnectionStats = {
    open: 0,
    accepted: 0,
    headerTimeouts: 0,
    idleTimeouts: 0,
    evicted: 0,
    unreadEvicted: 0,
    refused: 0,
    acceptErrors: 0,
  };
  readonly #refusal: Uint8Array;
  #sweeper: TimerId | null = null;
  readonly #sweepEveryMs: number;
  readonly #loops: Promise<void>[] = [];
  /** Refused connections whose request head is being read now (MAX_REFUSALS_READING). */
  #refusalsReading = 0;
  /** HTTPS relay: connections waiting for their TLS side, by the relay's local address (relayKey). */
  readonly #awaitingTls = new Map<string, Conn>();
  /** HTTPS relay: TLS-side connections accepted before their relay registered (relayKey). */
  readonly #unclaimedTls = new Map<string, { conn: Deno.TlsConn; at: number }>();
  /** Everything started per connection (servers, relays, refusals); shutdown waits for it. */
  readonly #pending = new Set<Promise<void>>();
  #stopping = false;
  /** Shutdown: when it cuts what is still open (HTTP_SHUTDOWN_MAX_MS after it began; monoMs). */
  #cutAt = Infinity;
  /**
   * The accept loops' back-off sleeps in progress (one per loop at most: the plain and the TLS
   * listener's), woken at once by shutdown.
   */
  readonly #wakeBackoff = new Set<() => void>();
  #lastLimitLog = -Infinity;
  #limitSuppressed = 0;
  #lastAcceptLog = -Infinity;
  #acceptSuppressed = 0;

  constructor(o: ConnectionLayerOptions) {
    this.#o = o;
    this.#refusal = refusalResponse(o.maxConnections);
    const sweep = Math.min(o.requestHeaderTimeoutMs, o.keepAliveTimeoutMs) / 4;
    this.#sweepEveryMs = Math.max(SWEEP_INTERVAL_MIN_MS, Math.min(SWEEP_INTERVAL_MAX_MS, sweep));
    this.#armSweeper();
    this.#loops.push(this.#acceptLoop());
    if (o.tlsListener) this.#loops.push(this.#tlsAcceptLoop(o.tlsListener));
  }

  /** The sweeper's next run (one timer, re-armed after each run until shutdown). */
  #armSweeper(): void {
    this.#sweeper = this.#o.clock.setTimer(() => {
      this.#sweeper = null;
      // Re-armed whatever one run does (an interval went on after a throw; so must this).
      try {
        this.#sweep();
      } finally {
        if (!this.#stopping) this.#armSweeper();
      }
    }, this.#sweepEveryMs);
  }

  #now(): number {
    return this.#o.clock.monoMs();
  }

  stats(): ConnectionStats {
    return { ...this.#stats, open: this.#conns.size };
  }

  /**
   * Stops accepting, closes connections without a request in flight at once, lets the others
   * finish their requests and closes each once it has, and resolves when every connection has
   * ended. A connection still answering after HTTP_SHUTDOWN_DRAIN_MS is dropped then, unless its
   * answer is still being made (it gets up to HTTP_SHUTDOWN_ANSWER_MS, and is dropped once that
   * answer is written if another request still holds it). (Not Deno's graceful
   * server shutdown: a connection it waits on cannot be dropped any more, so a client that
   * stopped reading held it for ever.)
   */
  async shutdown(): Promise<void> {
    if (this.#stopping) return;
    this.#stopping = true;
    const begun = this.#now();
    this.#cutAt = begun + HTTP_SHUTDOWN_MAX_MS;
    if (this.#sweeper !== null) this.#o.clock.clearTimer(this.#sweeper);
    this.#sweeper = null;
    for (const wake of [...this.#wakeBackoff]) wake();
    closeQuietly(this.#o.listener);
    if (this.#o.tlsListener) closeQuietly(this.#o.tlsListener);
    await Promise.all(this.#loops);
    for (const { conn } of this.#unclaimedTls.values()) closeQuietly(conn);
    this.#unclaimedTls.clear();
    const busy = [...this.#conns].filter((c) => c.inFlight > 0 && c.server !== null);
    // HTTPS ones whose server has ended are copying its last bytes (TLS_RELAY_FLUSH_MS).
    for (const c of this.#conns) if (!busy.includes(c) && !c.serverEnded) this.#close(c);
    // Each answered one is shut down gracefully then (its answer's last bytes flushed): by then
    // nothing can hold it. One whose graceful shutdown has begun can no longer be dropped.
    const answered = new Map(busy.map((c) => [
      c,
      new Promise<void>((r) => {
        c.onIdle = () => {
          c.onIdle = null;
          this.#track(c.server!.shutdown().catch(() => this.#close(c)));
          r();
        };
      }),
    ]));
    const started = this.#now();
    await this.#bounded(Promise.all(answered.values()).then(() => {}), HTTP_SHUTDOWN_DRAIN_MS);
    const late = busy.filter((c) => c.onIdle !== null && !c.closed);
    const making = late.filter((c) => c.answering > 0);
    this.#drop(
      late.filter((c) => c.answering === 0),
      `${HTTP_SHUTDOWN_DRAIN_MS} ms (a client not reading its answer)`,
    );
    if (making.length > 0) {
      const left = HTTP_SHUTDOWN_ANSWER_MS - (this.#now() - started);
      // The answers being made now, made and written (or their connections ended): not their
      // connections idle, which one carrying an HTTP/2 stream its client does not read never is.
      const made = Promise.all(making.flatMap((c) => [...c.late.values()])).then(() => {});
      await this.#bounded(made, left);
      // Still being made (a call to a provider whose timeout_ms is longer): answered that its
      // outcome is unknown, never cut unanswered; the drain bounds writing that answer.
      const unmade = making.filter((c) => c.onIdle !== null && !c.closed && c.late.size > 0);
      if (unmade.length > 0) {
        const n = unmade.reduce((sum, c) => sum + c.late.size, 0);
        this.#o.log.warn(
          `http shutdown: ${n} request(s) still being answered after ${HTTP_SHUTDOWN_ANSWER_MS} ms ` +
            "(e.g. a device call): answered 504, outcome unknown",
        );
        for (const c of unmade) for (const give of [...c.late.keys()]) give();
        await this.#bounded(made, HTTP_SHUTDOWN_DRAIN_MS);
      }
      this.#drop(
        making.filter((c) => c.onIdle !== null && !c.closed),
        `${this.#now() - started} ms (an answer being made then, e.g. a device call, and ` +
          "one its client does not read)",
      );
    }
    await this.#bounded(this.#settled(), HTTP_SHUTDOWN_MAX_MS - (this.#now() - begun));
    await this.#cut();
  }

  /** Settles once everything started per connection has (new ones included). */
  async #settled(): Promise<void> {
    while (this.#pending.size > 0) await Promise.all(this.#pending);
  }

  /**
   * Shutdown, at HTTP_SHUTDOWN_MAX_MS: cuts every connection still open, in one WARN line, and
   * waits for the HTTPS ones to end (closing the relay's sockets ends them at once).
   */
  async #cut(): Promise<void> {
    const open = [...this.#conns].filter((c) => !c.ended);
    if (open.length === 0) return;
    const plain = open.filter((c) => c.inner === null).length;
    this.#o.log.warn(
      `http shutdown: ${open.length} connection(s) still open ${HTTP_SHUTDOWN_MAX_MS} ms after ` +
        "shutdown began (e.g. a stream its client does not read, opened as its connection was " +
        "ending): cut" +
        (plain > 0
          ? `; ${plain} plain HTTP one(s) cannot be and are left to the process's exit`
          : ""),
    );
    for (const c of open) this.#close(c);
    await Promise.all(open.filter((c) => c.inner !== null).map((c) => c.gone));
  }

  /**
   * Shutdown: drops connections still answering past `after`, in one WARN line. One with an
   * answer written less than HTTP_SHUTDOWN_FLUSH_MS ago is dropped that long after the answer
   * (its bytes leave first; shutdown waits for the connection to end), see #planDrop.
   */
  #drop(conns: readonly Conn[], after: string): void {
    if (conns.length === 0) return;
    this.#o.log.warn(
      `http shutdown: ${conns.length} connection(s) still answering after ${after}: dropped`,
    );
    for (const c of conns) this.#planDrop(c);
  }

  /**
   * Shutdown: drops `c` HTTP_SHUTDOWN_FLUSH_MS after its last answer written, at once when that is
   * past, and never later than the cut (HTTP_SHUTDOWN_MAX_MS). Planned anew from each answer
   * written meanwhile: planned once, an answer written during the window got only what was left
   * of it. An HTTPS connection copying its ended server's last bytes keeps its relay's flush.
   */
  #planDrop(c: Conn): void {
    if (c.closed) return;
    const now = this.#now();
    const wait = Math.min(c.lastWrittenAt + HTTP_SHUTDOWN_FLUSH_MS, this.#cutAt) - now;
    if (wait <= 0) return this.#close(c);
    if (c.flushTimer !== null) {
      if (!c.shutdownDrop) return;
      this.#o.clock.clearTimer(c.flushTimer);
    }
    c.shutdownDrop = true;
    c.flushTimer = this.#o.clock.setTimer(() => {
      c.flushTimer = null;
      this.#close(c);
    }, wait);
  }

  /**
   * The headers for an answer made in place of `req`'s own (`what` it is); none when the callback
   * fails (the answer goes out anyway).
   */
  #standInHeaders(req: Request, what: string): Headers | null {
    if (this.#o.standInHeaders === null) return null;
    try {
      return this.#o.standInHeaders(req);
    } catch (err) {
      this.#o.log.warn(`http: headers for ${what} failed: ${errorMessage(err)}`);
      return null;
    }
  }

  /** The answer to `req` whose handler failed: onError's, with the stand-in headers added. */
  #failedAnswer(err: unknown, req: Request): Response {
    const res = this.#o.onError(err);
    const extra = this.#standInHeaders(req, "an error answer");
    if (extra === null) return res;
    const headers = new Headers(res.headers);
    for (const [name, value] of extra) if (!headers.has(name)) headers.set(name, value);
    return new Response(res.body, { status: res.status, statusText: res.statusText, headers });
  }

  #track(p: Promise<unknown>): void {
    const forget = () => {
      this.#pending.delete(settled);
    };
    const settled: Promise<void> = p.then(forget, forget);
    this.#pending.add(settled);
  }

  async #acceptLoop(): Promise<void> {
    await this.#acceptEach(() => this.#o.listener.accept(), (conn) => {
      if (this.#stopping) {
        closeQuietly(conn);
        return;
      }
      // At the limit, accept the next one only once the connection closed for this one is gone:
      // a flood then cannot hold more descriptors than the bound while closes catch up.
      const making = this.#admit(conn);
      return making === null ? undefined : this.#bounded(making, EVICTION_WAIT_MAX_MS);
    });
  }

  /**
   * Accepts from `accept` until shutdown, handing each connection to `take` (awaited: it may hold
   * the next accept). The plain and the TLS listener alike: a failed accept (EMFILE/ENFILE and the
   * like: the listener is still good, the connection stays in the kernel's backlog until
   * descriptors free up) is counted, logged and retried after a back-off doubling from
   * ACCEPT_ERROR_BACKOFF_MIN_MS up to ACCEPT_ERROR_BACKOFF_MAX_MS, back to the minimum after an
   * accept that succeeds; a persistent failure never spins.
   */
  async #acceptEach<T>(
    accept: () => Promise<T>,
    take: (conn: T) => Promise<void> | void,
  ): Promise<void> {
    let backoff = ACCEPT_ERROR_BACKOFF_MIN_MS;
    while (!this.#stopping) {
      let conn: T;
      try {
        conn = await accept();
      } catch (err) {
        if (this.#stopping) return;
        this.#stats.acceptErrors++;
        this.#logAcceptError(err);
        await this.#sleep(backoff);
        backoff = Math.min(backoff * 2, ACCEPT_ERROR_BACKOFF_MAX_MS);
        continue;
      }
      backoff = ACCEPT_ERROR_BACKOFF_MIN_MS;
      await take(conn);
    }
  }

  /** Admits a connection; at the limit returns what to wait for before the next accept. */
  #admit(conn: Deno.Conn): Promise<void> | null {
    this.#stats.accepted++;
    if (this.#conns.size >= this.#o.maxConnections) {
      // Make room by closing the oldest connection that has no request in flight (an idle
      // keep-alive one or one still waiting for its first request): a flood of idle connections
      // then cannot lock out a client that has something to say, such as POST /v0/estop.
      let victim: Conn | null = null;
      for (const c of this.#conns) {
        if (c.inFlight === 0) {
          victim = c;
          break;
        }
      }
      victim ??= this.#unreadVictim();
      if (victim === null) {
        this.#stats.refused++;
        this.#logLimit("refused a new connection: every connection has a request in flight");
        return this.#refuse(conn);
      }
      this.#stats.evicted++;
      this.#logLimit(
        victim.inFlight === 0
          ? "closed the oldest idle connection to admit a new one"
          : "closed a connection whose client has not read its answer for " +
            `${HTTP_UNREAD_ANSWER_EVICT_MS} ms or more to admit a new one`,
      );
      const gone = victim.ended ? null : new Promise<void>((r) => (victim.onEnded = r));
      this.#close(victim);
      this.#start(conn);
      return gone;
    }
    this.#start(conn);
    return null;
  }

  /**
   * At the limit with no idle connection: the connection whose every request in flight has had
   * its answer handed over, unwritten, for at least HTTP_UNREAD_ANSWER_EVICT_MS (the longest
   * ago), or null.
   */
  #unreadVictim(): Conn | null {
    const now = this.#now();
    let victim: Conn | null = null;
    let victimSince = Infinity;
    for (const c of this.#conns) {
      if (c.answering > 0 || c.unwritten.size === 0 || c.unwritten.size < c.inFlight) continue;
      let since = -Infinity; // its newest unwritten answer
      for (const u of c.unwritten) since = Math.max(since, u.at);
      if (now - since >= HTTP_UNREAD_ANSWER_EVICT_MS && since < victimSince) {
        victim = c;
        victimSince = since;
      }
    }
    if (victim !== null) this.#stats.unreadEvicted++;
    return victim;
  }

  #start(conn: Deno.Conn): void {
    const now = this.#now();
    let markGone = () => {};
    const gone = new Promise<void>((r) => (markGone = r));
    const c: Conn = {
      gone,
      markGone,
      conn,
      info: { remoteAddr: (conn.remoteAddr as Deno.NetAddr).hostname },
      acceptedAt: now,
      idleSince: now,
      requests: 0,
      inFlight: 0,
      closed: false,
      cancel: null,
      server: null,
      inner: null,
      innerKey: "",
      onEnded: null,
      onIdle: null,
      ended: false,
      answering: 0,
      late: new Map(),
      unwritten: new Set(),
      dropWanted: 0,
      dropTimer: null,
      lastWrittenAt: -Infinity,
      flushTimer: null,
      shutdownDrop: false,
      serverEnded: false,
      requestDone: () => {
        c.inFlight--;
        c.idleSince = this.#now();
        if (c.inFlight === 0) c.onIdle?.();
      },
      answerMade: () => {
        c.answering--;
      },
    };
    this.#conns.add(c);
    if (this.#o.tlsListener === null) this.#serve(c, conn);
    else this.#track(this.#relay(c).then(() => this.#ended(c)));
  }

  /** Hands a connection (the client's, or the TLS side of the relay) to Deno's HTTP engine. */
  #serve(c: Conn, conn: Deno.Conn): void {
    const handler = this.#o.handler;
    const serverDone = () => {
      c.cancel = null; // the server is gone; nothing left to cancel
      if (c.inner === null) {
        this.#close(c);
        this.#ended(c);
        return;
      }
      // HTTPS: the relay ends once it has copied the TLS side's last bytes (its end of file),
      // or TLS_RELAY_FLUSH_MS from now.
      c.serverEnded = true;
      if (c.closed || c.flushTimer !== null) return;
      c.flushTimer = this.#o.clock.setTimer(() => {
        c.flushTimer = null;
        this.#close(c);
      }, TLS_RELAY_FLUSH_MS);
    };
    const hook: CancelHook = {
      addEventListener: (_type, listener) => {
        c.cancel = listener;
      },
    };
    let server: ConnectionServer;
    try {
      server = this.#o.serveOnConnection(
        conn,
        hook,
        (req, info) => {
          c.requests++;
          c.inFlight++;
          c.answering++;
          let written = false;
          let dropWanted = false;
          let handed: { readonly at: number } | null = null;
          const done = () => {
            written = true;
            c.lastWrittenAt = this.#now();
            if (c.shutdownDrop) this.#planDrop(c);
            if (handed !== null) c.unwritten.delete(handed);
            if (dropWanted) c.dropWanted--;
            c.requestDone();
            this.#dropIfAllWanted(c, true);
          };
          const answered = info.completed.then(done, done);
          let own: Promise<Response>;
          try {
            own = handler(req, {
              remoteAddr: c.info.remoteAddr,
              answered,
              // Once the answer is written the connection may carry the next request: kept.
              dropConnection: () => {
                if (written || dropWanted) return;
                dropWanted = true;
                c.dropWanted++;
                this.#dropIfAllWanted(c);
              },
            });
          } catch (err) {
            own = Promise.reject(err);
          }
          // Failed here, not in Deno's engine: its onError is not told the request, whose
          // stand-in headers (CORS) the 500 needs for a browser page to read it.
          const answer = Promise.resolve(own).catch((err) => this.#failedAnswer(err, req));
          // Set before the race below sees the answer: the late answer no longer takes its place.
          let answerSettled = false;
          let lateGiven = false;
          answer.then((res) => {
            answerSettled = true;
            // Made after the late answer took its place, it is never sent: its body is cancelled
            // (a stream left open would hold what it reads from for ever).
            if (lateGiven && res instanceof Response) res.body?.cancel().catch(() => {});
          }, () => (answerSettled = true));
          let giveLate = () => {};
          const given = Promise.race([
            answer,
            new Promise<Response>((r) => {
              giveLate = () => {
                if (answerSettled) return;
                lateGiven = true;
                r(lateAnswer(this.#standInHeaders(req, "a late answer")));
              };
            }),
          ]);
          c.late.set(giveLate, answered);
          const made = () => {
            c.late.delete(giveLate);
            c.answerMade();
          };
          given.then((res) => {
            made();
            if (written || !(res instanceof Response) || isEventStream(res)) return;
            handed = { at: this.#now() };
            c.unwritten.add(handed);
          }, made);
          return given;
        },
        this.#o.onError,
        () => {},
      );
    } catch (err) {
      this.#o.log.warn(`cannot serve a connection: ${errorMessage(err)}`);
      closeQuietly(conn);
      c.cancel = null;
      this.#close(c);
      if (c.inner === null) this.#ended(c);
      return;
    }
    c.server = server;
    this.#track(server.finished.then(serverDone, (err) => {
      this.#o.log.debug(`connection ended with an error: ${errorMessage(err)}`);
      serverDone();
    }));
  }

  /**
   * Drops a connection whose every request in flight asked for it: HTTP/2 multiplexes a browser's
   * requests onto one connection, and dropping it for one stalled stream would cut the others.
   */
  #dropIfAllWanted(c: Conn, answered = false): void {
    if (c.closed || c.dropWanted === 0 || c.dropWanted < c.inFlight) return;
    if (!answered) return this.#close(c);
    // Planned anew from each answer: one written while an earlier drop was planned (an e-stop
    // answered meanwhile) gets its whole HTTP2_DROP_FLUSH_MS too.
    if (c.dropTimer !== null) this.#o.clock.clearTimer(c.dropTimer);
    c.dropTimer = this.#o.clock.setTimer(() => {
      c.dropTimer = null;
      if (c.dropWanted > 0 && c.dropWanted >= c.inFlight) this.#close(c);
    }, HTTP2_DROP_FLUSH_MS);
  }

  /** HTTPS: copies bytes between the client and the loopback TLS listener both ways. */
  async #relay(c: Conn): Promise<void> {
    const tls = this.#o.tlsListener!;
    const connecting = Deno.connect({
      hostname: (tls.addr as Deno.NetAddr).hostname,
      port: (tls.addr as Deno.NetAddr).port,
    });
    let inner: Deno.Conn | null;
    try {
      inner = await raceTimeout(this.#o.clock, connecting, TLS_RELAY_CONNECT_TIMEOUT_MS, null);
    } catch (err) {
      this.#o.log.warn(`cannot reach the TLS listener: ${errorMessage(err)}`);
      this.#close(c);
      return;
    }
    if (inner === null) {
      // Made later, the connection is nobody's: closed, its failure not reported again.
      connecting.then(closeQuietly, () => {});
      this.#o.log.warn(
        `cannot reach the TLS listener within ${TLS_RELAY_CONNECT_TIMEOUT_MS} ms: ` +
          "closing the client's connection",
      );
      this.#close(c);
      return;
    }
    if (c.closed) {
      closeQuietly(inner);
      return;
    }
    c.inner = inner;
    c.innerKey = relayKey(inner.localAddr);
    const early = this.#unclaimedTls.get(c.innerKey);
    if (early !== undefined) {
      this.#unclaimedTls.delete(c.innerKey);
      this.#serve(c, early.conn);
    } else {
      this.#awaitingTls.set(c.innerKey, c);
    }
    const end = () => this.#close(c);
    // The TLS side refusing the client's bytes (its server has ended) does not end the relay:
    // the copy of what that server wrote last does (or TLS_RELAY_FLUSH_MS, from serverDone).
    await Promise.all([
      pump(c.conn, inner).then((failed) => failed === "to" || end()),
      pump(inner, c.conn).then(end),
    ]);
  }

  async #tlsAcceptLoop(listener: Deno.TlsListener): Promise<void> {
    await this.#acceptEach(() => listener.accept(), (conn) => {
      // Matched by address and port: a local process connecting from another loopback address
      // (127.0.0.2) with a relay's port must not take that relay's place.
      const key = relayKey(conn.remoteAddr);
      const c = this.#awaitingTls.get(key);
      if (c !== undefined) {
        this.#awaitingTls.delete(key);
        this.#serve(c, conn);
      } else if (this.#unclaimedTls.size < this.#o.maxConnections) {
        // Accepted before the relay's connect() returned; the relay claims it by its address,
        // and the sweeper closes it if nobody does (a stray local client).
        const displaced = this.#unclaimedTls.get(key);
        if (displaced !== undefined) closeQuietly(displaced.conn);
        this.#unclaimedTls.set(key, { conn, at: this.#now() });
      } else {
        closeQuietly(conn);
      }
    });
  }

  /** Closes a connection at once (no request in flight, or shutting down). Idempotent. */
  #close(c: Conn): void {
    if (c.closed) return;
    c.closed = true;
    if (c.dropTimer !== null) {
      this.#o.clock.clearTimer(c.dropTimer);
      c.dropTimer = null;
    }
    if (c.flushTimer !== null) {
      this.#o.clock.clearTimer(c.flushTimer);
      c.flushTimer = null;
    }
    this.#conns.delete(c);
    if (c.innerKey !== "") this.#awaitingTls.delete(c.innerKey);
    // Cancelling Deno's connection server drops the connection (its socket is closed).
    if (c.cancel !== null) {
      const cancel = c.cancel;
      c.cancel = null;
      try {
        cancel();
      } catch {
        // The connection ended on its own an instant ago (its resource is gone already).
      }
    } else if (c.inner === null && c.server === null) {
      closeQuietly(c.conn);
    }
    if (c.inner !== null) {
      // HTTPS: closing our end ends the TLS side too, even mid-handshake (Deno cannot drop a
      // TLS connection whose handshake is pending: its socket would stay open until the peer
      // closes it, which is why TLS runs behind this relay).
      closeQuietly(c.inner);
      closeQuietly(c.conn);
    }
  }

  #ended(c: Conn): void {
    if (c.ended) return;
    c.ended = true;
    c.markGone();
    c.onEnded?.();
  }

  /**
   * Answers a connection refused at the limit 503 and closes it. Plain HTTP: its request head is
   * read first (bounded: REFUSAL_HEAD_WAIT_MS, REFUSAL_HEAD_MAX_BYTES, MAX_REFUSALS_READING at
   * once) for the CORS headers its own answer would have carried; the next accept does not wait
   * for that read.
   */
  #refuse(conn: Deno.Conn): Promise<void> | null {
    if (this.#o.tlsListener !== null) {
      closeQuietly(conn);
      return null;
    }
    if (this.#o.standInHeaders === null || this.#refusalsReading >= MAX_REFUSALS_READING) {
      const p = conn.write(this.#refusal).then(() => {}, () => {}).finally(() =>
        closeQuietly(conn)
      );
      this.#track(p);
      return p;
    }
    this.#refusalsReading++;
    const p = (async () => {
      try {
        const head = await raceTimeout(
          this.#o.clock,
          readHead(conn),
          REFUSAL_HEAD_WAIT_MS,
          new Uint8Array(),
        );
        const req = requestOfHead(head);
        const headers = req === null ? null : this.#standInHeaders(req, "a 503 at the limit");
        await conn.write(
          headers === null ? this.#refusal : refusalResponse(this.#o.maxConnections, headers),
        );
      } catch {
        // The client went away: nothing to answer.
      } finally {
        this.#refusalsReading--;
        closeQuietly(conn);
      }
    })();
    this.#track(p);
    return null;
  }

  /** Waits for `p`, at most `ms` (and not past shutdown). */
  #bounded(p: Promise<void>, ms: number): Promise<void> {
    return raceTimeout(this.#o.clock, p, ms, undefined);
  }

  #sweep(): void {
    const now = this.#now();
    const header = this.#o.requestHeaderTimeoutMs;
    const idle = this.#o.keepAliveTimeoutMs;
    for (const c of this.#conns) {
      if (c.inFlight > 0) continue;
      if (c.requests === 0) {
        if (now - c.acceptedAt >= header) {
          this.#stats.headerTimeouts++;
          this.#close(c);
        }
      } else if (now - c.idleSince >= idle) {
        this.#stats.idleTimeouts++;
        this.#close(c);
      }
    }
    for (const [key, u] of this.#unclaimedTls) {
      if (now - u.at >= TLS_RELAY_MATCH_TIMEOUT_MS) {
        this.#unclaimedTls.delete(key);
        closeQuietly(u.conn);
      }
    }
    if (this.#limitSuppressed > 0 && now - this.#lastLimitLog >= CONNECTION_LOG_INTERVAL_MS) {
      this.#logLimit(null);
    }
  }

  #logLimit(what: string | null): void {
    const now = this.#now();
    if (now - this.#lastLimitLog < CONNECTION_LOG_INTERVAL_MS) {
      if (what !== null) this.#limitSuppressed++;
      return;
    }
    const more = this.#limitSuppressed > 0
      ? ` (${this.#limitSuppressed} more refused or evicted in the last period)`
      : "";
    this.#limitSuppressed = 0;
    this.#lastLimitLog = now;
    this.#o.log.warn(
      `connection limit http.max_connections = ${this.#o.maxConnections} reached` +
        (what === null ? "" : `: ${what}`) + more,
    );
  }

  #logAcceptError(err: unknown): void {
    const now = this.#now();
    if (now - this.#lastAcceptLog < CONNECTION_LOG_INTERVAL_MS) {
      this.#acceptSuppressed++;
      return;
    }
    const more = this.#acceptSuppressed > 0
      ? ` (${this.#acceptSuppressed} more since the last report)`
      : "";
    this.#acceptSuppressed = 0;
    this.#lastAcceptLog = now;
    this.#o.log.error(`accepting a connection failed, still serving: ${errorMessage(err)}${more}`);
  }

  /** Sleeps `ms` on the clock; shutdown wakes every sleeper at once (#wakeBackoff). */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const clock = this.#o.clock;
      const wakers = this.#wakeBackoff;
      const t = clock.setTimer(done, ms);
      wakers.add(done);
      function done() {
        wakers.delete(done);
        clock.clearTimer(t);
        resolve();
      }
    });
  }
}

/** An event stream's answer: never written to its end by design (its own bounds end it). */
function isEventStream(res: Response): boolean {
  return res.headers.get("content-type")?.toLowerCase().startsWith("text/event-stream") ?? false;
}

/** How the relay's end and the TLS listener's side of one loopback connection are matched. */
function relayKey(addr: Deno.Addr): string {
  const a = addr as Deno.NetAddr;
  return `${a.hostname} ${a.port}`;
}

/**
 * Copies `from` to `to` until either ends or fails; says which side did ("from": end of file or
 * a failed read; "to": a failed write).
 */
async function pump(from: Deno.Conn, to: Deno.Conn): Promise<"from" | "to"> {
  const buf = new Uint8Array(TLS_RELAY_BUFFER_BYTES);
  for (;;) {
    let n: number | null;
    try {
      n = await from.read(buf);
    } catch {
      return "from"; // closed from the other side or by #close
    }
    if (n === null) return "from";
    try {
      let off = 0;
      while (off < n) off += await to.write(buf.subarray(off, n));
    } catch {
      return "to";
    }
  }
}

/**
 * Reads `conn` until the end of a request head (an empty line), REFUSAL_HEAD_MAX_BYTES, or the
 * end of the stream; what was read. A read that fails once the connection is closed ends it.
 */
async function readHead(conn: Deno.Conn): Promise<Uint8Array> {
  const buf = new Uint8Array(REFUSAL_HEAD_MAX_BYTES);
  let n = 0;
  while (n < buf.length) {
    let got: number | null;
    try {
      got = await conn.read(buf.subarray(n));
    } catch {
      break;
    }
    if (got === null) break;
    n += got;
    if (new TextDecoder().decode(buf.subarray(0, n)).includes("\r\n\r\n")) break;
  }
  return buf.subarray(0, n);
}

function closeQuietly(c: { close(): void }): void {
  try {
    c.close();
  } catch {
    // already closed
  }
}
