import assert from "node:assert/strict";
import {
  decodeResponse,
  encodeFrame,
  encodeRequest,
  encodeResponse,
  FrameReader,
  type WireRequest,
  type WireResponse,
} from "../../src/adpp/mod.ts";
import { answer, parseRecording, Replayer } from "../../bench/lib/replay_provider.ts";

const REPLAY = new URL("../../bench/lib/replay_provider.ts", import.meta.url).pathname;

const HELLO: WireResponse = {
  request_id: 0,
  status: { code: 1 },
  hello: { protocol_version: "v1", provider_name: "recorded-sim" },
};
const READ_DEV1: WireResponse = {
  request_id: 0,
  status: { code: 1 },
  read_signals: {
    device_id: "dev1",
    values: [{ signal_id: "t", value: { type: 1, double_value: 21.5 }, quality: 1 }],
  },
};

/** A broken splitter must fail the test, not hang it. */
const ANSWER_DEADLINE_MS = 10_000;

async function withDeadline<T>(p: Promise<T>, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: no answer in ${ANSWER_DEADLINE_MS} ms`)),
      ANSWER_DEADLINE_MS,
    );
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}

function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The recording format bench/startup_share.ts `record` writes. */
function recordingJson(): string {
  return JSON.stringify({
    hello: hex(encodeResponse(HELLO)),
    "read_signals/dev1": hex(encodeResponse(READ_DEV1)),
  });
}

const hello = (id: number): WireRequest => ({
  request_id: id,
  payload: "hello",
  hello: { protocol_version: "v1" },
});
const read = (id: number, device: string): WireRequest => ({
  request_id: id,
  payload: "read_signals",
  read_signals: { device_id: device },
});

Deno.test("replay answer: the recorded body under the asked request_id, per device where the kind is per device", () => {
  const rec = parseRecording(recordingJson());
  const h = decodeResponse(answer(encodeRequest(hello(300)), rec));
  assert.strictEqual(h.request_id, 300);
  assert.deepStrictEqual(h.hello, HELLO.hello);
  const r = decodeResponse(answer(encodeRequest(read(7, "dev1")), rec));
  assert.strictEqual(r.request_id, 7);
  assert.strictEqual((r.read_signals?.values?.[0])!.value?.double_value, 21.5);
});

Deno.test("replay answer: nothing recorded -> INVALID_ARGUMENT naming the key, not silence", () => {
  const rec = parseRecording(recordingJson());
  const r = decodeResponse(answer(encodeRequest(read(9, "dev2")), rec));
  assert.strictEqual(r.request_id, 9);
  assert.strictEqual(r.status?.code, 10);
  assert.match(r.status?.message ?? "", /read_signals\/dev2/);
  assert.strictEqual(r.read_signals, undefined);
});

Deno.test("Replayer: a frame split across reads is answered once it is whole; two in one read both", () => {
  const frames: WireResponse[] = [];
  const replayer = new Replayer(parseRecording(recordingJson()), (frame) => {
    assert.strictEqual(new DataView(frame.buffer).getUint32(0, true), frame.length - 4);
    frames.push(decodeResponse(frame.subarray(4)));
  });
  const a = encodeFrame(encodeRequest(hello(1)));
  const b = encodeFrame(encodeRequest(read(2, "dev1")));
  assert.ok(replayer.feed(a.subarray(0, 2)));
  assert.ok(replayer.feed(a.subarray(2, 6)));
  assert.strictEqual(frames.length, 0);
  const rest = new Uint8Array(a.length - 6 + b.length);
  rest.set(a.subarray(6));
  rest.set(b, a.length - 6);
  assert.ok(replayer.feed(rest));
  assert.deepStrictEqual(frames.map((r) => r.request_id), [1, 2]);
  assert.ok(!replayer.feed(new Uint8Array([0x01, 0x00, 0x10, 0x00])), "1 MiB + 1 accepted");
});

for (const mode of ["raw", "streams"] as const) {
  Deno.test(`replay provider process (${mode} stdio): frames split and joined across writes, EOF exits 0`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "replay-test-" });
    try {
      await Deno.writeTextFile(`${dir}/rec.json`, recordingJson());
      const child = new Deno.Command("deno", {
        args: [
          "run",
          "--quiet",
          "--allow-read",
          REPLAY,
          `${dir}/rec.json`,
          ...(mode === "streams" ? ["--streams"] : []),
          "--config",
          "/ignored.yaml",
        ],
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const writer = child.stdin.getWriter();
      const reader = new FrameReader(child.stdout);
      // Two frames in one write, then one frame in two writes.
      const a = encodeFrame(encodeRequest(hello(1)));
      const b = encodeFrame(encodeRequest(read(2, "dev1")));
      const c = encodeFrame(encodeRequest(read(3, "dev2")));
      const joined = new Uint8Array(a.length + b.length);
      joined.set(a);
      joined.set(b, a.length);
      await writer.write(joined);
      await writer.write(c.subarray(0, 3));
      await writer.write(c.subarray(3));
      const got: WireResponse[] = [];
      for (let i = 0; i < 3; i++) {
        const r = await withDeadline(reader.read(), `answer ${i + 1}`);
        assert.ok(!r.done, `answer ${i + 1} missing`);
        got.push(decodeResponse(r.value));
      }
      assert.deepStrictEqual(got.map((r) => [r.request_id, r.status?.code]), [
        [1, 1],
        [2, 1],
        [3, 10],
      ]);
      await writer.close();
      const status = await child.status;
      await reader.cancel().catch(() => {});
      const err = new TextDecoder().decode(await new Response(child.stderr).arrayBuffer());
      assert.strictEqual(status.code, 0, err);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("replay provider process: a frame announcing more than 1 MiB exits 2", async () => {
  const dir = await Deno.makeTempDir({ prefix: "replay-test-" });
  try {
    await Deno.writeTextFile(`${dir}/rec.json`, recordingJson());
    const child = new Deno.Command("deno", {
      args: ["run", "--quiet", "--allow-read", REPLAY, `${dir}/rec.json`],
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new Uint8Array([0x01, 0x00, 0x10, 0x00])); // 1 MiB + 1
    const status = await child.status;
    await writer.close().catch(() => {});
    assert.strictEqual(status.code, 2);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
