/**
 * The HTTP(S) server: the API's request handler on Deno's HTTP engine, behind our own connection
 * layer (_http_connections.ts). Reads and checks the TLS files, passes the client address to the
 * handler, re-checks the non-loopback-without-auth safety gate at bind, and shuts down gracefully
 * (event streams first, then in-flight requests).
 *
 * Connection layer, and why (README, "How it behaves": HTTP connections). Deno.serve in Deno 2.9.6
 * has no connection limit, no header-read or keep-alive timeout (a silent connection stayed open
 * for over 90 s; a slowloris for ever), cannot be observed per connection, cannot take a listener
 * of ours, and an accept error (EMFILE at ~230 idle connections under a 256-descriptor limit)
 * rejects its `finished` promise and ends the server, which reached main as a crash. Options
 * weighed, with the server's CPU per request measured on loopback (16 clients, /proc utime+stime):
 * - Deno.serve: ~10 us per keep-alive request, ~29 us per `Connection: close` request; none of the
 *   bounds above.
 * - node:http (Deno's Node compatibility): headersTimeout, requestTimeout, keepAliveTimeout and
 *   maxConnections do work (headersTimeout only at connectionsCheckingInterval granularity), but
 *   ~24 us per keep-alive request and ~60 us per new connection before any Request/Response
 *   conversion: 2.3x the cost on every request.
 * - Our accept loop (Deno.listen) handing each connection to Deno's own engine through
 *   `serveHttpOnConnection` (what Deno.serve is made of; internal, see _http_connections.ts):
 *   ~10 us per keep-alive request (no measurable change) and ~45 us per new connection (+~16 us
 *   of JS accept and per-connection set-up). Chosen: the request path keeps Deno.serve's cost and
 *   only connection set-up pays, once per connection.
 * The whole runtime, old vs new, GET /v0/state from 16 clients on one machine: 21-22 us per
 * kept-alive request both; per `Connection: close` request 40-53 us before, 58-70 us after
 * (+~16 us per new connection). `deno task bench --only 1,2` showed no change beyond its noise.
 * HTTPS through the relay, kept-alive fetch clients: 41-49 us per request after, 65-79 before.
 * TLS: Deno cannot drop a TLS connection whose handshake is pending (its socket stays open until
 * the peer closes it, whatever JS does), so for HTTPS the public listener is plain TCP and each
 * connection is relayed to a TLS listener on 127.0.0.1 that only the relay uses. Closing the
 * relay closes both ends, so unfinished handshakes are bounded by the request-header timeout. The
 * relay costs HTTPS a copy through JS each way; plain HTTP does not have it.
 */
import {
  type Clock,
  errorMessage,
  isLoopbackHost,
  type Logger,
  RuntimeError,
} from "../common/mod.ts";
import { systemClock } from "./clock.ts";
import { fileKind } from "./files.ts";
import {
  ConnectionLayer,
  type ConnectionStats,
  internalServeOnConnection,
  type ServeHandler,
} from "./_http_connections.ts";

export type { ConnectionStats } from "./_http_connections.ts";
export {
  HTTP2_DROP_FLUSH_MS,
  HTTP_SHUTDOWN_ANSWER_MS,
  HTTP_SHUTDOWN_DRAIN_MS,
  HTTP_SHUTDOWN_FLUSH_MS,
  HTTP_SHUTDOWN_MAX_MS,
  HTTP_UNREAD_ANSWER_EVICT_MS,
  TLS_RELAY_BUFFER_BYTES,
  TLS_RELAY_CONNECT_TIMEOUT_MS,
  TLS_RELAY_FLUSH_MS,
} from "./_http_connections.ts";

