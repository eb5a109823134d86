/**
 * A misbehaving ADPP provider for the provider-data scenarios, run as a real child process:
 * `deno run tests/scenarios/_data_provider.ts <scenario>`. It speaks raw frames through the
 * codec (the provider SDK would refuse to send most of what these scenarios need).
 *
 * Scenarios:
 * - `discovery`: ListDevices lists a, b, ".", "..", a again, "", c, "d\u0000" and e;
 *   DescribeDevice(b) answers for device a (a rename attempt), DescribeDevice(c) answers without a
 *   device id, DescribeDevice(e) declares signal "x\r".
 * - `many_bad`: ListDevices lists device ok, then ok 30 times more (31 entries, 30 duplicates).
 * - `values`: devices `ints` (exact 64-bit integers), `types` (type mismatches, NaN/±Infinity),
 *   `missing` (declared signals answered without a value) and `junk` (50 undeclared signal ids
 *   per poll). Function `drop_values` (READ, id 1) on `missing` makes `fading` lose its value.
 * - `overlap`: device `slow0` answers ReadSignals after 150 ms, handling requests concurrently,
 *   and reports the most ReadSignals it ever had in flight as signal `max_inflight` and the
 *   number of ReadSignals it received (this one included) as `reads`. Function
 *   `ping` (READ, id 1) answers at once.
 * - `descriptors`: device `tagged` declares a 201-byte type_version ("v" and 100 "é") and 42
 *   descriptor tags: `long` (100 "ü", 200 bytes), a key of 129 bytes, and `t00`..`t39`; device
 *   `bare` declares neither.
 */
import { ADPP_PROTOCOL_VERSION } from "../../src/common/mod.ts";
import {
  decodeRequest,
  encodeFrame,
  encodeResponse,
  FrameDecoderStream,
  type RequestPayloads,
  type ResponsePayloads,
  StatusCode,
  type WireRequest,
  type WireResponse,
  type WireSignalSpec,
  type WireSignalValue,
  type WireValue,
  WireValueType,
} from "../../src/adpp/mod.ts";

const scenario = Deno.args[0] ?? "";
const T = WireValueType;
const QUALITY_OK = 1;
const QUALITY_UNKNOWN = 4;
const READ = 1;

function signal(id: string, type: number, pollHintHz = 10): WireSignalSpec {
  return { signal_id: id, name: id, value_type: type, poll_hint_hz: pollHintHz };
}

function sample(id: string, value: WireValue | undefined, quality = QUALITY_OK): WireSignalValue {
  const nowMs = Date.now();
  return {
    signal_id: id,
    ...(value ? { value } : {}),
    timestamp: { seconds: Math.floor(nowMs / 1000), nanos: (nowMs % 1000) * 1e6 },
    quality,
  };
}

interface Device {
  describe(): ResponsePayloads["describe_device"];
  read(req: RequestPayloads["read_signals"]): Promise<WireSignalValue[]> | WireSignalValue[];
  call?(req: RequestPayloads["call"]): ResponsePayloads["call"];
}

interface Scenario {
  list: string[];
  devices: Record<string, Device>;
  /** Handle requests as they arrive instead of one at a time. */
  concurrent?: boolean;
}

function plain(id: string, label: string, answerAs = id): Device {
  return {
    describe: () => ({
      device: { device_id: answerAs, type_id: "test.plain", label },
      capabilities: {
        signals: [signal("x", T.DOUBLE)],
        functions: [{ function_id: 7, name: `act_${id}`, policy: { category: 3 }, args: [] }],
      },
    }),
    read: () => [sample("x", { type: T.DOUBLE, double_value: 1 })],
  };
}

function discoveryScenario(): Scenario {
  return {
    list: ["a", "b", ".", "..", "a", "", "c", "d\u0000", "e"],
    devices: {
      a: plain("a", "Device A"),
      "d\u0000": plain("d\u0000", "Device D"),
      e: {
        ...plain("e", "Device E"),
        describe: () => ({
          device: { device_id: "e", type_id: "test.plain", label: "Device E" },
          capabilities: { signals: [signal("x\r", T.DOUBLE)], functions: [] },
        }),
      },
      b: plain("b", "Device B claiming to be A", "a"),
      ".": plain(".", "Dot"),
      "..": plain("..", "Dot dot"),
      c: plain("c", "Device C", ""),
    },
  };
}

