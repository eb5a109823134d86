import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import {
  encodeFrame,
  encodeRequest,
  FRAME_READ_CHUNK_BYTES,
  StatusCode,
} from "../../src/adpp/mod.ts";
import {
  ProviderError,
  ProviderExitCode,
  type ProviderHandler,
  serveProvider,
} from "../../src/provider_sdk/mod.ts";
import { GOLDEN, unhex } from "../adpp/_golden.ts";
import { decodeFrames, serveBytes, serveRequests } from "./_harness.ts";
import { byteStream } from "../helpers/byte_stream.ts";

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