/** Default of http.max_connections: connections held at once (idle ones are evicted first). */
export const HTTP_MAX_CONNECTIONS_DEFAULT = 128;
/** Default of http.request_header_timeout_ms: accept (HTTPS: and handshake) to first request. */
export const HTTP_REQUEST_HEADER_TIMEOUT_MS_DEFAULT = 10_000;
/** Default of http.keep_alive_timeout_ms: an idle kept-alive connection is closed after this. */
export const HTTP_KEEP_ALIVE_TIMEOUT_MS_DEFAULT = 30_000;
/** Open files kept free for everything but HTTP connections (providers' pipes, journal, ...). */
export const HTTP_RESERVED_FDS_BASE = 64;
/** Extra open files kept free per configured provider (stdin, stdout, stderr pipes, margin). */
export const HTTP_RESERVED_FDS_PER_PROVIDER = 4;
/** A certificate expiring within this many days is warned about at start-up. */
export const TLS_CERT_EXPIRY_WARNING_DAYS = 14;
/**
 * How often the served certificate's dates are checked again while the server runs (a runtime
 * runs for months): within TLS_CERT_EXPIRY_WARNING_DAYS each check warns, once expired each says
 * so at ERROR.
 */
export const TLS_CERT_RECHECK_MS = 6 * 3_600_000;
/** A TLS certificate or key file larger than this is refused before it is read. */
export const TLS_FILE_MAX_BYTES = 1024 * 1024;

export type { ServeHandler } from "./_http_connections.ts";

export interface ServeOptions {
  /** http.bind */
  readonly hostname: string;
  /** http.port; 0 picks a free port (tests). */
  readonly port: number;
  /** HTTPS when both are set (absolute paths). */
  readonly tlsCertPath: string | null;
  readonly tlsKeyPath: string | null;
  /**
   * The PEM text of those two files, already read (the kernel reads them before any provider is
   * spawned, within runtime.startup_timeout_ms); absent: read here from the paths (unbounded).
   */
  readonly tlsFiles?: { readonly cert: string; readonly key: string };
  /**
   * checkServe has judged the certificate's dates (and logged its warnings) for this start:
   * serveHttp does not again. The pair and the port are checked again (they are what it serves).
   */
  readonly certificateChecked?: boolean;
  /** http.auth_enabled and http.allow_insecure_bind, for the bind-time safety gate. */
  readonly authEnabled: boolean;
  readonly allowInsecureBind: boolean;
  readonly handler: ServeHandler;
  readonly log: Logger;
  /** Runs first on shutdown: ends event streams, which would otherwise keep shutdown waiting. */
  readonly onShutdown?: () => void;
  /** http.max_connections (default HTTP_MAX_CONNECTIONS_DEFAULT). */
  readonly maxConnections?: number;
  /** http.request_header_timeout_ms (default HTTP_REQUEST_HEADER_TIMEOUT_MS_DEFAULT). */
  readonly requestHeaderTimeoutMs?: number;
  /** http.keep_alive_timeout_ms (default HTTP_KEEP_ALIVE_TIMEOUT_MS_DEFAULT). */
  readonly keepAliveTimeoutMs?: number;
  /** http.tls_allow_expired_cert: serve an expired or not-yet-valid certificate (with a warning). */
  readonly tlsAllowExpiredCert?: boolean;
  /** Open files to leave to the rest of the runtime (default httpReservedFds(0)). */
  readonly reservedFds?: number;
  /** The open-file limit to size against; default: this process's soft RLIMIT_NOFILE. */
  readonly openFileLimit?: number | null;
  /** Wall clock for the certificate dates (tests). */
  readonly now?: () => number;
  /** Period of the served certificate's re-check (default TLS_CERT_RECHECK_MS; tests). */
  readonly certificateRecheckMs?: number;
  /**
   * The time and timers of the connection layer's bounds (timeouts, eviction, the shutdown
   * drain); default systemClock. Tests pass a manual clock to reach a bound without waiting.
   */
  readonly clock?: Clock;
  /**
   * The headers a request's own answer would have carried (the HTTP layer's CORS headers), for
   * an answer made in its place: the 504 "outcome unknown" at shutdown (HTTP_SHUTDOWN_ANSWER_MS)
   * and the 500 when the handler fails. Without them a browser page cannot read it. The host
   * knows nothing of CORS: the composition root fills this from the HTTP layer
   * (HttpApi.standInHeaders).
   */
  readonly standInHeaders?: (req: Request) => Headers;
}