function manyBadScenario(): Scenario {
  return { list: Array(31).fill("ok"), devices: { ok: plain("ok", "The only one") } };
}

function valuesScenario(): Scenario {
  let polls = 0;
  let dropped = false;
  return {
    list: ["ints", "types", "missing", "junk"],
    devices: {
      ints: {
        describe: () => ({
          device: { device_id: "ints" },
          capabilities: {
            signals: [
              signal("u64_max", T.UINT64),
              signal("i64_min", T.INT64),
              signal("i64_max", T.INT64),
              signal("small", T.INT64),
              signal("big_counter", T.UINT64),
            ],
          },
        }),
        read: () => {
          polls++;
          return [
            sample("u64_max", { type: T.UINT64, uint64_value: 18446744073709551615n }),
            sample("i64_min", { type: T.INT64, int64_value: -9223372036854775808n }),
            sample("i64_max", { type: T.INT64, int64_value: 9223372036854775807n }),
            sample("small", { type: T.INT64, int64_value: -42 }),
            // Alternates between 2^64-1 and 2^64-2 (one double apart from neither): every poll
            // is a change only when the runtime keeps the value exact.
            sample("big_counter", {
              type: T.UINT64,
              uint64_value: 18446744073709551615n - BigInt(polls % 2),
            }),
          ];
        },
      },
      types: {
        describe: () => ({
          device: { device_id: "types" },
          capabilities: {
            signals: [
              signal("flag", T.BOOL),
              signal("level", T.DOUBLE),
              signal("count", T.INT64),
              signal("nan", T.DOUBLE),
              signal("pinf", T.DOUBLE),
              signal("ninf", T.DOUBLE),
              signal("good", T.DOUBLE),
            ],
          },
        }),
        read: () => [
          // A string on a bool signal.
          sample("flag", { type: T.STRING, string_value: "true" }),
          // Value.type says INT64, the member is a double.
          sample("level", { type: T.INT64, double_value: 3.5 }),
          // A uint64 on an int64 signal.
          sample("count", { type: T.UINT64, uint64_value: 5 }),
          sample("nan", { type: T.DOUBLE, double_value: NaN }),
          sample("pinf", { type: T.DOUBLE, double_value: Infinity }),
          sample("ninf", { type: T.DOUBLE, double_value: -Infinity }),
          sample("good", { type: T.DOUBLE, double_value: 2.5 }),
        ],
      },
      missing: {
        describe: () => ({
          device: { device_id: "missing" },
          capabilities: {
            signals: [signal("absent", T.DOUBLE), signal("fading", T.DOUBLE)],
            functions: [{ function_id: 1, name: "drop_values", policy: { category: READ } }],
          },
        }),
        read: () => [
          // As the Atlas EZO provider answers a disabled output.
          { ...sample("absent", undefined, QUALITY_UNKNOWN), metadata: { reason: "unavailable" } },
          dropped
            ? sample("fading", undefined, QUALITY_UNKNOWN)
            : sample("fading", { type: T.DOUBLE, double_value: 7.25 }),
        ],
        call: () => {
          dropped = true;
          return {};
        },
      },
      junk: {
        describe: () => ({
          device: { device_id: "junk" },
          capabilities: { signals: [signal("real", T.DOUBLE), signal("quiet", T.DOUBLE, 0)] },
        }),
        read: () => {
          const out = [sample("real", { type: T.DOUBLE, double_value: 1 })];
          // Declared without a poll hint: never requested, answered anyway.
          out.push(sample("quiet", { type: T.DOUBLE, double_value: 9 }));
          for (let k = 0; k < 50; k++) {
            out.push(sample(`junk_${polls}_${k}`, { type: T.DOUBLE, double_value: k }));
          }
          return out;
        },
      },
    },
  };
}

