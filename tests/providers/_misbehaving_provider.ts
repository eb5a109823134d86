/**
 * An ADPP provider that misbehaves on purpose, run as a real child process:
 * `deno run --allow-read tests/providers/_misbehaving_provider.ts PLAN_JSON_FILE`.
 * It speaks raw frames through the codec (the provider SDK would never send what it sends) and
 * answers requests in order. The plan (`MisbehaviourPlan`) is read from the file at start.
 *
 * Every device declares the signals of its `values` (double or bool, polled at 20 Hz) and answers
 * ReadSignals with them; it declares function 1 `stop` (ACTUATE, no arguments; `functionName`
 * names it otherwise), answered OK with result `done_by` (the device that answers). Misbehaviour:
 *   answerReadAs  {asked: other}: a ReadSignals of `asked` is answered with device_id `other`
 *                 and the values of `other` (a provider that mixed its devices up);
 *   answerCallAs  {asked: other}: a Call to `asked` is answered with device_id `other`.
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
  type WireSignalValue,
  WireValueType,
} from "../../src/adpp/mod.ts";

/** What the provider lists, and how it misbehaves. */
export interface MisbehaviourPlan {
  /** Device id -> its signals' values (a number is a double, a boolean a bool). */
  readonly devices: Readonly<Record<string, Readonly<Record<string, number | boolean>>>>;
  readonly answerReadAs?: Readonly<Record<string, string>>;
  readonly answerCallAs?: Readonly<Record<string, string>>;
  /** The name function 1 is declared with (default `stop`). */
  readonly functionName?: string;
}

const plan = JSON.parse(Deno.readTextFileSync(Deno.args[0]!)) as MisbehaviourPlan;
const OK = { code: StatusCode.OK };

function wireType(v: number | boolean): number {
  return typeof v === "boolean" ? WireValueType.BOOL : WireValueType.DOUBLE;
}

function sample(id: string, v: number | boolean): WireSignalValue {
  return {
    signal_id: id,
    value: typeof v === "boolean"
      ? { type: WireValueType.BOOL, bool_value: v }
      : { type: WireValueType.DOUBLE, double_value: v },
    quality: 1,
  };
}

function answer(req: WireRequest): WireResponse {
  const id = req.request_id;
  if (req.hello) {
    return {
      request_id: id,
      status: OK,
      hello: { protocol_version: ADPP_PROTOCOL_VERSION, provider_name: "misbehaving" },
    };
  }
  if (req.list_devices) {
    return {
      request_id: id,
      status: OK,
      list_devices: { devices: Object.keys(plan.devices).map((device_id) => ({ device_id })) },
    };
  }
  if (req.get_health) return { request_id: id, status: OK, get_health: {} };
  const deviceId = req.describe_device?.device_id ?? req.read_signals?.device_id ??
    req.call?.device_id ?? "";
  const values = plan.devices[deviceId];
  if (!values) return { request_id: id, status: { code: StatusCode.NOT_FOUND, message: deviceId } };
  if (req.describe_device) {
    return {
      request_id: id,
      status: OK,
      describe_device: {
        device: { device_id: deviceId, type_id: "test.misbehaving" },
        capabilities: {
          signals: Object.entries(values).map(([signal_id, v]) => ({
            signal_id,
            name: signal_id,
            value_type: wireType(v),
            poll_hint_hz: 20,
          })),
          functions: [{
            function_id: 1,
            name: plan.functionName ?? "stop",
            policy: { category: 3 },
            args: [],
          }],
        },
      },
    };
  }
  if (req.read_signals) {
    const as = plan.answerReadAs?.[deviceId] ?? deviceId;
    const answered = plan.devices[as] ?? {};
    return {
      request_id: id,
      status: OK,
      read_signals: {
        device_id: as,
        values: Object.entries(answered).map(([k, v]) => sample(k, v)),
      },
    };
  }
  if (req.call) {
    const as = plan.answerCallAs?.[deviceId] ?? deviceId;
    return {
      request_id: id,
      status: OK,
      call: {
        device_id: as,
        results: { done_by: { type: WireValueType.STRING, string_value: as } },
      },
    };
  }
  return { request_id: id, status: { code: StatusCode.UNIMPLEMENTED, message: "no such request" } };
}

const writer = Deno.stdout.writable.getWriter();
for await (const frame of Deno.stdin.readable.pipeThrough(new FrameDecoderStream())) {
  await writer.write(encodeFrame(encodeResponse(answer(decodeRequest(frame)))));
}
Deno.exit(0);