/** A listening server. */
export interface HttpServerHandle {
  readonly hostname: string;
  readonly port: number;
  readonly tls: boolean;
  /** The connection bound in force (http.max_connections, lowered to fit the open-file limit). */
  readonly maxConnections: number;
  /** The open-file limit the bound was fitted to; null when unknown (no fitting). */
  readonly openFileLimit: number | null;
  /** Connection counters since start. */
  connectionStats(): ConnectionStats;
  /** Stops accepting, ends streams, waits for in-flight requests. Idempotent. */
  shutdown(): Promise<void>;
}

/** Open files serveHttp leaves to the rest of a runtime with `providers` providers. */
export function httpReservedFds(providers: number): number {
  return HTTP_RESERVED_FDS_BASE + HTTP_RESERVED_FDS_PER_PROVIDER * providers;
}

/**
 * This process's soft open-file limit, or null when unknown: Linux /proc/self/limits, which Deno
 * refuses a process without --allow-all (the compiled binary), else what `ulimit -n` says in a
 * /bin/sh child (it inherits the limit).
 */
export function openFileLimit(): number | null {
  let text: string;
  try {
    const m = /^Max open files\s+(\d+|unlimited)/m.exec(Deno.readTextFileSync("/proc/self/limits"));
    if (m === null || m[1] === "unlimited") return null;
    return Number(m[1]);
  } catch {
    try {
      const out = new Deno.Command("/bin/sh", {
        args: ["-c", "ulimit -n"],
        stdin: "null",
        stdout: "piped",
        stderr: "null",
      }).outputSync();
      text = new TextDecoder().decode(out.stdout).trim();
    } catch {
      return null; // no shell either (not Linux)
    }
  }
  return /^\d+$/.test(text) ? Number(text) : null; // "unlimited": nothing to fit
}

/**
 * The connection bound that fits the open-file limit: each plain connection holds one file
 * descriptor, each HTTPS connection three (client, relay, TLS side).
 */
export function fittedMaxConnections(
  configured: number,
  limit: number | null,
  reserved: number,
  tls: boolean,
): number {
  if (limit === null) return configured;
  const fit = Math.floor((limit - reserved) / (tls ? 3 : 1));
  return Math.max(1, Math.min(configured, fit));
}

/** What the start-up check found about the server certificate's dates. */
export interface CertificateCheck {
  readonly validFrom: Date;
  readonly validTo: Date;
  /** "expired" / "not-yet-valid" refuse to start unless allowed; "expires-soon" warns. */
  readonly problem: "expired" | "not-yet-valid" | "expires-soon" | null;
  /** Whole days left until validTo (negative once expired). */
  readonly daysLeft: number;
}

/** Reads the validity dates of the first certificate in `pem` (the server's own). */
export async function checkCertificate(pem: string, nowMs: number): Promise<CertificateCheck> {
  // node:crypto parses X.509 in Deno without a dependency; imported only when TLS is on.
  const { X509Certificate } = await import("node:crypto");
  const cert = new X509Certificate(pem);
  const validFrom = new Date(cert.validFrom);
  const validTo = new Date(cert.validTo);
  if (Number.isNaN(validFrom.getTime()) || Number.isNaN(validTo.getTime())) {
    throw new Error(`unreadable validity dates '${cert.validFrom}' .. '${cert.validTo}'`);
  }
  const daysLeft = Math.floor((validTo.getTime() - nowMs) / 86_400_000);
  const problem = nowMs < validFrom.getTime()
    ? "not-yet-valid"
    : nowMs > validTo.getTime()
    ? "expired"
    : validTo.getTime() - nowMs < TLS_CERT_EXPIRY_WARNING_DAYS * 86_400_000
    ? "expires-soon"
    : null;
  return { validFrom, validTo, problem, daysLeft };
}

/**
 * What serveHttp would refuse, found before anything else runs (the kernel asks before any
 * provider is spawned, so a start refused here has driven no hardware): the bind gate, the
 * certificate's dates (its warnings logged here, once: serveHttp is then told
 * `certificateChecked`), the key belonging to the certificate (the pair handed to TLS on a loopback
 * listener closed at once) and the address and port (bound and released at once: a probe; a
 * process that takes the port in between still fails serveHttp). Throws what serveHttp would,
 * with the same messages. Port 0 is not probed (any free port is bound then).
 */
