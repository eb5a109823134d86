/**
 * deno run --allow-read bench/lib/replay_provider.ts RECORDING.json [--streams] [--config IGNORED]
 *
 * The floor of a provider written in Deno (bench/README.md, "Footprint"): it answers every ADPP
 * request from answers recorded from the simulated provider (bench/startup_share.ts `record`; the
 * same recording as replay_provider.py), with nothing of our SDK, codec or devices loaded. Whatever
 * a Deno provider costs above this process is the provider's own code; what this process costs is
 * Deno's.
 *
 * `--streams` reads and writes through Deno's stdio streams (`Deno.stdin.readable` with a BYOB
 * reader, `Deno.stdout.writable`), as `src/provider_sdk/` does; without it, `Deno.stdin.read` and
 * `Deno.stdout.writeSync`. Not a provider for real use: values never change and every call gets
 * the recorded call answer. `--config FILE` (which the bench appends) is ignored.
 */

/** Request oneof members by field number (proto/anolis/deviceprovider/v1/envelope.proto). */
const KINDS: Readonly<Record<number, string>> = {
  10: "hello",
  11: "list_devices",
  12: "describe_device",
  13: "read_signals",
  14: "call",
  15: "get_health",
  16: "wait_ready",
};
/** Kinds whose recording is per device: the key is `<kind>/<device_id>`. */
const PER_DEVICE = new Set([12, 13]);
/** ADPP's CODE_INVALID_ARGUMENT: the answer to a request nothing was recorded for. */
const CODE_INVALID_ARGUMENT = 10;
/** Bytes asked of stdin per read. */
const READ_CHUNK_BYTES = 65_536;
/** A frame announcing more than this is a broken stream: the process exits 2. */
const MAX_FRAME_BYTES = 1 << 20;

/** A recording: request key -> Response bytes without request_id (field 1). */
export type Recording = ReadonlyMap<string, Uint8Array>;

/** Parses the JSON recording (key -> hex). */
export function parseRecording(json: string): Recording {
  const out = new Map<string, Uint8Array>();
  for (const [key, hex] of Object.entries(JSON.parse(json) as Record<string, string>)) {
    const bytes = new Uint8Array(hex.length / 2);
    for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
    out.set(key, bytes);
  }
  return out;
}

function readVarint(buf: Uint8Array, at: number): [value: number, next: number] {
  let value = 0;
  let scale = 1;
  for (let i = at; i < buf.length; i++) {
    value += (buf[i]! & 0x7f) * scale;
    if (buf[i]! < 0x80) return [value, i + 1];
    scale *= 128;
  }
  throw new RangeError("truncated varint");
}

