/**
 * The runtime under test as a child process: spawned exactly as a user would start it (command +
 * `--config FILE`), ready when /v0/runtime/status lists every provider AVAILABLE, stopped with
 * SIGTERM. The spawned pid is taken to be the runtime (true for `deno run` and compiled binaries;
 * a shell wrapper must `exec`).
 */
import { Api, BenchFailure } from "./api.ts";
import { descendants, readProcStat } from "./proc.ts";

/** Keep this much of the runtime's stdout+stderr to show when something fails. */
const OUTPUT_TAIL_CHARS = 16_384;
/** How often readiness is polled. Start-up figures are quantized to this. */
const READY_POLL_MS = 20;
/** SIGTERM grace before SIGKILL. */
const STOP_GRACE_MS = 15_000;

/** How to start one runtime. */
export interface RuntimeStartOptions {
  /** Runtime command argv; `--config <configPath>` is appended. */
  readonly cmd: readonly string[];
  readonly configPath: string;
  readonly port: number;
  readonly expectedProviders: number;
  /** Give up waiting for readiness after this long. */
  readonly readyTimeoutMs: number;
}

/** A started runtime. */
export class RuntimeProcess {
  readonly pid: number;
  readonly api: Api;
  /** Spawn to "API answers and every provider AVAILABLE", ms. */
  startupMs = NaN;
  readonly #child: Deno.ChildProcess;
  readonly #drains: Promise<void>[];
  #tail = "";
  #exit: Deno.CommandStatus | null = null;
  readonly #exited: Promise<Deno.CommandStatus>;

  private constructor(child: Deno.ChildProcess, port: number) {
    this.#child = child;
    this.pid = child.pid;
    this.api = new Api(`http://127.0.0.1:${port}`);
    this.#drains = [this.#drain(child.stdout), this.#drain(child.stderr)];
    this.#exited = child.status.then((s) => (this.#exit = s));
  }

  /** Spawns the runtime and waits until it is ready; on failure it is stopped and the error shows its output. */
  static async start(o: RuntimeStartOptions): Promise<RuntimeProcess> {
    const [command, ...args] = o.cmd;
    const t0 = performance.now();
    let child: Deno.ChildProcess;
    try {
      child = new Deno.Command(command!, {
        args: [...args, "--config", o.configPath],
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
    } catch (err) {
      throw new BenchFailure(`cannot start runtime '${o.cmd.join(" ")}': ${err}`);
    }
    const rt = new RuntimeProcess(child, o.port);
    try {
      await rt.#waitReady(o, t0);
    } catch (err) {
      await rt.stop().catch(() => {});
      const msg = err instanceof Error ? err.message : String(err);
      throw new BenchFailure(`${msg}\n--- runtime output (tail) ---\n${rt.outputTail()}`);
    }
    return rt;
  }

  async #waitReady(o: RuntimeStartOptions, t0: number): Promise<void> {
    const deadline = t0 + o.readyTimeoutMs;
    let last = "no answer yet";
    while (performance.now() < deadline) {
      if (this.#exit) {
        throw new Error(`runtime exited during start-up with code ${this.#exit.code}`);
      }
      try {
        const res = await fetch(`${this.api.baseUrl}/v0/runtime/status`, {
          signal: AbortSignal.timeout(2000),
        });
        const text = await res.text();
        if (res.status === 200) {
          const body = JSON.parse(text);
          const providers: { state?: string }[] = body.providers ?? [];
          const up = providers.filter((p) => p.state === "AVAILABLE").length;
          if (providers.length === o.expectedProviders && up === o.expectedProviders) {
            this.startupMs = performance.now() - t0;
            return;
          }
          last = `${up}/${o.expectedProviders} providers AVAILABLE (${providers.length} listed)`;
        } else {
          last = `HTTP ${res.status}: ${text.slice(0, 200)}`;
        }
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
      }
      await new Promise((r) => setTimeout(r, READY_POLL_MS));
    }
    throw new Error(`runtime not ready after ${o.readyTimeoutMs} ms: ${last}`);
  }

  async #drain(stream: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of stream) {
        this.#tail += decoder.decode(chunk, { stream: true });
        if (this.#tail.length > OUTPUT_TAIL_CHARS * 2) {
          this.#tail = this.#tail.slice(-OUTPUT_TAIL_CHARS);
        }
      }
    } catch {
      // stream torn down with the process
    }
  }

  /** The last lines the runtime printed (stdout and stderr interleaved). */
  outputTail(): string {
    return this.#tail.slice(-OUTPUT_TAIL_CHARS);
  }

  /** Pids of the runtime's descendants right now (its providers). */
  providerPids(): number[] {
    return descendants(this.pid);
  }

  /**
   * SIGTERM (or `signal`: SIGKILL is a crash), wait for exit (SIGKILL after the grace period),
   * then make sure no provider outlived it. Returns the exit status and the pids that had to be
   * killed (both end up in the results).
   */
  async stop(signal: "SIGTERM" | "SIGKILL" = "SIGTERM"): Promise<
    { code: number; signal: string | null; orphansKilled: number[]; forced: boolean }
  > {
    const kids = this.#exit ? [] : descendants(this.pid).flatMap((pid) => {
      const st = readProcStat(pid);
      return st ? [{ pid, startTicks: st.startTicks }] : [];
    });
    let forced = false;
    if (!this.#exit) {
      try {
        this.#child.kill(signal);
      } catch {
        // already gone
      }
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timedOut = await Promise.race([
        this.#exited.then(() => false),
        new Promise<boolean>((r) => (timer = setTimeout(() => r(true), STOP_GRACE_MS))),
      ]);
      clearTimeout(timer);
      if (timedOut) {
        forced = true;
        try {
          this.#child.kill("SIGKILL");
        } catch {
          // raced with exit
        }
      }
    }
    const status = await this.#exited;
    // Providers are started by the runtime; one still alive after it exited is a leak we report.
    const orphansKilled: number[] = [];
    await new Promise((r) => setTimeout(r, 200));
    for (const { pid, startTicks } of kids) {
      const st = readProcStat(pid);
      if (st && st.startTicks === startTicks && st.state !== "Z") {
        try {
          Deno.kill(pid, "SIGKILL");
          orphansKilled.push(pid);
        } catch {
          // exited meanwhile
        }
      }
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(this.#drains),
      new Promise((r) => (timer = setTimeout(r, 5000))),
    ]);
    clearTimeout(timer);
    return { code: status.code, signal: status.signal, orphansKilled, forced };
  }
}
