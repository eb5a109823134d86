/**
 * The HTTP(S) server: Deno.serve around the API's request handler. Reads TLS files, passes the
 * client address to the handler, re-checks the non-loopback-without-auth safety gate at bind,
 * and shuts down gracefully (event streams first, then in-flight requests).
 */
import { type Logger, RuntimeError } from "../common/mod.ts";

/** The request handler the server drives (HttpApi.handle). */
export type ServeHandler = (req: Request, info: { remoteAddr: string }) => Promise<Response>;

export interface ServeOptions {
  /** http.bind */
  readonly hostname: string;
  /** http.port; 0 picks a free port (tests). */
  readonly port: number;
  /** HTTPS when both are set (absolute paths). */
  readonly tlsCertPath: string | null;
  readonly tlsKeyPath: string | null;
  /** http.auth_enabled and http.allow_insecure_bind, for the bind-time safety gate. */
  readonly authEnabled: boolean;
  readonly allowInsecureBind: boolean;
  readonly handler: ServeHandler;
  readonly log: Logger;
  /** Runs first on shutdown: ends event streams, which would otherwise keep shutdown waiting. */
  readonly onShutdown?: () => void;
}

/** A listening server. */
export interface HttpServerHandle {
  readonly hostname: string;
  readonly port: number;
  readonly tls: boolean;
  /** Stops accepting, ends streams, waits for in-flight requests. Idempotent. */
  shutdown(): Promise<void>;
}

/** Whether a bind address only accepts local connections. */
export function isLoopbackBind(hostname: string): boolean {
  const h = hostname.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (h === "localhost" || h === "::1") return true;
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Binds and serves; throws RuntimeError when the gate refuses, a TLS file is unreadable or the port is taken. */
export async function serveHttp(opts: ServeOptions): Promise<HttpServerHandle> {
  if (!isLoopbackBind(opts.hostname) && !opts.authEnabled && !opts.allowInsecureBind) {
    throw new RuntimeError(
      "FAILED_PRECONDITION",
      `http.bind: '${opts.hostname}' is not a loopback address and http.auth_enabled is false; ` +
        "refusing to serve (set http.auth_enabled: true, or http.allow_insecure_bind: true)",
    );
  }
  const tls = opts.tlsCertPath !== null && opts.tlsKeyPath !== null;
  const files = tls
    ? {
      cert: await readTlsFile(opts.tlsCertPath!, "http.tls_cert_path"),
      key: await readTlsFile(opts.tlsKeyPath!, "http.tls_key_path"),
    }
    : {};
  let server: Deno.HttpServer<Deno.NetAddr>;
  try {
    server = Deno.serve({
      hostname: opts.hostname,
      port: opts.port,
      ...files,
      onListen: () => {},
      onError: (err) => {
        opts.log.error(`request failed: ${err instanceof Error ? err.message : String(err)}`);
        return new Response(
          JSON.stringify({ status: { code: "INTERNAL", message: "internal error" } }),
          { status: 500, headers: { "content-type": "application/json" } },
        );
      },
    }, (req, info) => opts.handler(req, { remoteAddr: info.remoteAddr.hostname }));
  } catch (err) {
    throw new RuntimeError(
      "UNAVAILABLE",
      `http: cannot listen on ${opts.hostname}:${opts.port}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  const addr = server.addr;
  opts.log.debug(`listening on ${tls ? "https" : "http"}://${fmtHost(addr.hostname)}:${addr.port}`);
  let stopping: Promise<void> | null = null;
  return {
    hostname: addr.hostname,
    port: addr.port,
    tls,
    shutdown() {
      stopping ??= (async () => {
        opts.onShutdown?.();
        await server.shutdown();
        await server.finished;
        opts.log.info("http server stopped");
      })();
      return stopping;
    },
  };
}

async function readTlsFile(path: string, key: string): Promise<string> {
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
