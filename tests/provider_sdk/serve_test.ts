import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import {
  encodeFrame,
  encodeRequest,
  encodeResponse,
  FRAME_READ_CHUNK_BYTES,
  MAX_DEVICES_PER_PROVIDER,
  MAX_FRAME_BYTES,
  MAX_HEALTH_METRICS,
  PIPE_BUF,
  PROVIDER_STATUS_MESSAGE_CHARS,
  type RequestPayloads,
  type ResponsePayloads,
  StatusCode,
  type WireRequest,
} from "../../src/adpp/mod.ts";
import {
  ProviderError,
  ProviderExitCode,
  type ProviderHandler,
  serveProvider,
} from "../../src/provider_sdk/mod.ts";
import type { Logger } from "../../src/common/mod.ts";
import { GOLDEN, unhex } from "../adpp/_golden.ts";
import { decodeFrames, serveBytes, serveRequests } from "./_harness.ts";
import { byteStream } from "../helpers/byte_stream.ts";
import { macrotask } from "../helpers/turns.ts";
import {
  STDIN_READ_AHEAD_BYTES,
  STDIN_READ_AHEAD_REQUESTS,
} from "../../src/provider_sdk/_stdin_requests.ts";

/** A handler whose every operation records the call and answers a fixed payload. */
function recordingHandler(seen: string[]): ProviderHandler {
  return {
    hello: (req) => {
      seen.push(`hello ${req.protocol_version}`);
      return { protocol_version: "v1", provider_name: "t", provider_version: "1" };
    },
    listDevices: () => (seen.push("list"), { devices: [] }),
    describeDevice: (req) => {
      throw ProviderError.notFound(`device not found: ${req.device_id}`);
    },
    readSignals: () => {
      throw new Error("boom");
    },
    call: async (req) => {
      await Promise.resolve();
      return { device_id: req.device_id ?? "" };
    },
  };
}

Deno.test("serveProvider echoes request ids and wraps payloads with status OK", async () => {
  const seen: string[] = [];
  const { code, responses } = await serveRequests(recordingHandler(seen), [
    { request_id: 1, hello: { protocol_version: "v1" } },
    { request_id: 42, list_devices: {} },
    { request_id: 7, call: { device_id: "d" } },
  ]);
  equal(code, ProviderExitCode.CLEAN);
  deepStrictEqual(responses.map((r) => r.request_id), [1, 42, 7]);
  deepStrictEqual(responses.map((r) => r.status?.code), [
    StatusCode.OK,
    StatusCode.OK,
    StatusCode.OK,
  ]);
  deepStrictEqual(responses.map((r) => r.payload), ["hello", "list_devices", "call"]);
  deepStrictEqual(seen, ["hello v1", "list"]);
});

Deno.test("serveProvider answers a ProviderError with its code and no payload", async () => {
  const { responses } = await serveRequests(recordingHandler([]), [
    { request_id: 3, describe_device: { device_id: "nope" } },
  ]);
  equal(responses[0]!.status?.code, StatusCode.NOT_FOUND);
  equal(responses[0]!.status?.message, "device not found: nope");
  equal(responses[0]!.payload, undefined);
});

Deno.test("serveProvider answers CODE_INTERNAL when a handler throws a plain error", async () => {
  const { code, responses } = await serveRequests(recordingHandler([]), [
    { request_id: 4, read_signals: { device_id: "d" } },
    { request_id: 5, list_devices: {} },
  ]);
  equal(responses[0]!.status?.code, StatusCode.INTERNAL);
  equal(responses[1]!.status?.code, StatusCode.OK, "the loop keeps serving");
  equal(code, ProviderExitCode.CLEAN);
});

/** A logger keeping every line as `level message`. */
function captureLog(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const at = (level: string) => (m: string) => void lines.push(`${level} ${m}`);
  const logger: Logger = {
    debug: at("debug"),
    info: at("info"),
    warn: at("warn"),
    error: at("error"),
    child: () => logger,
  };
  return { logger, lines };
}

