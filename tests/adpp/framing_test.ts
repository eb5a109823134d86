import { deepStrictEqual, ok, rejects, strictEqual as equal, throws } from "node:assert/strict";
import {
  checkFrameLength,
  encodeFrame,
  FRAME_READ_CHUNK_BYTES,
  FrameDecoderStream,
  FrameEncoderStream,
  FrameError,
  FrameReader,
  MAX_FRAME_BYTES,
  writeFrame,
} from "../../src/adpp/mod.ts";
import { frameHex, GOLDEN, hex, unhex } from "./_golden.ts";
import { byteStream } from "../helpers/byte_stream.ts";

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
  equal(frames[0]!.length, MAX_FRAME_BYTES);
  equal(frames[0]![MAX_FRAME_BYTES - 1], 7);
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

Deno.test("writeFrame frames a payload in place as encodeFrame does, and allocates nothing (the client's outbox, every request)", () => {
  const payload = unhex(GOLDEN.getHealthRequest);
  const out = new Uint8Array(3 + 4 + payload.length + 2).fill(0xee);
  equal(writeFrame(out, 3, payload), 3 + 4 + payload.length);
  equal(hex(out), "eeeeee" + hex(encodeFrame(payload)) + "eeee");
  throws(() => checkFrameLength(MAX_FRAME_BYTES + 1), isFrameError("oversize"));
  throws(() => checkFrameLength(0), isFrameError("zero_length"));
  checkFrameLength(MAX_FRAME_BYTES);

  const big = new Uint8Array(64).fill(7);
  const rounds = 20_000; // little enough that no scavenge hides garbage
  const run = () => {
    for (let i = 0; i < rounds; i++) {
      checkFrameLength(big.length);
      writeFrame(out, 0, payload);
      writeFrame(OUTBOX, (i % 16) * 68, big);
    }
  };
  for (let i = 0; i < 20; i++) run(); // optimised before measuring
  // The median change of three passes (one can see a scavenge or code installed by V8); a
  // change either way counts: garbage shows as growth, or as a drop when it set off a scavenge.
  const growths: number[] = [];
  for (let pass = 0; pass < 3; pass++) {
    const before = Deno.memoryUsage().heapUsed;
    run();
    growths.push(Deno.memoryUsage().heapUsed - before);
  }
  const grown = growths.map(Math.abs).sort((a, b) => a - b)[1];
  // One DataView or view per frame would be over 1 MB per pass.
  ok(grown! < 100_000, `heap grew by ${growths.join(", ")} bytes over ${2 * rounds} frames`);
  equal(hex(OUTBOX.subarray(0, 4)), "40000000");
});

const OUTBOX = new Uint8Array(16 * 68);

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

/**
 * Counts the bytes copied by Uint8Array `set` and `slice` while `run` runs (every copy the
 * decoder makes goes through one of them): a deterministic measure of work, not of time.
 */
async function bytesCopiedDuring(run: () => Promise<unknown>): Promise<number> {
  const proto = Uint8Array.prototype;
  const hadSet = Object.hasOwn(proto, "set");
  const hadSlice = Object.hasOwn(proto, "slice");
  const { set, slice } = proto;
  let copied = 0;
  Object.defineProperty(proto, "set", {
    configurable: true,
    writable: true,
    value: function (this: Uint8Array, src: ArrayLike<number>, offset?: number) {
      copied += src.length;
      return set.call(this, src, offset);
    },
  });
  Object.defineProperty(proto, "slice", {
    configurable: true,
    writable: true,
    value: function (this: Uint8Array, start?: number, end?: number) {
      const out = slice.call(this, start, end);
      copied += out.length;
      return out;
    },
  });
  try {
    await run();
  } finally {
    if (hadSet) Object.defineProperty(proto, "set", { value: set, configurable: true });
    else delete (proto as { set?: unknown }).set;
    if (hadSlice) Object.defineProperty(proto, "slice", { value: slice, configurable: true });
    else delete (proto as { slice?: unknown }).slice;
  }
  return copied;
}

