import {
  decodeResponse,
  encodeFrame,
  encodeRequest,
  FrameDecoderStream,
  type WireRequest,
  type WireResponse,
} from "../../src/adpp/mod.ts";
import { type ProviderHandler, serveProvider } from "../../src/provider_sdk/mod.ts";

/** Result of serving a fixed input with in-memory streams. */
export interface ServeResult {
  code: number;
  output: Uint8Array;
}

/** Serves `input` chunks to `handler` and collects everything written. */
export async function serveBytes(
  handler: ProviderHandler,
  input: Uint8Array[],
): Promise<ServeResult> {
  const written: Uint8Array[] = [];
  const writable = new WritableStream<Uint8Array>({ write: (c) => void written.push(c) });
  const code = await serveProvider(handler, { readable: ReadableStream.from(input), writable });
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
): Promise<{ code: number; responses: WireResponse[] }> {
  const { code, output } = await serveBytes(
    handler,
    requests.map((r) => encodeFrame(encodeRequest(r))),
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