/** A handler whose ReadSignals throws `error` and whose ListDevices answers. */
function throwingHandler(error: () => Error): ProviderHandler {
  return {
    hello: () => ({ protocol_version: "v1", provider_name: "t", provider_version: "1" }),
    listDevices: () => ({ devices: [] }),
    describeDevice: () => ({}),
    readSignals: () => {
      throw error();
    },
    call: () => ({}),
  };
}

/** Longest log line the serve loop may write quoting a status message (its own words included). */
const LOG_LINE_BOUND = PROVIDER_STATUS_MESSAGE_CHARS + 100;

Deno.test("serveProvider answers INTERNAL, cut to PROVIDER_STATUS_MESSAGE_CHARS, when a handler throws an error too large to frame", async () => {
  const huge = "x".repeat(MAX_FRAME_BYTES + 1);
  const { logger, lines } = captureLog();
  const { code, responses } = await serveRequests(throwingHandler(() => new Error(huge)), [
    { request_id: 4, read_signals: { device_id: "d" } },
    { request_id: 5, list_devices: {} },
  ], { logger });
  equal(code, ProviderExitCode.CLEAN, "the provider does not exit");
  deepStrictEqual(responses.map((r) => [r.request_id, r.status?.code]), [
    [4, StatusCode.INTERNAL],
    [5, StatusCode.OK],
  ]);
  const message = responses[0]!.status!.message!;
  equal(message.length, PROVIDER_STATUS_MESSAGE_CHARS + 1);
  equal(
    message,
    `internal error: ${huge}`.slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026",
  );
  const errors = lines.filter((l) => l.startsWith("error "));
  equal(errors.length, 1);
  ok(errors[0]!.startsWith("error request 4 read_signals: internal error: xxx"), errors[0]);
  ok(lines.every((l) => l.length <= LOG_LINE_BOUND), `log line of ${lines[0]!.length} chars`);
});

Deno.test("serveProvider keeps a ProviderError's code and cuts its message only past PROVIDER_STATUS_MESSAGE_CHARS", async () => {
  const at = "y".repeat(PROVIDER_STATUS_MESSAGE_CHARS);
  const past = at + "z".repeat(MAX_FRAME_BYTES);
  const { logger, lines } = captureLog();
  const messages = [at, past];
  const { code, responses } = await serveRequests(
    throwingHandler(() => ProviderError.unavailable(messages.shift()!)),
    [
      { request_id: 1, read_signals: { device_id: "d" } },
      { request_id: 2, read_signals: { device_id: "d" } },
    ],
    { logger },
  );
  equal(code, ProviderExitCode.CLEAN);
  deepStrictEqual(responses.map((r) => r.status?.code), [
    StatusCode.UNAVAILABLE,
    StatusCode.UNAVAILABLE,
  ]);
  equal(responses[0]!.status?.message, at, "at the bound: whole");
  equal(responses[1]!.status?.message, at + "\u2026", "one past it: cut and marked");
  const logged = lines.filter((l) => l.startsWith("debug request "));
  equal(logged.length, 2);
  ok(logged[1]!.endsWith(`code ${StatusCode.UNAVAILABLE}: ${at}\u2026`), "logged cut");
  ok(lines.every((l) => l.length <= LOG_LINE_BOUND), "log lines bounded");
});

Deno.test("serveProvider answers UNIMPLEMENTED for a missing optional operation", async () => {
  const { responses } = await serveRequests(recordingHandler([]), [
    { request_id: 2, wait_ready: { max_wait_ms_hint: 1000 } },
    { request_id: 3, get_health: {} },
  ]);
  deepStrictEqual(responses.map((r) => r.status?.code), [
    StatusCode.UNIMPLEMENTED,
    StatusCode.UNIMPLEMENTED,
  ]);
});

Deno.test("serveProvider answers UNIMPLEMENTED for a request without payload", async () => {
  const { responses } = await serveRequests(recordingHandler([]), [{ request_id: 9 }]);
  equal(responses[0]!.request_id, 9);
  equal(responses[0]!.status?.code, StatusCode.UNIMPLEMENTED);
});

