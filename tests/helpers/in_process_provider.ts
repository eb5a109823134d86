/**
 * Provider processes that run in the test's own isolate: a SpawnFn (src/common/host.ts) whose
 * "process" serves ADPP with the provider SDK's serveProvider over in-memory pipes. The runtime
 * side is the production one (ProviderSession, AdppClient, framing); only the process is gone, so
 * a unit test that needs a provider pays no process start and no OS pipe, and can move its clock.
 *
 * A program is found by the spawned command or by a module path among its arguments, so a
 * provider entry written for a real child (`deno run ... tests/safety/_plant_provider.ts ...`)
 * runs in-process unchanged when the program for that module is given:
 *
 *   const fakes = inProcessSpawn({ [PLANT_MAIN]: plantProgram });
 *   new ProviderRegistry([plantProvider("plant")], { spawn: fakes.spawn, ... });
 *
 * What the process promises (ProviderProcess) holds as for spawnProcess, and
 * tests/contract/provider_contract_test.ts runs the same cases against both:
 * - stdin EOF ends serveProvider: the safe state is applied and the process exits with its code
 *   (0); a request in progress is finished first, as the SDK's loop does (unless the program
 *   says `exitOnStdinEof`);
 * - SIGTERM is runStdioProvider's: safe state, then exit 0 (unless `ignoreSigterm`);
 * - SIGKILL ends it at once: `exited` resolves `{ code: 137, signal: "SIGKILL" }`;
 * - `host.exit(code)` is Deno.exit in the provider: it ends at once with that code;
 * - when it ends, stdout delivers what was written and closes, stderr closes, and writes to stdin
 *   fail (EPIPE). A dead process does nothing more: its handler is never called again, a pending
 *   `host.sleep` never resolves, and no safe state is applied after a SIGKILL.
 * Unlike a child, a handler that is mid-way through an `await` when its process dies cannot be
 * stopped: what it changes afterwards in its own state is visible only to a test that looks at
 * that state directly (a restart builds a new handler).
 */
import type {
  Clock,
  ProviderProcess,
  SpawnFn,
  SpawnOptions,
  TimerId,
} from "../../src/common/mod.ts";
import {
  type ProviderHandler,
  type SafeStateReason,
  serveProvider,
} from "../../src/provider_sdk/mod.ts";

/** What a provider program gets from the process it runs in (Deno.* for a real child). */
export interface ProgramHost {
  /** The process id (in-process: a number no real process has). */
  readonly pid: number;
  /** The arguments after the program's key (for a module: what Deno.args would be). */
  readonly args: readonly string[];
  /** Ends the process at once with this exit code (Deno.exit). */
  exit(code: number): void;
  /** Resolves after `ms` on the spawn's clock (never, once the process has ended). */
  sleep(ms: number): Promise<void>;
  /** Never resolves: the request waiting on it is never answered. */
  hang(): Promise<never>;
  /** Writes one line to stderr. */
  stderr(line: string): void;
}

/** A provider program: its handler and how its process treats stdin EOF and SIGTERM. */
export interface ProviderProgram {
  readonly handler: ProviderHandler;
  /** SIGTERM does nothing (only SIGKILL ends the process). */
  readonly ignoreSigterm?: boolean;
  /**
   * Stdin EOF ends the process (code 0) at once, even while a request is in progress or hung,
   * as a provider does that reads its stdin apart from answering (tests/helpers/
   * _programmable_provider.ts). Default: the SDK's loop, which sees EOF after the request.
   */
  readonly exitOnStdinEof?: boolean;
  /** See ProviderIo.leaseMs. */
  readonly leaseMs?: number;
}

/** Builds a program for one spawned process (a restart calls it again: fresh state). */
export type ProgramFactory = (host: ProgramHost) => ProviderHandler | ProviderProgram;

/** Programs by command or by module path (an argument of the command). */
export type Programs = Readonly<Record<string, ProgramFactory>>;

/** Exit code of a process ended by a signal (128 + signal number), as spawnProcess reports it. */
const SIGNAL_EXIT: Readonly<Record<"SIGTERM" | "SIGKILL", number>> = {
  SIGTERM: 128 + 15,
  SIGKILL: 128 + 9,
};

/** Pids of in-process providers start here, far above any Linux pid_max. */
const FIRST_PID = 1_000_000_000;
let nextPid = FIRST_PID;

/** A SpawnFn running programs in-process, and the processes it started in-process. */
export class InProcessSpawn {
  readonly #programs: Programs;
  readonly #otherwise: SpawnFn | null;
  readonly #timers: Pick<Clock, "setTimer" | "clearTimer">;
  readonly #processes: InProcessProvider[] = [];

  constructor(programs: Programs, o: InProcessSpawnOptions = {}) {
    this.#programs = programs;
    this.#otherwise = o.otherwise ?? null;
    this.#timers = o.clock ?? REAL_TIMERS;
  }