export async function checkServe(opts: ServeOptions): Promise<void> {
  checkBindGate(opts);
  const files = await tlsFilesOf(opts);
  if (files !== null) {
    await checkServerCertificate(files.cert, opts);
    listenLoopbackTls(files).close();
  }
  if (opts.port !== 0) listenOn(opts).close();
}

/** The non-loopback-without-auth safety gate: throws FAILED_PRECONDITION when it refuses. */
function checkBindGate(opts: ServeOptions): void {
  if (!isLoopbackHost(opts.hostname) && !opts.authEnabled && !opts.allowInsecureBind) {
    throw new RuntimeError(
      "FAILED_PRECONDITION",
      `http.bind: '${opts.hostname}' is not a loopback address and http.auth_enabled is false; ` +
        "refusing to serve (set http.auth_enabled: true, or http.allow_insecure_bind: true)",
    );
  }
}

/** The certificate and key to serve (handed over, else read from their paths); null: plain HTTP. */
async function tlsFilesOf(opts: ServeOptions): Promise<{ cert: string; key: string } | null> {
  if (opts.tlsCertPath === null || opts.tlsKeyPath === null) return null;
  return opts.tlsFiles ?? {
    cert: await readTlsFile(opts.tlsCertPath, "http.tls_cert_path"),
    key: await readTlsFile(opts.tlsKeyPath, "http.tls_key_path"),
  };
}