Deno.test("serveProvider serves the golden Hello frame delivered byte by byte", async () => {
  const frame = encodeFrame(unhex(GOLDEN.helloRequest));
  const { code, output } = await serveBytes(
    recordingHandler([]),
    Array.from(frame, (b) => new Uint8Array([b])),
  );
  equal(code, ProviderExitCode.CLEAN);
  const [resp] = await decodeFrames(output);
  equal(resp!.request_id, 1);
  equal(resp!.hello?.provider_name, "t");
});

Deno.test("serveProvider reads a byte stream (stdin) into its own reused buffer (BYOB)", async () => {
  // Read with a default reader, Deno's stdin allocates a fresh 64 KiB buffer for every read.
  const requests = [1, 2, 3].map((id) =>
    encodeFrame(encodeRequest({ request_id: id, get_health: {} }))
  );
  const views: number[] = [];
  const written: Uint8Array[] = [];
  const code = await serveProvider(recordingHandler([]), {
    readable: byteStream(requests, views),
    writable: new WritableStream({ write: (c) => void written.push(c) }),
  });
  equal(code, ProviderExitCode.CLEAN);
  equal(written.length, 3);
  equal(views.length, 3);
  deepStrictEqual(new Set(views), new Set([FRAME_READ_CHUNK_BYTES]));
});

Deno.test("serveProvider exits 0 on EOF before any prefix byte", async () => {
  equal((await serveBytes(recordingHandler([]), [])).code, ProviderExitCode.CLEAN);
});

Deno.test("serveProvider exits 2 on a zero-length frame", async () => {
  const { code, output } = await serveBytes(recordingHandler([]), [new Uint8Array(4)]);
  equal(code, ProviderExitCode.FRAMING);
  equal(output.length, 0);
});

Deno.test("serveProvider exits 2 on EOF mid-prefix and mid-payload", async () => {
  const frame = encodeFrame(unhex(GOLDEN.helloRequest));
  equal((await serveBytes(recordingHandler([]), [frame.slice(0, 3)])).code, 2);
  equal((await serveBytes(recordingHandler([]), [frame.slice(0, 10)])).code, 2);
});

Deno.test("serveProvider exits 2 on an oversize length prefix", async () => {
  const prefix = new Uint8Array([0x01, 0x00, 0x10, 0x00]); // 1 MiB + 1
  equal((await serveBytes(recordingHandler([]), [prefix])).code, ProviderExitCode.FRAMING);
});

Deno.test("serveProvider exits 3 on a frame that is not a Request", async () => {
  const { code } = await serveBytes(recordingHandler([]), [
    new Uint8Array([3, 0, 0, 0, 0xff, 0xff, 0xff]),
  ]);
  equal(code, ProviderExitCode.BAD_REQUEST);
});

Deno.test("serveProvider exits 5 when stdout cannot be written", async () => {
  const writable = new WritableStream<Uint8Array>({
    write() {
      throw new Error("broken pipe");
    },
  });
  const code = await serveProvider(recordingHandler([]), {
    readable: ReadableStream.from([
      encodeFrame(encodeRequest({ request_id: 1, list_devices: {} })),
    ]),
    writable,
  });
  equal(code, ProviderExitCode.WRITE);
});

Deno.test("serveProvider runs afterReply actions after the reply, before the next request", async () => {
  const order: string[] = [];
  const handler: ProviderHandler = {
    ...recordingHandler(order),
    call: (req, ctx) => {
      ctx.afterReply(async () => {
        await Promise.resolve();
        order.push(`after ${req.device_id}`);
      });
      return { device_id: req.device_id ?? "" };
    },
  };
  const writable = new WritableStream<Uint8Array>({
    write: () => void order.push("write"),
  });
  await serveProvider(handler, {
    readable: ReadableStream.from([
      encodeFrame(encodeRequest({ request_id: 1, call: { device_id: "a" } })),
      encodeFrame(encodeRequest({ request_id: 2, list_devices: {} })),
    ]),
    writable,
  });
  deepStrictEqual(order, ["write", "after a", "list", "write"]);
});

