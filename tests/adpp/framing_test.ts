import { deepStrictEqual, equal, ok, rejects, throws } from "node:assert/strict";
import {
  encodeFrame,
  FrameDecoderStream,
  FrameEncoderStream,
  FrameError,
  MAX_FRAME_BYTES,
} from "../../src/adpp/mod.ts";
import { frameHex, GOLDEN, hex, unhex } from "./_golden.ts";

/** Feeds `chunks` through a FrameDecoderStream; resolves with the payloads or rejects. */
async function decodeChunks(chunks: Uint8Array[]): Promise<Uint8Array[]> {
  const source = ReadableStream.from(chunks);
  const out: Uint8Array[] = [];
  for await (const frame of source.pipeThrough(new FrameDecoderStream())) out.push(frame);
  return out;
}

function lePrefix(n: number): Uint8Array {
  const p = new Uint8Array(4);
  new DataView(p.buffer).setUint32(0, n, true);
  return p;
}

function isFrameError(kind: string): (err: unknown) => boolean {
  return (err) => err instanceof FrameError && err.kind === kind;
}

const PAYLOADS = [GOLDEN.helloRequest, GOLDEN.listDevicesRequest, GOLDEN.callRequest];
const STREAM = unhex(PAYLOADS.map(frameHex).join(""));

Deno.test("FrameDecoderStream reads golden frames delivered byte by byte", async () => {
  const chunks = Array.from(STREAM, (b) => new Uint8Array([b]));
  deepStrictEqual((await decodeChunks(chunks)).map(hex), PAYLOADS);
});

Deno.test("FrameDecoderStream reads several frames from one chunk", async () => {
  deepStrictEqual((await decodeChunks([STREAM])).map(hex), PAYLOADS);
});

Deno.test("FrameDecoderStream reads frames split at odd boundaries", async () => {
  const chunks = [STREAM.slice(0, 2), STREAM.slice(2, 37), STREAM.slice(37, 40), STREAM.slice(40)];
  deepStrictEqual((await decodeChunks(chunks)).map(hex), PAYLOADS);
});

Deno.test("FrameDecoderStream ends cleanly on EOF between frames", async () => {
  deepStrictEqual(await decodeChunks([]), []);
  equal((await decodeChunks([STREAM.slice(0, 4 + 31)])).length, 1);
});

Deno.test("FrameDecoderStream errors with truncated on EOF mid-prefix", async () => {
  await rejects(decodeChunks([new Uint8Array([0x1f, 0x00])]), isFrameError("truncated"));
});

Deno.test("FrameDecoderStream errors with truncated on EOF mid-payload", async () => {
  await rejects(decodeChunks([STREAM.slice(0, 10)]), isFrameError("truncated"));
});

Deno.test("FrameDecoderStream errors on a zero-length frame", async () => {
  await rejects(decodeChunks([lePrefix(0)]), isFrameError("zero_length"));
});

Deno.test("FrameDecoderStream rejects an oversize prefix before any payload arrives", async () => {
  // Only the prefix is sent and the source stays open: the error must come from the prefix alone.
  let pulls = 0;
  const source = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulls++ === 0) controller.enqueue(lePrefix(MAX_FRAME_BYTES + 1));
      // Later pulls never deliver: a decoder waiting for the payload would hang the test.
    },
  });
  const reader = source.pipeThrough(new FrameDecoderStream()).getReader();
  await rejects(reader.read(), isFrameError("oversize"));
});

Deno.test("FrameDecoderStream accepts a payload of exactly 1 MiB", async () => {
  const payload = new Uint8Array(MAX_FRAME_BYTES).fill(7);
  const frames = await decodeChunks([
    lePrefix(MAX_FRAME_BYTES),
    payload.slice(0, 1000),
    payload.slice(1000),
  ]);
  equal(frames.length, 1);
  equal(frames[0].length, MAX_FRAME_BYTES);
  equal(frames[0][MAX_FRAME_BYTES - 1], 7);
});

Deno.test("encodeFrame writes a uint32 little-endian prefix", () => {
  const payload = new Uint8Array(0x0102).fill(1);
  deepStrictEqual(Array.from(encodeFrame(payload).slice(0, 4)), [0x02, 0x01, 0x00, 0x00]);
  equal(hex(encodeFrame(unhex(GOLDEN.getHealthRequest))), "0400000008077a00");
});

Deno.test("encodeFrame allows exactly 1 MiB and refuses one byte more", () => {
  equal(encodeFrame(new Uint8Array(MAX_FRAME_BYTES)).length, MAX_FRAME_BYTES + 4);
  throws(() => encodeFrame(new Uint8Array(MAX_FRAME_BYTES + 1)), isFrameError("oversize"));
});

Deno.test("encodeFrame refuses an empty payload", () => {
  throws(() => encodeFrame(new Uint8Array(0)), isFrameError("zero_length"));
});

Deno.test("FrameEncoderStream frames each payload and errors on an oversize one", async () => {
  const good = ReadableStream.from(PAYLOADS.map(unhex)).pipeThrough(new FrameEncoderStream());
  const chunks: Uint8Array[] = [];
  for await (const c of good) chunks.push(c);
  equal(chunks.map(hex).join(""), hex(STREAM));

  const bad = ReadableStream.from([new Uint8Array(MAX_FRAME_BYTES + 1)])
    .pipeThrough(new FrameEncoderStream());
  await rejects(
    (async () => {
      for await (const _ of bad) ok(false, "no frame expected");
    })(),
    isFrameError("oversize"),
  );
});
