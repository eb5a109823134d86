/**
 * Micro-benchmark of the ADPP codec on the poll path: the runtime encodes a ReadSignals request
 * and decodes its answer (a typical device: 4 signals); a provider built on the SDK does the
 * opposite. Run: `deno bench bench/adpp_codec.bench.ts`. Not a test; no timing is asserted.
 */
import {
  decodeRequest,
  decodeResponse,
  encodeRequest,
  encodeResponse,
  type WireRequest,
  type WireResponse,
  type WireSignalValue,
  type WireValue,
  WireValueType,
} from "../src/adpp/mod.ts";

const REQUEST: WireRequest = {
  request_id: 123_456,
  read_signals: { device_id: "tempctl0", signal_ids: [] },
};

const SIGNALS: Array<[string, WireValue]> = [
  ["tc1_temp", { type: WireValueType.DOUBLE, double_value: 24.53 }],
  ["relay1_state", { type: WireValueType.BOOL, bool_value: true }],
  ["control_mode", { type: WireValueType.STRING, string_value: "closed" }],
  ["cycle_count", { type: WireValueType.INT64, int64_value: 100_042 }],
];

const RESPONSE: WireResponse = {
  request_id: 123_456,
  status: { code: 1 },
  read_signals: {
    device_id: "tempctl0",
    values: SIGNALS.map(([signal_id, value]): WireSignalValue => ({
      signal_id,
      value,
      timestamp: { seconds: 1_760_000_000, nanos: 500_000_000 },
      quality: 1,
    })),
  },
};

const REQUEST_BYTES = encodeRequest(REQUEST);
const RESPONSE_BYTES = encodeResponse(RESPONSE);

Deno.bench("runtime: encode ReadSignals request", { group: "runtime" }, () => {
  encodeRequest(REQUEST);
});

Deno.bench("runtime: decode ReadSignals response, 4 signals", { group: "runtime" }, () => {
  decodeResponse(RESPONSE_BYTES);
});

Deno.bench("provider: decode ReadSignals request", { group: "provider" }, () => {
  decodeRequest(REQUEST_BYTES);
});

Deno.bench("provider: encode ReadSignals response, 4 signals", { group: "provider" }, () => {
  encodeResponse(RESPONSE);
});
