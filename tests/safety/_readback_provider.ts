/**
 * A scripted ADPP provider for the read-back (verification) tests, run as a real child process:
 * `deno run tests/safety/_readback_provider.ts SCRIPT_JSON [LOG_FILE]`. It speaks raw frames
 * through the codec (the provider SDK would refuse to send values without a value, undeclared
 * qualities and the like).
 *
 * SCRIPT_JSON: `{ "<device id>": DeviceScript, ... }` (devices listed in that order):
 *
 *   signals  { "<signal id>": "bool" | "double" | "int64" | "uint64" | "string" } declared with
 *            poll hint 0, so a runtime never polls them: every ReadSignals is a read-back
 *   reads    what the n-th ReadSignals (n = 0, 1, ...) answers: `{ "<signal id>": Sample }`;
 *            a signal left out is not returned; after the last entry the last one repeats
 *   then     after the last entry: "repeat" (default), "hang" (never answer again) or
 *            "fail" (answer status UNAVAILABLE "scripted read failure")
 *   delayMs  answer every ReadSignals this many ms after it arrived
 *   actuate  declare one actuating function `set_output` (id 1, no arguments): "ok" answers
 *            OK, "unavailable" answers status UNAVAILABLE "scripted call failure"
 *
 *   Sample   `{ "v": value, "q": "OK" | "STALE" | "FAULT" | "UNKNOWN" }`; `v` left out: no value;
 *            `q` left out: OK. An int64/uint64 value may be a decimal string (beyond 2^53).
 *
 * LOG_FILE, when given, gets one line per ReadSignals, `<device id> <signal ids, comma-joined>`,
 * and one per call, `call <device id> set_output`.
 */
import { ADPP_PROTOCOL_VERSION } from "../../src/common/mod.ts";
import {
  decodeRequest,
  encodeFrame,
  encodeResponse,
  FrameDecoderStream,
  StatusCode,
  type WireRequest,
  type WireResponse,
} from "../../src/adpp/mod.ts";
import { type DeviceScript, sample, WIRE_TYPE } from "../helpers/_readback_wire.ts";

const script = JSON.parse(Deno.args[0] ?? "{}") as Record<string, DeviceScript>;
const logFile = Deno.args[1];
const readCount = new Map<string, number>();

function fail(id: number | bigint | undefined, code: number, message: string): WireResponse {
  return { request_id: id, status: { code, message } } as WireResponse;
}

/**
 * Never settles: the provider serves one request at a time, so it hangs from here on. The timer
 * keeps the process alive (a pending promise alone does not: Deno would exit with "Top-level
 * await promise never resolved", code 1, and the hang would be a crash).
 */
function never(): Promise<WireResponse> {
  setInterval(() => {}, 1 << 30);
  return new Promise<WireResponse>(() => {});
}

async function answer(req: WireRequest): Promise<WireResponse> {
  const id = req.request_id;
  const ok = { code: StatusCode.OK };
  if (req.hello) {
    return {
      request_id: id,
      status: ok,
      hello: {
        protocol_version: ADPP_PROTOCOL_VERSION,
        provider_name: "readback-test",
        provider_version: "0.0.1",
      },
    };
  }
  if (req.list_devices) {
    return {
      request_id: id,
      status: ok,
      list_devices: { devices: Object.keys(script).map((device_id) => ({ device_id })) },
    };
  }
  const deviceId = req.describe_device?.device_id ?? req.read_signals?.device_id ??
    req.call?.device_id ?? "";
  const dev = script[deviceId];
  if (!dev) return fail(id, StatusCode.NOT_FOUND, `no device ${deviceId}`);
  if (req.describe_device) {
    return {
      request_id: id,
      status: ok,
      describe_device: {
        device: { device_id: deviceId, type_id: "test.readback", label: deviceId },
        capabilities: {
          signals: Object.entries(dev.signals).map(([signal_id, t]) => ({
            signal_id,
            name: signal_id,
            value_type: WIRE_TYPE[t],
            poll_hint_hz: 0,
          })),
          functions: dev.actuate
            ? [{ function_id: 1, name: "set_output", policy: { category: 3 }, args: [] }]
            : [],
        },
      },
    };
  }
  if (req.call) {
    if (logFile) Deno.writeTextFileSync(logFile, `call ${deviceId} set_output\n`, { append: true });
    if (dev.actuate === "unavailable") {
      return fail(id, StatusCode.UNAVAILABLE, "scripted call failure");
    }
    return { request_id: id, status: ok, call: {} };
  }
  if (req.read_signals) {
    const ids = req.read_signals.signal_ids ?? [];
    if (logFile) {
      Deno.writeTextFileSync(logFile, `${deviceId} ${ids.join(",")}\n`, { append: true });
    }
    if (dev.delayMs) await new Promise((r) => setTimeout(r, dev.delayMs));
    const n = readCount.get(deviceId) ?? 0;
    readCount.set(deviceId, n + 1);
    if (n >= dev.reads.length && dev.then === "hang") return never();
    if (n >= dev.reads.length && dev.then === "fail") {
      return fail(id, StatusCode.UNAVAILABLE, "scripted read failure");
    }
    const entry = dev.reads[Math.min(n, dev.reads.length - 1)] ?? {};
    const values = Object.entries(entry).map(([sid, s]) => sample(dev, sid, s));
    return { request_id: id, status: ok, read_signals: { device_id: deviceId, values } };
  }
  return fail(id, StatusCode.UNIMPLEMENTED, "not implemented");
}

const writer = Deno.stdout.writable.getWriter();
for await (const frame of Deno.stdin.readable.pipeThrough(new FrameDecoderStream())) {
  const res = await answer(decodeRequest(frame));
  await writer.write(encodeFrame(encodeResponse(res)));
}