function varint(n: number): number[] {
  const out: number[] = [];
  while (n >= 0x80) {
    out.push((n % 128) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

/** The fields of one message: [field number, wire type, value (number or bytes)]. */
function* fields(buf: Uint8Array): Generator<[number, number, number | Uint8Array]> {
  let i = 0;
  while (i < buf.length) {
    let key: number;
    [key, i] = readVarint(buf, i);
    const num = Math.floor(key / 8);
    const wt = key & 7;
    if (wt === 0) {
      let v: number;
      [v, i] = readVarint(buf, i);
      yield [num, wt, v];
    } else if (wt === 2) {
      let n: number;
      [n, i] = readVarint(buf, i);
      yield [num, wt, buf.subarray(i, i + n)];
      i += n;
    } else if (wt === 1 || wt === 5) {
      const n = wt === 1 ? 8 : 4;
      yield [num, wt, buf.subarray(i, i + n)];
      i += n;
    } else {
      throw new RangeError(`unsupported wire type ${wt}`);
    }
  }
}

const utf8 = new TextDecoder();
const utf8Encoder = new TextEncoder();

/** The Response payload (no length prefix) that answers one Request payload. */
export function answer(request: Uint8Array, recording: Recording): Uint8Array {
  let requestId = 0;
  let key: string | null = null;
  for (const [num, , value] of fields(request)) {
    if (num === 1 && typeof value === "number") requestId = value;
    else if (KINDS[num] !== undefined && value instanceof Uint8Array) {
      key = KINDS[num];
      if (PER_DEVICE.has(num)) {
        let device = "";
        for (const [n, , v] of fields(value)) {
          if (n === 1 && v instanceof Uint8Array) device = utf8.decode(v);
        }
        key += `/${device}`;
      }
    }
  }
  let body = key === null ? undefined : recording.get(key);
  if (body === undefined) {
    // A clean error the runtime can report, not silence.
    const msg = utf8Encoder.encode(`replay: nothing recorded for ${key ?? "(no request kind)"}`);
    const status = [0x08, CODE_INVALID_ARGUMENT, 0x12, ...varint(msg.length), ...msg];
    body = new Uint8Array([0x12, ...varint(status.length), ...status]);
  }
  const head = requestId === 0 ? [] : [0x08, ...varint(requestId)];
  const out = new Uint8Array(head.length + body.length);
  out.set(head);
  out.set(body, head.length);
  return out;
}

/** Splits stdin's bytes into frames and writes each frame's answer, length-prefixed. */
export class Replayer {
  #pending = new Uint8Array(0);

  constructor(readonly recording: Recording, readonly write: (frame: Uint8Array) => void) {}

  /** Takes the next bytes read; false when a frame announces more than MAX_FRAME_BYTES. */
  feed(bytes: Uint8Array): boolean {
    const all = new Uint8Array(this.#pending.length + bytes.length);
    all.set(this.#pending);
    all.set(bytes, this.#pending.length);
    let at = 0;
    while (all.length - at >= 4) {
      const len = new DataView(all.buffer, at, 4).getUint32(0, true);
      if (len > MAX_FRAME_BYTES) return false;
      if (all.length - at - 4 < len) break;
      const out = answer(all.subarray(at + 4, at + 4 + len), this.recording);
      const frame = new Uint8Array(4 + out.length);
      new DataView(frame.buffer).setUint32(0, out.length, true);
      frame.set(out, 4);
      this.write(frame);
      at += 4 + len;
    }
    this.#pending = all.slice(at);
    return true;
  }
}

async function serveRaw(recording: Recording): Promise<number> {
  const replayer = new Replayer(recording, (frame) => {
    for (let at = 0; at < frame.length;) at += Deno.stdout.writeSync(frame.subarray(at));
  });
  const chunk = new Uint8Array(READ_CHUNK_BYTES);
  for (;;) {
    const n = await Deno.stdin.read(chunk);
    if (n === null) return 0;
    if (!replayer.feed(chunk.subarray(0, n))) return 2;
  }
}

async function serveStreams(recording: Recording): Promise<number> {
  const writer = Deno.stdout.writable.getWriter();
  let writing = Promise.resolve();
  const replayer = new Replayer(recording, (frame) => {
    writing = writing.then(() => writer.write(frame));
  });
  const reader = Deno.stdin.readable.getReader({ mode: "byob" });
  let buffer = new ArrayBuffer(READ_CHUNK_BYTES);
  for (;;) {
    const { value, done } = await reader.read(new Uint8Array(buffer));
    if (done || value === undefined) break;
    if (!replayer.feed(value)) return 2;
    buffer = value.buffer as ArrayBuffer;
  }
  await writing;
  return 0;
}

if (import.meta.main) {
  const path = Deno.args[0];
  if (path === undefined || path.startsWith("--")) {
    console.error("usage: replay_provider.ts RECORDING.json [--streams] [--config IGNORED]");
    Deno.exit(1);
  }
  const recording = parseRecording(Deno.readTextFileSync(path));
  Deno.exit(
    Deno.args.includes("--streams") ? await serveStreams(recording) : await serveRaw(recording),
  );
}
