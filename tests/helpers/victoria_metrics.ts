/**
 * Test helper: a real VictoriaMetrics (Debian package `victoria-metrics`) on a loopback port it
 * binds itself (port 0, read back from /proc: no free-port race) with a temporary data dir. It
 * accepts InfluxDB line protocol on /api/v2/write and serves the stored points through
 * /api/v1/export.
 *
 * VictoriaMetrics stores line protocol `m,tags f=v` as metric `m_f` with the tags as labels. It
 * keeps only numbers: bools become 1/0, and string fields become a series whose value is 0 (the
 * text is lost). Tests therefore check series, labels and numeric values here, and check the
 * exact text (string fields included) with {@link LineRecorder}.
 */

import { waitForListeningPort } from "./ports.ts";
import { waitFor } from "./kernel.ts";

/** Path of the Debian binary. */
export const VICTORIA_METRICS_BIN = "/usr/bin/victoria-metrics";

let warned = false;

/** True when the binary is missing; prints a loud message once so a skip is never silent. */
export function victoriaMetricsMissing(): boolean {
  let missing = false;
  try {
    missing = !Deno.statSync(VICTORIA_METRICS_BIN).isFile;
  } catch {
    missing = true;
  }
  if (missing && !warned) {
    warned = true;
    console.error(
      `\n!!!!!!!! ${VICTORIA_METRICS_BIN} not found: telemetry database tests are SKIPPED. ` +
        `Install it with: apt-get install -y victoria-metrics !!!!!!!!\n`,
    );
  }
  return missing;
}

/** One exported series: labels (incl. `__name__`) and its samples. */
export interface ExportedSeries {
  metric: Record<string, string>;
  values: number[];
  timestamps: number[];
}

/** A running (or stopped, restartable) VictoriaMetrics instance. */
export class VictoriaMetrics {
  readonly dataDir: string;
  /** The port it bound on its first start (0 before), kept for {@link resume}. */
  #port = 0;
  #child: Deno.ChildProcess | null = null;
  readonly #extraArgs: readonly string[];

  private constructor(dataDir: string, extraArgs: readonly string[]) {
    this.dataDir = dataDir;
    this.#extraArgs = extraArgs;
  }

  /** The loopback port it serves on. */
  get port(): number {
    return this.#port;
  }

  /** Base URL, e.g. `http://127.0.0.1:PORT`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /**
   * Starts an instance on a port of its own with a fresh temporary data dir; waits for /health.
   * `extraArgs` are added to its command line (e.g. `-dedup.minScrapeInterval=1ms`: one sample
   * per series and millisecond, as InfluxDB keeps one point per series and timestamp).
   */
  static async start(o: { extraArgs?: readonly string[] } = {}): Promise<VictoriaMetrics> {
    const dir = await Deno.makeTempDir({ prefix: "vm_test_" });
    const vm = new VictoriaMetrics(dir, o.extraArgs ?? []);
    try {
      await vm.resume();
    } catch (err) {
      await Deno.remove(dir, { recursive: true }).catch(() => {});
      throw err;
    }
    return vm;
  }