/** The listener on the configured address and port; UNAVAILABLE naming both when it cannot. */
function listenOn(opts: Pick<ServeOptions, "hostname" | "port">): Deno.Listener {
  try {
    return Deno.listen({ hostname: opts.hostname, port: opts.port });
  } catch (err) {
    throw new RuntimeError(
      "UNAVAILABLE",
      `http: cannot listen on ${opts.hostname}:${opts.port}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}

/**
 * Binds and serves; throws RuntimeError when the gate refuses, a TLS file is unreadable or the
 * port is taken.
 */
export async function serveHttp(opts: ServeOptions): Promise<HttpServerHandle> {
  checkBindGate(opts);
  const serveOnConnection = internalServeOnConnection();
  if (serveOnConnection === null) {
    // Never silently fall back to Deno.serve: that would drop every connection bound.
    throw new RuntimeError(
      "INTERNAL",
      `http: this Deno (${Deno.version.deno}) has no serveHttpOnConnection; the connection ` +
        "layer (src/host/_http_connections.ts) needs the Deno the runtime was built for (2.9)",
    );
  }
  const files = await tlsFilesOf(opts);
  const tls = files !== null;
  if (files !== null && opts.certificateChecked !== true) {
    await checkServerCertificate(files.cert, opts);
  }
  const configured = opts.maxConnections ?? HTTP_MAX_CONNECTIONS_DEFAULT;
  const limit = opts.openFileLimit === undefined ? openFileLimit() : opts.openFileLimit;
  const reserved = opts.reservedFds ?? httpReservedFds(0);
  const maxConnections = fittedMaxConnections(configured, limit, reserved, tls);
  if (maxConnections < configured) {
    opts.log.warn(
      `http.max_connections ${configured} does not fit the open-file limit ${limit} ` +
        `(${reserved} kept for the rest of the runtime${tls ? ", 3 per HTTPS connection" : ""}); ` +
        `serving at most ${maxConnections} connections (raise LimitNOFILE / ulimit -n)`,
    );
  }

  const listener = listenOn(opts);
  let tlsListener: Deno.TlsListener | null = null;
  if (files !== null) {
    try {
      tlsListener = listenLoopbackTls(files);
    } catch (err) {
      listener.close();
      throw err;
    }
  }
  const log = opts.log;
  const layer = new ConnectionLayer({
    listener,
    tlsListener,
    maxConnections,
    requestHeaderTimeoutMs: opts.requestHeaderTimeoutMs ?? HTTP_REQUEST_HEADER_TIMEOUT_MS_DEFAULT,
    keepAliveTimeoutMs: opts.keepAliveTimeoutMs ?? HTTP_KEEP_ALIVE_TIMEOUT_MS_DEFAULT,
    handler: opts.handler,
    onError: (err) => {
      log.error(`request failed: ${errorMessage(err)}`);
      return new Response(
        JSON.stringify({ status: { code: "INTERNAL", message: "internal error" } }),
        { status: 500, headers: { "content-type": "application/json" } },
      );
    },
    log,
    serveOnConnection,
    clock: opts.clock ?? systemClock,
    standInHeaders: opts.standInHeaders ?? null,
  });
  const addr = listener.addr as Deno.NetAddr;
  log.debug(
    `listening on ${tls ? "https" : "http"}://${fmtHost(addr.hostname)}:${addr.port} ` +
      `(at most ${maxConnections} connections)`,
  );
  // The certificate is served for as long as the process runs: its dates are looked at again.
  let recheck: ReturnType<typeof setInterval> | null = null;
  if (files !== null) {
    const timer = setInterval(
      () => void recheckServedCertificate(files.cert, opts),
      opts.certificateRecheckMs ?? TLS_CERT_RECHECK_MS,
    );
    Deno.unrefTimer(timer);
    recheck = timer;
  }
  let stopping: Promise<void> | null = null;
  return {
    hostname: addr.hostname,
    port: addr.port,
    tls,
    maxConnections,
    openFileLimit: limit,
    connectionStats: () => layer.stats(),
    shutdown() {
      stopping ??= (async () => {
        if (recheck !== null) clearInterval(recheck);
        opts.onShutdown?.();
        await layer.shutdown();
        log.info("http server stopped");
      })();
      return stopping;
    },
  };
}

/** Refuses an expired or not-yet-valid certificate (unless allowed), warns when it expires soon. */
async function checkServerCertificate(
  pem: string,
  opts: Pick<ServeOptions, "log" | "now" | "tlsCertPath" | "tlsAllowExpiredCert">,
): Promise<void> {
  let check: CertificateCheck;
  try {
    check = await checkCertificate(pem, (opts.now ?? Date.now)());
  } catch (err) {
    throw new RuntimeError(
      "FAILED_PRECONDITION",
      `http.tls_cert_path: '${opts.tlsCertPath}' is not a readable PEM certificate: ` +
        (err as Error).message,
      { cause: err },
    );
  }
  const dates = `valid from ${check.validFrom.toISOString()} to ${check.validTo.toISOString()}`;
  const where = `http.tls_cert_path: the certificate '${opts.tlsCertPath}'`;
  switch (check.problem) {
    case null:
      return;
    case "expires-soon":
      opts.log.warn(
        `${where} expires in ${
          check.daysLeft < 1 ? "less than a day" : `${check.daysLeft} day(s)`
        } (${dates}); renew it before then`,
      );
      return;
    case "expired":
    case "not-yet-valid": {
      const what = check.problem === "expired" ? "has expired" : "is not valid yet";
      if (opts.tlsAllowExpiredCert) {
        opts.log.warn(
          `${where} ${what} (${dates}); serving it because ` +
            "http.tls_allow_expired_cert is true",
        );
        return;
      }
      throw new RuntimeError(
        "FAILED_PRECONDITION",
        `${where} ${what} (${dates}); clients will refuse it. Renew it, fix the clock, or set ` +
          "http.tls_allow_expired_cert: true",
      );
    }
  }
}

/**
 * The served certificate's dates checked again (TLS_CERT_RECHECK_MS): a WARN while it expires
 * within TLS_CERT_EXPIRY_WARNING_DAYS, an ERROR once it has expired (or, after a clock step, is
 * not valid yet). Never rejects.
 */
async function recheckServedCertificate(pem: string, opts: ServeOptions): Promise<void> {
  let check: CertificateCheck;
  try {
    check = await checkCertificate(pem, (opts.now ?? Date.now)());
  } catch (err) {
    opts.log.warn(
      `http.tls_cert_path: cannot check the served certificate again: ${errorMessage(err)}`,
    );
    return;
  }
  const dates = `valid from ${check.validFrom.toISOString()} to ${check.validTo.toISOString()}`;
  const where = `http.tls_cert_path: the certificate '${opts.tlsCertPath}'`;
  if (check.problem === "expires-soon") {
    opts.log.warn(
      `${where} expires in ${
        check.daysLeft < 1 ? "less than a day" : `${check.daysLeft} day(s)`
      } (${dates}); renew it and restart the runtime before then`,
    );
  } else if (check.problem !== null) {
    const what = check.problem === "expired" ? "has expired" : "is not valid yet";
    opts.log.error(
      `${where} ${what} (${dates}); clients refuse it: renew it and restart the runtime`,
    );
  }
}

/**
 * The loopback TLS listener the relay feeds (127.0.0.1, an ephemeral port): where the certificate
 * and key are parsed and checked to belong together. Throws FAILED_PRECONDITION naming both keys.
 */
function listenLoopbackTls(files: { cert: string; key: string }): Deno.TlsListener {
  try {
    return Deno.listenTls({
      hostname: "127.0.0.1",
      port: 0,
      cert: files.cert,
      key: files.key,
      alpnProtocols: ["h2", "http/1.1"],
    });
  } catch (err) {
    throw new RuntimeError(
      "FAILED_PRECONDITION",
      `http.tls_cert_path / http.tls_key_path: cannot use the certificate and key: ` +
        (err as Error).message,
      { cause: err },
    );
  }
}

/** What checkTlsFiles found: the start's refusal, if any, and its warnings. */
export interface TlsFilesCheck {
  /** Why a start would refuse these files (the start's own message); null when it would not. */
  readonly refusal: string | null;
  /** What a start would warn of (a certificate that expires soon, one served although expired). */
  readonly warnings: readonly string[];
}

/**
 * The start's checks of its TLS files, without serving (`--check-config`; a reload hands over
 * the files it read, `tlsFiles`): both files read as the start reads them, the certificate's
 * dates as the start judges them, and the pair handed to
 * TLS as the start hands it (a listener on 127.0.0.1, port 0, closed at once: the same parser and
 * the same check that the key belongs to the certificate). So a file the check passes is not
 * refused by the start for what is in it.
 */
export async function checkTlsFiles(
  opts: Pick<ServeOptions, "now" | "tlsAllowExpiredCert" | "tlsFiles"> & {
    readonly tlsCertPath: string;
    readonly tlsKeyPath: string;
  },
): Promise<TlsFilesCheck> {
  const warnings: string[] = [];
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: (m: string) => void warnings.push(m),
    error: (m: string) => void warnings.push(m),
    child: () => log,
  };
  try {
    // Handed over (a reload's bounded reads), else read as the start reads them.
    const files = opts.tlsFiles ?? {
      cert: await readTlsFile(opts.tlsCertPath, "http.tls_cert_path"),
      key: await readTlsFile(opts.tlsKeyPath, "http.tls_key_path"),
    };
    await checkServerCertificate(files.cert, { ...opts, log });
    listenLoopbackTls(files).close();
    return { refusal: null, warnings };
  } catch (err) {
    return { refusal: errorMessage(err), warnings };
  }
}

async function readTlsFile(path: string, key: string): Promise<string> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(path);
  } catch (err) {
    throw new RuntimeError(
      "FAILED_PRECONDITION",
      `${key}: cannot read '${path}': ${(err as Error).message}`,
      { cause: err },
    );
  }
  if (!info.isFile) {
    // A directory or a FIFO: say so (reading a FIFO would block start-up for ever).
    throw new RuntimeError(
      "FAILED_PRECONDITION",
      `${key}: '${path}' is not a regular file (${fileKind(info)})`,
    );
  }
  if (info.size > TLS_FILE_MAX_BYTES) {
    throw new RuntimeError(
      "FAILED_PRECONDITION",
      `${key}: '${path}' is ${info.size} bytes, more than ${TLS_FILE_MAX_BYTES} for a PEM file`,
    );
  }
  try {
    return await Deno.readTextFile(path);
  } catch (err) {
    throw new RuntimeError(
      "FAILED_PRECONDITION",
      `${key}: cannot read '${path}': ${(err as Error).message}`,
      { cause: err },
    );
  }
}

function fmtHost(h: string): string {
  return h.includes(":") ? `[${h}]` : h;
}