Deno.test("serveProvider writes raw bytes instead of the reply when asked", async () => {
  const raw = new Uint8Array([3, 0, 0, 0, 0xff, 0xff, 0xff]);
  const handler: ProviderHandler = {
    ...recordingHandler([]),
    call: (_req, ctx) => {
      ctx.replaceReplyWithRawBytes(raw);
      return {};
    },
  };
  const { output } = await serveBytes(handler, [
    encodeFrame(encodeRequest({ request_id: 1, call: { device_id: "a" } })),
  ]);
  deepStrictEqual(Array.from(output), Array.from(raw));
});

// Issue 39: the answers to the ReadSignals/GetHealth requests of one read go out in one write.

/** Serves each chunk (the frames of its requests, concatenated) as one read of a byte stream. */
async function serveChunks(
  handler: ProviderHandler,
  chunks: WireRequest[][],
  onWrite: (bytes: Uint8Array) => void = () => {},
): Promise<{ code: number; writes: Uint8Array[] }> {
  const writes: Uint8Array[] = [];
  const code = await serveProvider(handler, {
    readable: byteStream(chunks.map((reqs) => concatBytes(reqs.map(frameOf)))),
    writable: new WritableStream({
      write: (c) => {
        writes.push(c);
        onWrite(c);
      },
    }),
  });
  return { code, writes };
}

function frameOf(req: WireRequest): Uint8Array {
  return encodeFrame(encodeRequest(req));
}

function concatBytes(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, (at += p.length) - p.length);
  return out;
}

/** The request ids answered by each write. */
async function idsPerWrite(writes: Uint8Array[]): Promise<number[][]> {
  const out: number[][] = [];
  for (const w of writes) out.push((await decodeFrames(w)).map((r) => r.request_id ?? -1));
  return out;
}

const read = (id: number, device = "d"): WireRequest => ({
  request_id: id,
  read_signals: { device_id: device },
});

/** Answers ReadSignals with one string signal of `valueBytes` characters (default: small). */
function readingHandler(order: string[] = [], valueBytes: (device: string) => number = () => 8) {
  return {
    ...recordingHandler(order),
    readSignals: (req: RequestPayloads["read_signals"]) => {
      const device = req.device_id ?? "";
      order.push(`read ${device}`);
      return {
        device_id: device,
        values: [{ signal_id: "s", value: { string_value: "x".repeat(valueBytes(device)) } }],
      };
    },
    getHealth: () => ({ provider: { state: 1, message: "ok" } }),
  } satisfies ProviderHandler;
}

Deno.test("serveProvider answers the reads of one chunk in one write, in order", async () => {
  const { code, writes } = await serveChunks(readingHandler(), [
    [read(1), read(2), { request_id: 3, get_health: {} }, read(4), read(5)],
    [read(6)],
    [read(7), read(8)],
  ]);
  equal(code, ProviderExitCode.CLEAN);
  deepStrictEqual(await idsPerWrite(writes), [[1, 2, 3, 4, 5], [6], [7, 8]]);
});

Deno.test("serveProvider writes the answers kept before it dispatches a call", async () => {
  let written = 0;
  let writtenWhenCalled = -1;
  const handler: ProviderHandler = {
    ...readingHandler(),
    call: (req) => {
      writtenWhenCalled = written;
      return { device_id: req.device_id ?? "" };
    },
  };
  const { writes } = await serveChunks(
    handler,
    [[read(1), read(2), { request_id: 3, call: { device_id: "d" } }, read(4), read(5)]],
    () => written++,
  );
  equal(writtenWhenCalled, 1, "the answers to 1 and 2 were written when the call started");
  deepStrictEqual(await idsPerWrite(writes), [[1, 2], [3], [4, 5]]);
});

