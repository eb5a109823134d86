/** HTTP access to the runtime under test. Every non-2xx answer is a BenchFailure. */

/** A workload saw an error from the runtime: the run must end non-zero. */
export class BenchFailure extends Error {
  override readonly name = "BenchFailure";
}

/** Per-request deadline: the runtime's own server timeout is 5 s, so 15 s means it is stuck. */
export const REQUEST_TIMEOUT_MS = 15_000;

/** JSON API client bound to one runtime's base URL. */
export class Api {
  readonly baseUrl: string;
  /** The deadline of `timedNewConnection` (fetch()'s requests have REQUEST_TIMEOUT_MS). */
  readonly #timeoutMs: number;

  constructor(baseUrl: string, timeoutMs = REQUEST_TIMEOUT_MS) {
    this.baseUrl = baseUrl;
    this.#timeoutMs = timeoutMs;
  }

  /** GET and parse JSON; throws BenchFailure on a non-2xx status or a transport error. */
  // deno-lint-ignore no-explicit-any
  get(path: string): Promise<any> {
    return this.request("GET", path);
  }

  /** POST a JSON body and parse the JSON answer; throws BenchFailure like get(). */
  // deno-lint-ignore no-explicit-any
  post(path: string, body?: unknown): Promise<any> {
    return this.request("POST", path, body);
  }

  // deno-lint-ignore no-explicit-any
  async request(method: string, path: string, body?: unknown): Promise<any> {
    let res: Response;
    try {
      res = await fetch(this.baseUrl + path, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body === undefined ? null : JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new BenchFailure(`${method} ${path}: ${err instanceof Error ? err.message : err}`);
    }
    const text = await res.text();
    if (res.status < 200 || res.status > 299) {
      throw new BenchFailure(`${method} ${path} -> HTTP ${res.status}: ${text.slice(0, 300)}`);
    }
    try {
      return JSON.parse(text);
    } catch {
      throw new BenchFailure(`${method} ${path} -> HTTP ${res.status} with a non-JSON body`);
    }
  }

  /**
   * One timed request for the load loops: returns the latency in ms and drains the body; throws
   * BenchFailure on a non-2xx status. performance.now() brackets fetch start to body end.
   */
  async timed(method: string, path: string, body?: string): Promise<number> {
    const t0 = performance.now();
    let res: Response;
    try {
      res = await fetch(this.baseUrl + path, {
        method,
        headers: body === undefined ? {} : { "content-type": "application/json" },
        body: body ?? null,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      throw new BenchFailure(`${method} ${path}: ${err instanceof Error ? err.message : err}`);
    }
    const text = await res.text();
    const ms = performance.now() - t0;
    if (res.status < 200 || res.status > 299) {
      throw new BenchFailure(`${method} ${path} -> HTTP ${res.status}: ${text.slice(0, 300)}`);
    }
    return ms;
  }

  /**
   * One timed request on a connection of its own, closed after the answer (`Connection: close`),
   * as a client that does not keep connections alive (a shell script's curl, a PLC, anolis's own
   * clients). Raw HTTP/1.1 over a TCP socket, so the client's cost is a connect, one write and
   * reads to EOF (a fetch() client would add its connection-pool work to the shared cores).
   * Returns the latency in ms from connect to EOF; throws BenchFailure on a non-2xx status, and
   * when the answer has not ended `timeoutMs` (REQUEST_TIMEOUT_MS) after the connect began (the
   * connection is closed then: a runtime that accepts and never answers must not hang the bench).
   */
  async timedNewConnection(method: string, path: string, body = ""): Promise<number> {
    const url = new URL(this.baseUrl);
    const request = rawRequest(url.host, method, path, body, { close: true });
    let conn: Deno.TcpConn | null = null;
    let late = false;
    const connecting = new AbortController();
    const timer = setTimeout(() => {
      late = true;
      connecting.abort(); // a connect still pending fails
      try {
        conn?.close(); // the pending write or read fails
      } catch {
        // already closed
      }
    }, this.#timeoutMs);
    const t0 = performance.now();
    let answer = "";
    try {
      conn = await Deno.connect({
        hostname: url.hostname,
        port: Number(url.port),
        signal: connecting.signal,
      });
      if (late) throw new Error("connected after the deadline");
      await conn.write(request);
      const decoder = new TextDecoder();
      const buf = new Uint8Array(16_384);
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) break;
        answer += decoder.decode(buf.subarray(0, n), { stream: true });
      }
    } catch (err) {
      if (late) {
        throw new BenchFailure(
          `${method} ${path} (new connection): no answer within ${this.#timeoutMs} ms`,
        );
      }
      throw new BenchFailure(`${method} ${path}: ${err instanceof Error ? err.message : err}`);
    } finally {
      clearTimeout(timer);
      try {
        conn?.close();
      } catch {
        // closed by the deadline
      }
    }
    const ms = performance.now() - t0;
    const status = statusOf(answer);
    if (!(status >= 200 && status <= 299)) {
      throw new BenchFailure(`${method} ${path} (new connection) -> ${answer.slice(0, 300)}`);
    }
    return ms;
  }
}

/**
 * One keep-alive HTTP/1.1 connection of its own, raw like `timedNewConnection`: requests in turn
 * on the same TCP connection, each answer read to its `content-length`. The keep-alive rows time
 * the runtime this way, not through fetch(): on this machine fetch() added 0.3-1 ms of its own per
 * request (its connection pool, the abort timer), more than the runtime's whole answer to a GET,
 * on the cores the runtime shares. Connects on the first request. A request without its whole
 * answer after `timeoutMs` (REQUEST_TIMEOUT_MS) ends the connection: a BenchFailure.
 */
export class KeepAliveConnection {
  readonly #url: URL;
  readonly #timeoutMs: number;
  #conn: Deno.TcpConn | null = null;
  readonly #buf = new Uint8Array(16_384);
  readonly #decoder = new TextDecoder();

  constructor(baseUrl: string, timeoutMs = REQUEST_TIMEOUT_MS) {
    this.#url = new URL(baseUrl);
    this.#timeoutMs = timeoutMs;
  }

  /** Latency in ms from the request's write to its answer's last byte; non-2xx: BenchFailure. */
  async timed(method: string, path: string, body = ""): Promise<number> {
    const request = rawRequest(this.#url.host, method, path, body, { close: false });
    let answer: { status: number; text: string };
    let ms: number;
    let late = false;
    const timer = setTimeout(() => {
      late = true;
      this.close(); // the pending read or write fails
    }, this.#timeoutMs);
    try {
      const reused = this.#conn !== null;
      let t0 = performance.now();
      let got = await this.#exchange(request).catch((err) => {
        // A reset of the idle connection (not a broken answer): as closed.
        if (reused && !late && !(err instanceof BenchFailure)) return null;
        throw err;
      });
      if (got === null && reused && !late) {
        // The server closed the idle connection (its keep-alive timeout): once more, anew.
        this.close();
        t0 = performance.now();
        got = await this.#exchange(request);
      }
      if (got === null) throw new BenchFailure("connection closed before an answer");
      answer = got;
      ms = performance.now() - t0;
    } catch (err) {
      this.close();
      if (late) {
        throw new BenchFailure(`${method} ${path}: no answer within ${this.#timeoutMs} ms`);
      }
      if (err instanceof BenchFailure) throw err;
      throw new BenchFailure(`${method} ${path}: ${err instanceof Error ? err.message : err}`);
    } finally {
      clearTimeout(timer);
    }
    if (!(answer.status >= 200 && answer.status <= 299)) {
      throw new BenchFailure(`${method} ${path} (keep-alive) -> ${answer.text.slice(0, 300)}`);
    }
    return ms;
  }

  /** Writes the request on the connection (made when there is none) and reads its answer. */
  async #exchange(request: Uint8Array): Promise<{ status: number; text: string } | null> {
    this.#conn ??= await Deno.connect({
      hostname: this.#url.hostname,
      port: Number(this.#url.port),
    });
    await this.#conn.write(request);
    return await this.#read(this.#conn);
  }

