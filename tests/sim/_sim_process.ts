import {
  decodeResponse,
  encodeFrame,
  encodeRequest,
  type WireRequest,
  type WireResponse,
  type WireValue,
} from "../../src/adpp/mod.ts";

/** Repository root (the sim is started from there so deno.json resolves `yaml`). */
export const REPO_ROOT = new URL("../../", import.meta.url).pathname;
export const SIM_MAIN = "examples/providers/sim/main.ts";
export const SIM_YAML = "examples/providers/sim/sim.yaml";
export const SIM_INERT_YAML = "examples/providers/sim/sim-inert.yaml";
/** Upper bound for any single reply in these tests (generous: 2 shared cores). */
export const REPLY_TIMEOUT_MS = 10_000;

/** Thrown by readExactly when the deadline passes without the bytes. */
export class ReadTimeout extends Error {}

/**
 * The simulated provider as a real child process, with raw byte access to its stdout so tests can
 * also see malformed frames. Always `await sim.stop()` (kills if still running).
 */
export class SimProcess {
  readonly child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  #buf: Uint8Array = new Uint8Array(0);
  #pending: Promise<ReadableStreamReadResult<Uint8Array>> | null = null;
  #eof = false;
  #nextId = 1;
  #exited = false;
  readonly #status: Promise<Deno.CommandStatus>;
  readonly #stderr: Promise<string>;
  /** stderr received so far. */
  #stderrText = "";

  private constructor(
    args: string[],
    module = SIM_MAIN,
    cwd = REPO_ROOT,
    permissions = ["--allow-read", "--allow-env"],
  ) {
    this.child = new Deno.Command(Deno.execPath(), {
      args: ["run", "--quiet", ...permissions, module, ...args],
      cwd,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#writer = this.child.stdin.getWriter();
    this.#reader = this.child.stdout.getReader();
    this.#status = this.child.status.then((s) => {
      this.#exited = true;
      return s;
    });
    const stderr = this.child.stderr;
    this.#stderr = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of stderr) {
        this.#stderrText += decoder.decode(chunk, { stream: true });
      }
      return this.#stderrText;
    })();
  }

  /**
   * Resolves with the first stderr line matching `pattern`, looking every 20 ms until the
   * deadline; throws when none arrives in time (the provider is not sent anything meanwhile).
   */
  async waitForStderr(pattern: RegExp, timeoutMs = REPLY_TIMEOUT_MS): Promise<string> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (this.#exited) await this.#stderr; // drained: the last look sees everything
      const line = this.#stderrText.split("\n").find((l) => pattern.test(l));
      if (line !== undefined) return line;
      if (Date.now() > deadline || this.#exited) {
        throw new Error(`no stderr line matching ${pattern} in time; stderr:\n${this.#stderrText}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  /** Starts the sim with `--config <config>` plus extra arguments. */
  static start(config: string = SIM_INERT_YAML, extra: string[] = []): SimProcess {
    return new SimProcess(["--config", config, ...extra]);
  }

  /** Starts the sim with arbitrary command-line arguments. */
  static startWithArgs(args: string[]): SimProcess {
    return new SimProcess(args);
  }

  /** Starts another provider module (run from `cwd`, with these Deno permissions). */
  static startModule(
    module: string,
    args: string[],
    cwd: string,
    permissions: string[] = ["--allow-read", "--allow-env"],
  ): SimProcess {
    return new SimProcess(args, module, cwd, permissions);
  }

  /** Writes raw bytes to the provider's stdin. */
  async writeRaw(bytes: Uint8Array): Promise<void> {
    await this.#writer.write(bytes);
  }

  /** Sends one framed request with the next request id. */
  async send(req: Omit<WireRequest, "request_id"> & { request_id?: number }): Promise<number> {
    const request_id = req.request_id ?? this.#nextId++;
    await this.writeRaw(encodeFrame(encodeRequest({ ...req, request_id } as WireRequest)));
    return request_id;
  }

  /** Reads one response frame (prefix + payload) and decodes it. */
  async readResponse(timeoutMs = REPLY_TIMEOUT_MS): Promise<WireResponse> {
    const deadline = Date.now() + timeoutMs;
    const prefix = await this.readExactly(4, deadline);
    const len = new DataView(prefix.buffer, prefix.byteOffset, 4).getUint32(0, true);
    return decodeResponse(await this.readExactly(len, deadline));
  }

  /** Sends a request and returns its response, checking the echoed id. */
  async request(req: Omit<WireRequest, "request_id">): Promise<WireResponse> {
    const id = await this.send(req);
    const resp = await this.readResponse();
    if (resp.request_id !== id) throw new Error(`response id ${resp.request_id}, sent ${id}`);
    return resp;
  }

  /** Calls a function by id with JS-built wire args. */
  call(
    device_id: string,
    function_id: number,
    args: Record<string, WireValue> = {},
    function_name = "",
  ): Promise<WireResponse> {
    return this.request({ call: { device_id, function_id, function_name, args } });
  }

  /** Reads exactly n stdout bytes before the deadline (epoch ms); ReadTimeout otherwise. */
  async readExactly(n: number, deadline: number): Promise<Uint8Array> {
    while (this.#buf.length < n) {
      if (this.#eof) throw new Error(`stdout ended after ${this.#buf.length} of ${n} bytes`);
      this.#pending ??= this.#reader.read();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), Math.max(0, deadline - Date.now()));
      });
      const r = await Promise.race([this.#pending, timeout]);
      clearTimeout(timer);
      if (r === "timeout") throw new ReadTimeout(`no ${n} bytes on stdout in time`);
      this.#pending = null;
      if (r.done) {
        this.#eof = true;
        continue;
      }
      const merged = new Uint8Array(this.#buf.length + r.value.length);
      merged.set(this.#buf);
      merged.set(r.value, this.#buf.length);
      this.#buf = merged;
    }
    const out = this.#buf.slice(0, n);
    this.#buf = this.#buf.slice(n);
    return out;
  }

  /** Closes stdin (the provider sees EOF). */
  async closeStdin(): Promise<void> {
    await this.#writer.close().catch(() => {});
  }

  /** Waits for the exit and returns the exit code. */
  async exitCode(): Promise<number> {
    return (await this.#status).code;
  }

  /** True while the process has not exited. */
  get running(): boolean {
    return !this.#exited;
  }

  /** Kills the process if still running and releases every stream; returns its stderr text. */
  async stop(): Promise<string> {
    if (!this.#exited) {
      try {
        this.child.kill("SIGKILL");
      } catch {
        // exited between the check and the kill
      }
    }
    await this.#status;
    await this.#writer.close().catch(() => {});
    await this.#reader.cancel().catch(() => {});
    if (this.#pending !== null) await this.#pending.catch(() => {});
    return await this.#stderr;
  }
}

/** Runs `body` with a started sim and always stops it. */
export async function withSim<T>(
  body: (sim: SimProcess) => Promise<T>,
  config: string = SIM_INERT_YAML,
  extra: string[] = [],
): Promise<T> {
  const sim = SimProcess.start(config, extra);
  try {
    return await body(sim);
  } finally {
    await sim.stop();
  }
}

/** Writes a temporary YAML config; the caller removes it. */
export async function tempConfig(yaml: string): Promise<string> {
  const path = await Deno.makeTempFile({ suffix: ".yaml" });
  await Deno.writeTextFile(path, yaml);
  return path;
}
