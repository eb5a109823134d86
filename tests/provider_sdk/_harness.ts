import {
  decodeResponse,
  encodeFrame,
  encodeRequest,
  FrameDecoderStream,
  type WireRequest,
  type WireResponse,
} from "../../src/adpp/mod.ts";
import {
  type ProviderClock,
  type ProviderHandler,
  type ProviderIo,
  serveProvider,
} from "../../src/provider_sdk/mod.ts";
import { macrotask } from "../helpers/turns.ts";

/** Result of serving a fixed input with in-memory streams. */
export interface ServeResult {
  code: number;
  output: Uint8Array;
}

/** Serves `input` chunks to `handler` and collects everything written. */
export async function serveBytes(
  handler: ProviderHandler,
  input: Uint8Array[],
  options: Omit<ProviderIo, "readable" | "writable"> = {},
): Promise<ServeResult> {
  const written: Uint8Array[] = [];
  const writable = new WritableStream<Uint8Array>({ write: (c) => void written.push(c) });
  const code = await serveProvider(handler, {
    readable: ReadableStream.from(input),
    writable,
    ...options,
  });
  const output = new Uint8Array(written.reduce((n, c) => n + c.length, 0));
  let off = 0;
  for (const c of written) {
    output.set(c, off);
    off += c.length;
  }
  return { code, output };
}

/** Serves the requests (each framed) and decodes every response frame written. */
export async function serveRequests(
  handler: ProviderHandler,
  requests: WireRequest[],
  options: Omit<ProviderIo, "readable" | "writable"> = {},
): Promise<{ code: number; responses: WireResponse[] }> {
  const { code, output } = await serveBytes(
    handler,
    requests.map((r) => encodeFrame(encodeRequest(r))),
    options,
  );
  return { code, responses: await decodeFrames(output) };
}

/** Decodes a byte string of response frames. */
export async function decodeFrames(bytes: Uint8Array): Promise<WireResponse[]> {
  const out: WireResponse[] = [];
  const frames = ReadableStream.from([bytes]).pipeThrough(new FrameDecoderStream());
  for await (const f of frames) out.push(decodeResponse(f));
  return out;
}

/** A clock whose time moves only when told to; timers fire in due order during advance(). */
export class ManualClock implements ProviderClock {
  mono = 0;
  /** Wall-clock origin: 2030-01-01T00:00:00.000Z. */
  readonly wallOrigin = Date.UTC(2030, 0, 1);
  /** How many timers were ever set (the lease must not set one per request). */
  timersSet = 0;
  readonly #timers = new Map<number, { at: number; fn: () => void }>();
  #nextId = 1;

  monoMs(): number {
    return this.mono;
  }
  nowMs(): number {
    return this.wallOrigin + this.mono;
  }
  setTimer(fn: () => void, ms: number): unknown {
    const id = this.#nextId++;
    this.timersSet++;
    this.#timers.set(id, { at: this.mono + ms, fn });
    return id;
  }
  clearTimer(handle: unknown): void {
    this.#timers.delete(handle as number);
  }
  /** Timers still pending. */
  get pending(): number {
    return this.#timers.size;
  }
  /** Moves time forward by `ms`, firing due timers in order and letting their promises settle. */
  async advance(ms: number): Promise<void> {
    const target = this.mono + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.#timers) {
        if (e[1].at <= target && (!next || e[1].at < next[1].at)) next = e;
      }
      if (next === undefined) break;
      this.#timers.delete(next[0]);
      this.mono = next[1].at;
      next[1].fn();
      await macrotask();
    }
    this.mono = target;
    await macrotask();
  }
}

/** A provider served over in-memory streams that stay open until `closeInput()`. */
export interface OpenServe {
  /** Sends one request and resolves with its response. */
  request(req: WireRequest): Promise<WireResponse>;
  /** Sends one request without waiting for the response. */
  send(req: WireRequest): Promise<void>;
  /** The next response. */
  next(): Promise<WireResponse>;
  /** Closes the provider's input (EOF) and resolves with the exit code. */
  closeInput(): Promise<number>;
  /** serveProvider's promise. */
  readonly done: Promise<number>;
  /** Releases the output reader (call last). */
  dispose(): Promise<void>;
}

/** Starts serveProvider on open in-memory streams. */
export function openServe(
  handler: ProviderHandler,
  options: Omit<ProviderIo, "readable" | "writable"> = {},
): OpenServe {
  const input = new TransformStream<Uint8Array, Uint8Array>();
  const output = new TransformStream<Uint8Array, Uint8Array>();
  const writer = input.writable.getWriter();
  const responses = output.readable.pipeThrough(new FrameDecoderStream()).getReader();
  const done = serveProvider(handler, {
    readable: input.readable,
    writable: output.writable,
    ...options,
  });
  const next = async () => {
    const r = await responses.read();
    if (r.done) throw new Error("provider output ended");
    const resp = decodeResponse(r.value);
    await macrotask(); // the loop finishes its bookkeeping after the write
    return resp;
  };
  const send = (req: WireRequest) => writer.write(encodeFrame(encodeRequest(req)));
  return {
    send,
    next,
    async request(req) {
      await send(req);
      return await next();
    },
    async closeInput() {
      await writer.close().catch(() => {});
      return await done;
    },
    done,
    async dispose() {
      await writer.close().catch(() => {});
      await done.catch(() => {});
      await responses.cancel().catch(() => {});
    },
  };
}