  /**
   * One answer: its head, then the body to `content-length` (the runtime always sends it); null
   * when the connection closed before its first byte.
   */
  async #read(conn: Deno.TcpConn): Promise<{ status: number; text: string } | null> {
    let text = "";
    let end = -1;
    let length = -1;
    for (;;) {
      const n = await conn.read(this.#buf);
      if (n === null && text === "") return null;
      if (n === null) throw new BenchFailure(`connection closed after ${text.length} bytes`);
      text += this.#decoder.decode(this.#buf.subarray(0, n), { stream: true });
      if (end < 0) {
        end = text.indexOf("\r\n\r\n");
        if (end < 0) continue;
        const m = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end));
        if (m === null) {
          throw new BenchFailure(`an answer without content-length: ${text.slice(0, 300)}`);
        }
        length = Number(m[1]);
      }
      // The runtime's answers are ASCII JSON: characters are bytes.
      if (text.length >= end + 4 + length) break;
    }
    return { status: statusOf(text), text };
  }

  close(): void {
    try {
      this.#conn?.close();
    } catch {
      // already closed
    }
    this.#conn = null;
  }
}

const ENCODER = new TextEncoder();

/** An HTTP/1.1 request as bytes (a JSON body when `body` is not empty), for the raw clients. */
function rawRequest(
  host: string,
  method: string,
  path: string,
  body: string,
  o: { close: boolean },
): Uint8Array {
  const payload = ENCODER.encode(body);
  const head = `${method} ${path} HTTP/1.1\r\nhost: ${host}\r\n` +
    (o.close ? "connection: close\r\n" : "") +
    (payload.length > 0 ? "content-type: application/json\r\n" : "") +
    `content-length: ${payload.length}\r\n\r\n`;
  return new Uint8Array([...ENCODER.encode(head), ...payload]);
}

/** The status code of a raw answer (NaN when it is not an HTTP/1.1 status line). */
function statusOf(answer: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
}