Deno.test("serveProvider writes a reply with afterReply actions at once, before its actions", async () => {
  const order: string[] = [];
  const base = readingHandler(order);
  const handler: ProviderHandler = {
    ...base,
    readSignals: (req, ctx) => {
      if (req.device_id === "b") ctx.afterReply(() => void order.push("after b"));
      return base.readSignals(req);
    },
  };
  const { writes } = await serveChunks(
    handler,
    [[read(1, "a"), read(2, "b"), read(3, "c")]],
    () => order.push("write"),
  );
  deepStrictEqual(order, ["read a", "read b", "write", "after b", "read c", "write"]);
  deepStrictEqual(await idsPerWrite(writes), [[1, 2], [3]]);
});

Deno.test("serveProvider writes raw reply bytes at once, after the answers kept", async () => {
  const raw = encodeFrame(encodeResponse({ request_id: 99, status: { code: 0, message: "raw" } }));
  const base = readingHandler();
  const handler: ProviderHandler = {
    ...base,
    readSignals: (req, ctx) => {
      if (req.device_id === "raw") ctx.replaceReplyWithRawBytes(raw);
      return base.readSignals(req);
    },
  };
  const { writes } = await serveChunks(handler, [[read(1), read(2, "raw"), read(3), read(4)]]);
  deepStrictEqual(await idsPerWrite(writes), [[1, 99], [3, 4]]);
});

Deno.test("serveProvider splits the answers of one chunk into writes of at most PIPE_BUF", async () => {
  // ~620-byte answers (six fit in PIPE_BUF), and one answer larger than PIPE_BUF on its own.
  const ids = Array.from({ length: 30 }, (_, i) => i + 1);
  const handler = readingHandler([], (device) => device === "big" ? 5000 : 600);
  const { code, writes } = await serveChunks(handler, [
    ids.map((id) => read(id, id === 13 ? "big" : "d")),
  ]);
  equal(code, ProviderExitCode.CLEAN);
  const perWrite = await idsPerWrite(writes);
  deepStrictEqual(perWrite.flat(), ids, "every answer, in order");
  deepStrictEqual(perWrite.find((w) => w.includes(13)), [13], "the big answer goes alone");
  for (const [i, w] of writes.entries()) {
    if (!perWrite[i]!.includes(13)) ok(w.length <= PIPE_BUF, `write ${i}: ${w.length} bytes`);
  }
  // A write is cut only when the next answer would not fit: 12 answers before the big one in
  // groups of 6, 17 after it (6 + 6 + 5).
  deepStrictEqual(perWrite.map((w) => w.length), [6, 6, 1, 6, 6, 5]);
});

Deno.test("serveProvider exits 5 when the write of the answers kept fails", async () => {
  const writable = new WritableStream<Uint8Array>({
    write() {
      throw new Error("broken pipe");
    },
  });
  const code = await serveProvider(readingHandler(), {
    readable: byteStream([concatBytes([read(1), read(2), read(3)].map(frameOf))]),
    writable,
  });
  equal(code, ProviderExitCode.WRITE);
});

