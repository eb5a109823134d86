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

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
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
   * Returns the latency in ms from connect to EOF; throws BenchFailure on a non-2xx status.
   */
  async timedNewConnection(method: string, path: string, body = ""): Promise<number> {
    const url = new URL(this.baseUrl);
    const payload = ENCODER.encode(body);
    const head = `${method} ${path} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\n` +
      (payload.length > 0 ? `content-type: application/json\r\n` : "") +
      `content-length: ${payload.length}\r\n\r\n`;
    const request = new Uint8Array([...ENCODER.encode(head), ...payload]);
    const t0 = performance.now();
    let answer = "";
    try {
      const conn = await Deno.connect({ hostname: url.hostname, port: Number(url.port) });
      try {
        await conn.write(request);
        const decoder = new TextDecoder();
        const buf = new Uint8Array(16_384);
        for (;;) {
          const n = await conn.read(buf);
          if (n === null) break;
          answer += decoder.decode(buf.subarray(0, n), { stream: true });
        }
      } finally {
        conn.close();
      }
    } catch (err) {
      throw new BenchFailure(`${method} ${path}: ${err instanceof Error ? err.message : err}`);
    }
    const ms = performance.now() - t0;
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
    if (!(status >= 200 && status <= 299)) {
      throw new BenchFailure(`${method} ${path} (new connection) -> ${answer.slice(0, 300)}`);
    }
    return ms;
  }
}

const ENCODER = new TextEncoder();