function overlapScenario(): Scenario {
  let inflight = 0;
  let maxInflight = 0;
  let reads = 0;
  return {
    concurrent: true,
    list: ["slow0"],
    devices: {
      slow0: {
        describe: () => ({
          device: { device_id: "slow0" },
          capabilities: {
            signals: [signal("max_inflight", T.INT64), signal("reads", T.INT64)],
            functions: [{ function_id: 1, name: "ping", policy: { category: READ } }],
          },
        }),
        read: async () => {
          const n = ++reads;
          inflight++;
          maxInflight = Math.max(maxInflight, inflight);
          await new Promise((r) => setTimeout(r, 150));
          inflight--;
          return [
            sample("max_inflight", { type: T.INT64, int64_value: maxInflight }),
            sample("reads", { type: T.INT64, int64_value: n }),
          ];
        },
        call: () => ({}),
      },
    },
  };
}

function descriptorsScenario(): Scenario {
  const tags: Record<string, string> = { long: "ü".repeat(100), ["k".repeat(129)]: "dropped" };
  for (let k = 0; k < 40; k++) tags[`t${String(k).padStart(2, "0")}`] = "x";
  const device = (id: string, extra: object): Device => ({
    describe: () => ({
      device: { device_id: id, type_id: "test.descriptor", ...extra },
      capabilities: { signals: [signal("x", T.DOUBLE)] },
    }),
    read: () => [sample("x", { type: T.DOUBLE, double_value: 1 })],
  });
  return {
    list: ["tagged", "bare"],
    devices: {
      tagged: device("tagged", { type_version: `v${"é".repeat(100)}`, tags }),
      bare: device("bare", {}),
    },
  };
}

const SCENARIOS: Record<string, () => Scenario> = {
  descriptors: descriptorsScenario,
  discovery: discoveryScenario,
  many_bad: manyBadScenario,
  values: valuesScenario,
  overlap: overlapScenario,
};

const make = SCENARIOS[scenario];
if (!make) {
  console.error(`unknown scenario '${scenario}' (known: ${Object.keys(SCENARIOS).join(", ")})`);
  Deno.exit(1);
}
const sc = make();

function fail(code: number, message: string): Pick<WireResponse, "status"> {
  return { status: { code, message } };
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
        provider_name: `data-test-${scenario}`,
        provider_version: "0.0.1",
      },
    };
  }
  if (req.list_devices) {
    return {
      request_id: id,
      status: ok,
      list_devices: { devices: sc.list.map((device_id) => ({ device_id })) },
    };
  }
  const deviceId = req.describe_device?.device_id ?? req.read_signals?.device_id ??
    req.call?.device_id;
  const dev = deviceId !== undefined ? sc.devices[deviceId] : undefined;
  if (req.describe_device || req.read_signals || req.call) {
    if (!dev) return { request_id: id, ...fail(StatusCode.NOT_FOUND, `no device ${deviceId}`) };
    if (req.describe_device) return { request_id: id, status: ok, describe_device: dev.describe() };
    if (req.read_signals) {
      const values = await dev.read(req.read_signals);
      return { request_id: id, status: ok, read_signals: { device_id: deviceId!, values } };
    }
    if (!dev.call) return { request_id: id, ...fail(StatusCode.UNIMPLEMENTED, "no functions") };
    return { request_id: id, status: ok, call: dev.call(req.call!) };
  }
  return { request_id: id, ...fail(StatusCode.UNIMPLEMENTED, "not implemented") };
}

const writer = Deno.stdout.writable.getWriter();
async function serve(bytes: Uint8Array): Promise<void> {
  const res = await answer(decodeRequest(bytes));
  await writer.write(encodeFrame(encodeResponse(res)));
}

const pending = new Set<Promise<void>>();
for await (const frame of Deno.stdin.readable.pipeThrough(new FrameDecoderStream())) {
  if (sc.concurrent) {
    const p = serve(frame).finally(() => pending.delete(p));
    pending.add(p);
  } else {
    await serve(frame);
  }
}
await Promise.all(pending);