Deno.test("serveProvider cuts a handler's own GetHealth messages (provider and device) to PROVIDER_STATUS_MESSAGE_CHARS", async () => {
  const huge = "h".repeat(MAX_FRAME_BYTES + 1);
  const handler: ProviderHandler = {
    hello: () => ({ protocol_version: "v1", provider_name: "t", provider_version: "1" }),
    listDevices: () => ({ devices: [] }),
    describeDevice: () => ({}),
    readSignals: () => ({}),
    call: () => ({}),
    getHealth: () => ({
      provider: { state: 1, message: huge },
      devices: [{ device_id: "d", state: 1, message: huge }, {
        device_id: "e",
        state: 1,
        message: "fine",
      }],
    }),
  };
  const { code, responses } = await serveRequests(handler, [
    { request_id: 7, get_health: {} },
    { request_id: 8, list_devices: {} },
  ]);
  equal(code, ProviderExitCode.CLEAN, "the provider answers instead of exiting");
  deepStrictEqual(responses.map((r) => [r.request_id, r.status?.code]), [
    [7, StatusCode.OK],
    [8, StatusCode.OK],
  ]);
  const cut = "h".repeat(PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026";
  const health = responses[0]!.get_health!;
  equal(health.provider?.message, cut);
  deepStrictEqual(health.devices?.map((d) => [d.device_id, d.message]), [["d", cut], [
    "e",
    "fine",
  ]]);
});

/** A handler answering GetHealth with `health` (every other operation trivially). */
function healthHandler(health: () => ResponsePayloads["get_health"]): ProviderHandler {
  return {
    hello: () => ({ protocol_version: "v1", provider_name: "t", provider_version: "1" }),
    listDevices: () => ({ devices: [] }),
    describeDevice: () => ({}),
    readSignals: () => ({}),
    call: () => ({}),
    getHealth: health,
  };
}

Deno.test("serveProvider cuts a handler's GetHealth metric values and keys to PROVIDER_STATUS_MESSAGE_CHARS, keeping those at the bound", async () => {
  const huge = "v".repeat(MAX_FRAME_BYTES + 1);
  const at = "w".repeat(PROVIDER_STATUS_MESSAGE_CHARS);
  const past = "x".repeat(PROVIDER_STATUS_MESSAGE_CHARS + 1);
  const longKey = "k".repeat(MAX_FRAME_BYTES + 1);
  const { code, responses } = await serveRequests(
    healthHandler(() => ({
      provider: { state: 1, message: "ok", metrics: { huge, at, past } },
      devices: [{ device_id: "d", state: 1, metrics: { huge, [longKey]: "1" } }],
    })),
    [{ request_id: 7, get_health: {} }, { request_id: 8, list_devices: {} }],
  );
  equal(code, ProviderExitCode.CLEAN, "the provider answers instead of exiting");
  deepStrictEqual(responses.map((r) => [r.request_id, r.status?.code]), [
    [7, StatusCode.OK],
    [8, StatusCode.OK],
  ]);
  const health = responses[0]!.get_health!;
  const cutV = "v".repeat(PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026";
  deepStrictEqual(health.provider?.metrics, {
    huge: cutV,
    at,
    past: "x".repeat(PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026",
  });
  deepStrictEqual(health.devices?.[0]?.metrics, {
    huge: cutV,
    ["k".repeat(PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026"]: "1",
  });
});

Deno.test("serveProvider cuts a handler's GetHealth device ids to PROVIDER_STATUS_MESSAGE_CHARS, keeping one at the bound", async () => {
  const at = "a".repeat(PROVIDER_STATUS_MESSAGE_CHARS);
  const huge = "d".repeat(MAX_FRAME_BYTES + 1);
  const { code, responses } = await serveRequests(
    healthHandler(() => ({
      provider: { state: 1, message: "ok" },
      devices: [{ device_id: at, state: 1 }, { device_id: huge, state: 4 }],
    })),
    [{ request_id: 7, get_health: {} }, { request_id: 8, list_devices: {} }],
  );
  equal(code, ProviderExitCode.CLEAN, "the provider answers instead of exiting");
  deepStrictEqual(responses.map((r) => [r.request_id, r.status?.code]), [
    [7, StatusCode.OK],
    [8, StatusCode.OK],
  ]);
  deepStrictEqual(responses[0]!.get_health!.devices?.map((d) => [d.device_id, d.state]), [
    [at, 1],
    ["d".repeat(PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026", 4],
  ]);
});

Deno.test("serveProvider answers at most MAX_DEVICES_PER_PROVIDER GetHealth device entries and counts the rest in devices_omitted", async () => {
  const ids = (n: number) => Array.from({ length: n }, (_, i) => `d${i}`);
  const answer = async (n: number) => {
    const { code, responses } = await serveRequests(
      healthHandler(() => ({
        provider: { state: 1, message: "ok", metrics: { mine: "1" } },
        devices: ids(n).map((device_id) => ({ device_id })),
      })),
      [{ request_id: 7, get_health: {} }],
    );
    equal(code, ProviderExitCode.CLEAN, `${n} entries: the provider answers instead of exiting`);
    equal(responses[0]?.status?.code, StatusCode.OK);
    return responses[0]!.get_health!;
  };
  const atBound = await answer(MAX_DEVICES_PER_PROVIDER);
  deepStrictEqual(atBound.devices?.map((d) => d.device_id), ids(MAX_DEVICES_PER_PROVIDER));
  deepStrictEqual(atBound.provider?.metrics, { mine: "1" }, "no marker at the bound");
  const past = await answer(MAX_DEVICES_PER_PROVIDER + 1);
  deepStrictEqual(past.devices?.map((d) => d.device_id), ids(MAX_DEVICES_PER_PROVIDER));
  deepStrictEqual(past.provider?.metrics, { mine: "1", devices_omitted: "1" });
  // Some 300,000 entries: an answer over MAX_FRAME_BYTES, which made the provider exit 4.
  const many = 300_000;
  const huge = await answer(many);
  deepStrictEqual(huge.devices?.map((d) => d.device_id), ids(MAX_DEVICES_PER_PROVIDER));
  equal(huge.provider?.metrics?.devices_omitted, String(many - MAX_DEVICES_PER_PROVIDER));
});

/** `n` metrics named m0, m1, ... */
function manyMetrics(n: number, value = "1"): Record<string, string> {
  return Object.fromEntries(Array.from({ length: n }, (_, i) => [`m${i}`, value]));
}

Deno.test("serveProvider answers at most MAX_HEALTH_METRICS metrics an entry and counts the rest in metrics_omitted", async () => {
  const { responses } = await serveRequests(
    healthHandler(() => ({
      provider: { state: 1, message: "ok", metrics: manyMetrics(100) },
      devices: [
        { device_id: "a", state: 1, metrics: manyMetrics(100) },
        { device_id: "b", state: 1, metrics: manyMetrics(MAX_HEALTH_METRICS) },
      ],
    })),
    [{ request_id: 7, get_health: {} }],
  );
  const health = responses[0]!.get_health!;
  // Before: all 100 of each, unbounded in count.
  const device = health.devices![0]!.metrics!;
  equal(Object.keys(device).length, MAX_HEALTH_METRICS);
  deepStrictEqual(device, {
    ...manyMetrics(MAX_HEALTH_METRICS - 1),
    metrics_omitted: String(100 - (MAX_HEALTH_METRICS - 1)),
  });
  // At the bound: every metric, no marker.
  deepStrictEqual(health.devices![1]!.metrics, manyMetrics(MAX_HEALTH_METRICS));
  // The provider's: room kept for the devices_omitted marker.
  const provider = health.provider!.metrics!;
  equal(Object.keys(provider).length, MAX_HEALTH_METRICS - 1);
  equal(provider.metrics_omitted, String(100 - (MAX_HEALTH_METRICS - 2)));
});

Deno.test("serveProvider answers a GetHealth of many devices with many long metrics within MAX_FRAME_BYTES, counting the devices left out", async () => {
  const long = "v".repeat(PROVIDER_STATUS_MESSAGE_CHARS);
  const metrics = manyMetrics(MAX_HEALTH_METRICS, long);
  const { code, responses } = await serveRequests(
    healthHandler(() => ({
      provider: { state: 1, message: "ok" },
      devices: Array.from({ length: MAX_DEVICES_PER_PROVIDER }, (_, i) => ({
        device_id: `d${i}`,
        state: 1,
        metrics,
      })),
    })),
    [{ request_id: 7, get_health: {} }, { request_id: 8, list_devices: {} }],
  );
  // Before: every text cut, still some 70 MiB: the provider exited SERIALIZE (4), answering nothing.
  equal(code, ProviderExitCode.CLEAN, "the provider answers instead of exiting");
  deepStrictEqual(responses.map((r) => [r.request_id, r.status?.code]), [
    [7, StatusCode.OK],
    [8, StatusCode.OK],
  ]);
  const health = responses[0]!.get_health!;
  const answered = health.devices!.length;
  ok(answered > 0 && answered < MAX_DEVICES_PER_PROVIDER, `${answered} devices answered`);
  deepStrictEqual(health.devices!.map((d) => d.device_id), [
    ...Array.from({ length: answered }, (_, i) => `d${i}`),
  ]);
  equal(health.provider?.metrics?.devices_omitted, String(MAX_DEVICES_PER_PROVIDER - answered));
  ok(encodeFrame(encodeResponse(responses[0]!)).length <= MAX_FRAME_BYTES);
});

Deno.test("serveProvider keeps the SDK's own health metrics among those answered when a handler reports many", async () => {
  const { responses } = await serveRequests(
    {
      ...healthHandler(() => ({
        provider: { state: 1, message: "ok", metrics: manyMetrics(200) },
      })),
      applySafeState: () => ({ devices: [] }),
    },
    [{ request_id: 7, get_health: {} }],
    { leaseMs: 5_000 },
  );
  const metrics = responses[0]!.get_health!.provider!.metrics!;
  // Before: the lease metrics came after the handler's 200 and were the ones cut.
  equal(metrics.lease_ms, "5000");
  equal(metrics.safe_state_active, "false");
  ok(Object.keys(metrics).length <= MAX_HEALTH_METRICS);
});

const READ_AHEAD_CASES = [
  {
    what: "STDIN_READ_AHEAD_BYTES of large requests",
    device: "d".repeat(1000),
    chunk: PIPE_BUF,
    held: (payload: number) => Math.ceil(STDIN_READ_AHEAD_BYTES / payload),
  },
  {
    what: "STDIN_READ_AHEAD_REQUESTS small requests",
    device: "d",
    chunk: 512,
    held: () => STDIN_READ_AHEAD_REQUESTS,
  },
];

for (const c of READ_AHEAD_CASES) {
  Deno.test(`serveProvider reads stdin while a handler hangs, up to ${c.what}, and serves what it read in order once the handler ends`, async () => {
    // 2000 ReadSignals behind one Call that hangs, delivered in reads of `c.chunk` bytes only
    // when the provider reads (no queue in the stream).
    const ids = Array.from({ length: 2000 }, (_, i) => i + 2);
    const frames = ids.map((id) => frameOf(read(id, c.device)));
    const frameBytes = frames[0]!.length;
    const all = concatBytes([frameOf({ request_id: 1, call: { device_id: "d" } }), ...frames]);
    let pulled = 0;
    const readable = new ReadableStream<Uint8Array>({
      pull(ctl) {
        if (pulled >= all.length) return ctl.close();
        ctl.enqueue(all.slice(pulled, pulled + c.chunk));
        pulled += c.chunk;
      },
    }, { highWaterMark: 0 });
    let release = () => {};
    const held = new Promise<void>((resolve) => release = resolve);
    const answered: number[] = [];
    const done = serveProvider({
      ...readingHandler(),
      call: async (req) => {
        await held;
        return { device_id: req.device_id ?? "" };
      },
    }, {
      readable,
      writable: new WritableStream({
        write: async (w) =>
          void answered.push(...(await decodeFrames(w)).map((r) => r.request_id!)),
      }),
    });
    for (let i = 0; i < 5; i++) await macrotask();
    // Read while the Call hangs: the requests it may hold, give or take one read.
    const least = c.held(frameBytes - 4) * frameBytes;
    ok(
      pulled >= least && pulled <= least + 2 * c.chunk + frameBytes,
      `read ${pulled} bytes while the Call hangs, expected ${least} (+ one read)`,
    );
    deepStrictEqual(answered, []);
    release();
    equal(await done, ProviderExitCode.CLEAN);
    deepStrictEqual(answered, [1, ...ids], "every request answered, in order");
  });
}