for (const piece of [1, 7, 100]) {
  Deno.test(`FrameDecoderStream copies each payload byte once when frames arrive in ${piece}-byte pieces`, async () => {
    const payloads = [16_384, 5_000, 1, 32_768].map((n, i) => new Uint8Array(n).fill(i + 1));
    const stream = new Uint8Array(payloads.reduce((n, p) => n + 4 + p.length, 0));
    let at = 0;
    for (const p of payloads) {
      stream.set(lePrefix(p.length), at);
      stream.set(p, at + 4);
      at += 4 + p.length;
    }
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < stream.length; i += piece) chunks.push(stream.subarray(i, i + piece));
    let frames: Uint8Array[] = [];
    const copied = await bytesCopiedDuring(async () => (frames = await decodeChunks(chunks)));
    deepStrictEqual(frames, payloads);
    const payloadBytes = payloads.reduce((n, p) => n + p.length, 0);
    // Linear: the payload bytes once (a quadratic reassembly copies ~n^2/2 per frame).
    ok(copied <= payloadBytes + 4 * payloads.length, `copied ${copied} bytes for ${payloadBytes}`);
  });
}

/** Reads every payload with a FrameReader; resolves with them or rejects. */
async function readAll(reader: FrameReader): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}

const SOURCES = {
  "a byte stream": (chunks: Uint8Array[]) => byteStream(chunks),
  "a plain stream": (chunks: Uint8Array[]) => ReadableStream.from(chunks.map((c) => c.slice())),
};

for (const [what, source] of Object.entries(SOURCES)) {
  const frameReader = (chunks: Uint8Array[], chunkBytes = 8) =>
    new FrameReader(source(chunks), MAX_FRAME_BYTES, chunkBytes);

  Deno.test(`FrameReader on ${what} reads golden frames delivered byte by byte`, async () => {
    const chunks = Array.from(STREAM, (b) => new Uint8Array([b]));
    deepStrictEqual((await readAll(frameReader(chunks))).map(hex), PAYLOADS);
  });

  Deno.test(`FrameReader on ${what} reads several frames from one chunk`, async () => {
    deepStrictEqual((await readAll(frameReader([STREAM], 4096))).map(hex), PAYLOADS);
  });

  Deno.test(`FrameReader on ${what} keeps every payload intact while it reuses its buffer`, async () => {
    // 8-byte reads: every frame spans several reads into the same buffer.
    const chunks = [
      STREAM.slice(0, 2),
      STREAM.slice(2, 37),
      STREAM.slice(37, 40),
      STREAM.slice(40),
    ];
    const frames = await readAll(frameReader(chunks));
    deepStrictEqual(frames.map(hex), PAYLOADS);
  });

  Deno.test(`FrameReader on ${what} is buffered while a whole payload of the last chunk waits`, async () => {
    const reader = frameReader([STREAM], 4096);
    equal(reader.buffered, false);
    const seen: boolean[] = [];
    for (let r = await reader.read(); !r.done; r = await reader.read()) seen.push(reader.buffered);
    deepStrictEqual(seen, [true, true, false]); // three frames in one chunk
    // A frame only partly received is not buffered: the next read reads the stream.
    const split = frameReader([STREAM.slice(0, 4 + 31 + 2), STREAM.slice(4 + 31 + 2)], 4096);
    equal((await split.read()).done, false);
    equal(split.buffered, false);
  });

  Deno.test(`FrameReader on ${what} ends cleanly on EOF between frames`, async () => {
    deepStrictEqual(await readAll(frameReader([])), []);
    equal((await readAll(frameReader([STREAM.slice(0, 4 + 31)]))).length, 1);
  });

  Deno.test(`FrameReader on ${what} errors with truncated on EOF mid-prefix and mid-payload`, async () => {
    await rejects(readAll(frameReader([new Uint8Array([0x1f, 0x00])])), isFrameError("truncated"));
    await rejects(readAll(frameReader([STREAM.slice(0, 10)])), isFrameError("truncated"));
  });

  Deno.test(`FrameReader on ${what} errors on a zero-length frame and delivers nothing after it`, async () => {
    const reader = frameReader([concat(lePrefix(0), STREAM)], 4096);
    await rejects(reader.read(), isFrameError("zero_length"));
  });

  Deno.test(`FrameReader on ${what} accepts exactly the limit and refuses one byte more`, async () => {
    const at = (n: number) => new FrameReader(source([lePrefix(n), new Uint8Array(n)]), 100, 64);
    equal((await readAll(at(100)))[0]!.length, 100);
    await rejects(readAll(at(101)), isFrameError("oversize"));
  });
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, (at += p.length) - p.length);
  return out;
}