  /**
   * The SpawnFn: a known program in-process; another command through `otherwise`, else it throws
   * as a spawn that cannot start does.
   */
  readonly spawn: SpawnFn = (options: SpawnOptions): ProviderProcess => {
    const found = this.#find(options);
    if (found === null) {
      if (this.#otherwise !== null) return this.#otherwise(options);
      throw new Deno.errors.NotFound(
        `no in-process program for ${[options.command, ...options.args].join(" ")}`,
      );
    }
    const p = new InProcessProvider(found.factory, options, found.args, this.#timers);
    this.#processes.push(p);
    return p;
  };

  /** Every process started, oldest first. */
  get processes(): readonly InProcessProvider[] {
    return this.#processes;
  }

  /** The process with this pid (undefined for another one, e.g. a real child's). */
  process(pid: number): InProcessProvider | undefined {
    return this.#processes.find((p) => p.pid === pid);
  }

  /** The processes that have not ended. */
  running(): InProcessProvider[] {
    return this.#processes.filter((p) => p.status === null);
  }

  #find(o: SpawnOptions): { factory: ProgramFactory; args: readonly string[] } | null {
    const byCommand = this.#programs[o.command];
    if (byCommand !== undefined) return { factory: byCommand, args: o.args };
    const at = o.args.findIndex((a) => Object.hasOwn(this.#programs, a));
    if (at < 0) return null;
    return { factory: (this.#programs[o.args[at]!])!, args: o.args.slice(at + 1) };
  }
}

/** Options of an InProcessSpawn. */
export interface InProcessSpawnOptions {
  /** Starts a command that names no known program (e.g. spawnProcess: a real child). */
  readonly otherwise?: SpawnFn;
  /**
   * The timers of the programs' `host.sleep` (default the host's): a test's ManualClock makes a
   * provider's latency virtual time, as the runtime's own timeouts are.
   */
  readonly clock?: Pick<Clock, "setTimer" | "clearTimer">;
}

/** The host's timers. */
const REAL_TIMERS: Pick<Clock, "setTimer" | "clearTimer"> = {
  setTimer: (fn, ms) => setTimeout(fn, ms),
  clearTimer: (id) => clearTimeout(id as ReturnType<typeof setTimeout> | undefined),
};

/** A SpawnFn over `programs` (see InProcessSpawn). */
export function inProcessSpawn(programs: Programs, o: InProcessSpawnOptions = {}): InProcessSpawn {
  return new InProcessSpawn(programs, o);
}

/** How an in-process provider ended. */
export interface ProcessStatus {
  readonly code: number;
  readonly signal: string | null;
}

/** One in-process provider "process" (a ProviderProcess). */
export class InProcessProvider implements ProviderProcess {
  readonly pid: number;
  readonly command: string;
  /** The arguments after the program's key. */
  readonly args: readonly string[];
  readonly stdin: WritableStream<Uint8Array>;
  readonly stdout: ReadableStream<Uint8Array>;
  readonly stderr: ReadableStream<Uint8Array>;
  readonly exited: Promise<ProcessStatus>;
  /** The program's handler (null when the program threw while starting). */
  readonly handler: ProviderHandler | null = null;
  #status: ProcessStatus | null = null;
  #resolveExited!: (s: ProcessStatus) => void;
  readonly #in: Pipe;
  readonly #out: Pipe;
  readonly #err: Pipe;
  readonly #stop = new AbortController();
  readonly #sleeps = new Set<TimerId>();
  readonly #timers: Pick<Clock, "setTimer" | "clearTimer">;
  #ignoreSigterm = false;
  /** Lines written to stderr, in order (the stream delivers them too). */
  readonly stderrLines: string[] = [];

  constructor(
    factory: ProgramFactory,
    options: SpawnOptions,
    args: readonly string[],
    timers: Pick<Clock, "setTimer" | "clearTimer"> = REAL_TIMERS,
  ) {
    this.#timers = timers;
    this.pid = nextPid++;
    this.command = options.command;
    this.args = args;
    this.#in = new Pipe();
    this.#out = new Pipe();
    this.#err = new Pipe();
    this.stdin = this.#in.writable;
    this.stdout = this.#out.readable;
    this.stderr = this.#err.readable;
    this.exited = new Promise((resolve) => (this.#resolveExited = resolve));
    const host: ProgramHost = {
      pid: this.pid,
      args,
      exit: (code) => this.#end({ code, signal: null }),
      sleep: (ms) =>
        new Promise<void>((resolve) => {
          if (this.#status !== null) return;
          const timer = this.#timers.setTimer(() => {
            this.#sleeps.delete(timer);
            resolve();
          }, ms);
          this.#sleeps.add(timer);
        }),
      hang: () => new Promise<never>(() => {}),
      stderr: (line) => {
        if (this.#status !== null) return;
        this.stderrLines.push(line);
        this.#err.write(new TextEncoder().encode(`${line}\n`));
      },
    };
    let program: ProviderProgram;
    try {
      const made = factory(host);
      program = typeof (made as ProviderHandler).hello === "function"
        ? { handler: made as ProviderHandler }
        : made as ProviderProgram;
    } catch (err) {
      // A provider whose start-up throws: its error on stderr, exit code 1 (as Deno does).
      host.stderr(`error: Uncaught ${err instanceof Error ? err.stack ?? err.message : err}`);
      queueMicrotask(() => this.#end({ code: 1, signal: null }));
      return;
    }
    this.handler = program.handler;
    this.#ignoreSigterm = program.ignoreSigterm ?? false;
    if (program.exitOnStdinEof) {
      this.#in.closed.then(() => this.#end({ code: 0, signal: null }));
    }
    serveProvider(this.#alive(program.handler), {
      readable: this.#in.readable,
      writable: this.#out.writable,
      stop: this.#stop.signal,
      ...(program.leaseMs === undefined ? {} : { leaseMs: program.leaseMs }),
    }).then(
      (code) => this.#end({ code, signal: null }),
      (err) => {
        host.stderr(`error: Uncaught ${err instanceof Error ? err.message : err}`);
        this.#end({ code: 1, signal: null });
      },
    );
  }

  /** How it ended; null while it runs. */
  get status(): ProcessStatus | null {
    return this.#status;
  }

  /**
   * SIGTERM: the SDK's stop (safe state, exit 0), unless the program ignores it; SIGKILL: ends it
   * at once. A no-op once it has ended.
   */
  kill(signal: "SIGTERM" | "SIGKILL"): void {
    if (this.#status !== null) return;
    if (signal === "SIGKILL") this.#end({ code: SIGNAL_EXIT.SIGKILL, signal });
    else if (!this.#ignoreSigterm) this.#stop.abort("SIGTERM");
  }

  /** Ends the process: the status is final, the pipes close, nothing runs for it any more. */
  #end(status: ProcessStatus): void {
    if (this.#status !== null) return;
    this.#status = status;
    for (const t of this.#sleeps) this.#timers.clearTimer(t);
    this.#sleeps.clear();
    this.#in.break();
    this.#out.close();
    this.#err.close();
    this.#resolveExited(status);
  }

  /** `handler` as seen by the serve loop: nothing is called on it once the process has ended. */
  #alive(handler: ProviderHandler): ProviderHandler {
    const dead = () => this.#status !== null;
    const never = new Promise<never>(() => {});
    const wrapped: Record<string, unknown> = {};
    for (
      const name of [
        "hello",
        "waitReady",
        "listDevices",
        "describeDevice",
        "readSignals",
        "call",
        "getHealth",
      ] as const
    ) {
      const fn = handler[name] as ((...a: unknown[]) => unknown) | undefined;
      if (fn === undefined) continue;
      wrapped[name] = (...a: unknown[]) => dead() ? never : fn.apply(handler, a);
    }
    if (handler.applySafeState !== undefined) {
      wrapped.applySafeState = (reason: SafeStateReason) =>
        dead() ? undefined : handler.applySafeState!(reason);
    }
    return wrapped as unknown as ProviderHandler;
  }
}

/**
 * One direction of a pipe: a byte stream (like Deno's stdio, so readers take the BYOB path) fed
 * by a writable whose writes complete at once (a pipe with room in its buffer). Once the reading
 * end is gone (`break`), writes fail as writes to a closed pipe do.
 */
class Pipe {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  /** Resolves when the writer closes its end (EOF for the reader). */
  readonly closed: Promise<void>;
  #controller!: ReadableByteStreamController;
  #readerGone = false;
  #ended = false;
  #resolveClosed!: () => void;

  constructor() {
    this.closed = new Promise((resolve) => (this.#resolveClosed = resolve));
    this.readable = new ReadableStream({
      type: "bytes",
      start: (c) => void (this.#controller = c),
      cancel: () => void (this.#readerGone = true),
    });
    this.writable = new WritableStream<Uint8Array>({
      write: (chunk) => {
        if (this.#readerGone || this.#ended) {
          throw new Deno.errors.BrokenPipe("Broken pipe (os error 32)");
        }
        this.write(chunk);
      },
      close: () => this.close(),
      abort: () => this.close(),
    });
  }

  /** Delivers `bytes` to the reader (dropped once either end is gone). */
  write(bytes: Uint8Array): void {
    if (this.#ended || this.#readerGone || bytes.length === 0) return;
    this.#controller.enqueue(bytes.slice()); // enqueue takes the buffer: the writer keeps its own
  }

  /** EOF for the reader once it has read what was written. */
  close(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#resolveClosed();
    if (this.#readerGone) return;
    this.#controller.close();
    this.#controller.byobRequest?.respond(0); // a BYOB read waiting for bytes sees the end
  }

  /** The reading end is gone: writes fail from now on; the reader (if any) sees EOF. */
  break(): void {
    this.close();
    this.#readerGone = true;
  }
}