  /**
   * (Re)starts the process and waits until /health answers OK. The first start binds port 0
   * and reads the port back; a restart binds that same port again (the runtime under test keeps
   * its URL), which only a stranger grabbing it during the pause could spoil.
   */
  async resume(): Promise<void> {
    if (this.#child) return;
    const child = new Deno.Command(VICTORIA_METRICS_BIN, {
      args: [
        `-httpListenAddr=127.0.0.1:${this.#port}`,
        `-storageDataPath=${this.dataDir}`,
        "-retentionPeriod=100y",
        "-loggerLevel=ERROR",
        ...this.#extraArgs,
      ],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    this.#child = child;
    try {
      this.#port = await waitForListeningPort(
        { pid: child.pid, ended: child.status },
        { port: this.#port === 0 ? undefined : this.#port, timeoutMs: 15000 },
      );
    } catch (err) {
      await this.pause();
      throw err;
    }
    try {
      await waitFor(`victoria-metrics to become healthy on port ${this.port}`, async () => {
        try {
          const res = await fetch(`${this.url}/health`);
          const text = await res.text();
          return res.ok && text.trim() === "OK";
        } catch {
          return false; // not listening yet
        }
      }, 15000);
    } catch (err) {
      await this.pause();
      throw err;
    }
  }

  /** Stops the process (SIGTERM) and waits for it to exit; data stays for {@link resume}. */
  async pause(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = null;
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    const timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {
        // already gone
      }
    }, 10000);
    await child.status;
    clearTimeout(timer);
  }

  /** Stops the process and removes the data dir. */
  async dispose(): Promise<void> {
    await this.pause();
    await Deno.remove(this.dataDir, { recursive: true }).catch(() => {});
  }

  /** Makes recently ingested samples searchable. */
  async forceFlush(): Promise<void> {
    const res = await fetch(`${this.url}/internal/force_flush`);
    await res.body?.cancel();
  }

  /** Exports every series matching a series selector, e.g. `{__name__=~"runtime_.*"}`. */
  async export(match: string): Promise<ExportedSeries[]> {
    await this.forceFlush();
    const q = new URLSearchParams({
      "match[]": match,
      start: "0",
      // samples newer than now - search.latencyOffset are hidden without an explicit end
      end: String(Date.now() + 86_400_000),
    });
    const res = await fetch(`${this.url}/api/v1/export?${q}`);
    const text = await res.text();
    if (!res.ok) throw new Error(`export failed: HTTP ${res.status}: ${text}`);
    return text.split("\n").filter((l) => l.trim() !== "").map((l) => JSON.parse(l));
  }

  /** Posts raw line protocol (for checking what the database does with it). */
  async write(lines: string): Promise<number> {
    const res = await fetch(`${this.url}/api/v2/write?org=o&bucket=b&precision=ms`, {
      method: "POST",
      body: lines,
    });
    await res.body?.cancel();
    return res.status;
  }
}

/**
 * A tiny HTTP recorder in front of a database: forwards every request unchanged and keeps the
 * request bodies, so tests can assert the exact line-protocol text. Without a database
 * (`targetUrl` null) it records and answers every write itself with 204, as InfluxDB does.
 */
export class LineRecorder {
  readonly bodies: string[] = [];
  readonly requests: { path: string; headers: Headers }[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;
  /** Forwards still on their way to the database (a body is recorded before it is forwarded). */
  readonly #inFlight = new Set<Promise<unknown>>();

  constructor(targetUrl: string | null) {
    this.#server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (req) => {
        const u = new URL(req.url);
        const body = await req.text();
        this.bodies.push(body);
        this.requests.push({ path: u.pathname + u.search, headers: req.headers });
        if (targetUrl === null) return new Response(null, { status: 204 });
        const forward = (async () => {
          const res = await fetch(`${targetUrl}${u.pathname}${u.search}`, {
            method: req.method,
            headers: req.headers,
            body: req.method === "GET" ? null : body,
          });
          return { res, payload: await res.arrayBuffer() };
        })();
        this.#inFlight.add(forward);
        const { res, payload } = await forward.finally(() => this.#inFlight.delete(forward));
        const nullBody = res.status === 204 || res.status === 304;
        // fetch has already decoded the body: do not pass on its (gzip) encoding and length.
        const headers = new Headers(res.headers);
        headers.delete("content-encoding");
        headers.delete("content-length");
        return new Response(nullBody ? null : payload, { status: res.status, headers });
      },
    );
  }

  /** Base URL of the recorder. */
  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  /** All recorded lines, in order. */
  get lines(): string[] {
    return this.bodies.flatMap((b) => b.split("\n").filter((l) => l !== ""));
  }

  /**
   * Waits until every body recorded so far has reached the database and been answered: a line
   * seen in `lines` may still be on its way there.
   */
  async settled(): Promise<void> {
    while (this.#inFlight.size > 0) await Promise.allSettled([...this.#inFlight]);
  }

  /** Stops the server and waits until it has finished. */
  async close(): Promise<void> {
    await this.#server.shutdown();
  }
}