Deno.test("FrameReader reads a byte stream through BYOB views of its own chunk size", async () => {
  const views: number[] = [];
  const reader = new FrameReader(byteStream([STREAM], views), MAX_FRAME_BYTES, 16);
  deepStrictEqual((await readAll(reader)).map(hex), PAYLOADS);
  // Every read offered the reader's one 16-byte buffer (none was allocated by the stream).
  equal(views.length, Math.ceil(STREAM.length / 16));
  deepStrictEqual(new Set(views), new Set([16]));
});

Deno.test("FrameReader rejects an oversize prefix before any payload arrives", async () => {
  let pulls = 0;
  const source = new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (pulls++ > 0) return; // later pulls never deliver: waiting for the payload would hang
      const request = controller.byobRequest!;
      (request.view as Uint8Array).set(lePrefix(MAX_FRAME_BYTES + 1));
      request.respond(4);
    },
  });
  const reader = new FrameReader(source);
  await rejects(reader.read(), isFrameError("oversize"));
  await reader.cancel();
});

Deno.test("FrameReader.cancel ends a pending read with done", async () => {
  const source = new ReadableStream({ type: "bytes", pull() {} });
  const reader = new FrameReader(source);
  const pending = reader.read();
  await reader.cancel();
  equal((await pending).done, true);
});

Deno.test("FrameReader.readFrames gives every payload of a chunk at once, in order, as views of its buffer", async () => {
  // The ADPP client's read: a provider's answers to one poll pass come in one chunk and are all
  // handed over in the same turn, with no promise per frame and no copy of a whole frame.
  const second = concat(STREAM, STREAM.subarray(0, 7)); // and a frame cut after its prefix
  const rest = STREAM.subarray(7, frameHex(PAYLOADS[0]!).length / 2);
  const reader = new FrameReader(byteStream([STREAM, second, rest]));
  const got: string[][] = [];
  const buffers: number[][] = []; // per chunk, the byte length of each payload's buffer
  for (;;) {
    const batch: string[] = [];
    const sizes: number[] = [];
    const done = await reader.readFrames((buf, start, end) => {
      batch.push(hex(buf.subarray(start, end)));
      sizes.push(buf.buffer.byteLength);
    });
    if (done) break;
    got.push(batch);
    buffers.push(sizes);
  }
  deepStrictEqual(got, [PAYLOADS, PAYLOADS, [PAYLOADS[0]!]]);
  // A frame inside a chunk is a view of the reader's 64 KiB read buffer, not a copy; the frame
  // split across chunks is gathered into a buffer of its own length.
  const read = FRAME_READ_CHUNK_BYTES;
  deepStrictEqual(buffers, [[read, read, read], [read, read, read], [PAYLOADS[0]!.length / 2]]);
});

Deno.test("FrameReader.readFrames gives the payloads before a bad prefix, then rejects; EOF mid-frame rejects", async () => {
  const bad = new FrameReader(byteStream([concat(STREAM, lePrefix(0))]));
  const seen: string[] = [];
  await rejects(
    bad.readFrames((b, s, e) => seen.push(hex(b.subarray(s, e)))),
    isFrameError("zero_length"),
  );
  deepStrictEqual(seen, PAYLOADS);
  const cut = new FrameReader(byteStream([STREAM.subarray(0, 6)]));
  equal(await cut.readFrames(() => {}), false);
  await rejects(cut.readFrames(() => {}), isFrameError("truncated"));
});
