/**
 * The scripted read-back provider's script and its samples on the wire, shared by the child
 * (tests/safety/_readback_provider.ts) and its in-process twin (readback_program.ts). The
 * script's format is described in _readback_provider.ts.
 */
import {
  WireQuality,
  type WireSignalValue,
  type WireValue,
  WireValueType,
} from "../../src/adpp/mod.ts";

export type SignalType = "bool" | "double" | "int64" | "uint64" | "string";

/** One sample of a scripted read: `v` left out, no value; `q` left out, OK. */
export interface ReadbackSample {
  v?: boolean | number | string;
  q?: keyof typeof WireQuality;
}

/** One device of the scripted provider (see _readback_provider.ts). */
export interface DeviceScript {
  signals: Record<string, SignalType>;
  reads: Array<Record<string, ReadbackSample>>;
  then?: "repeat" | "hang" | "fail";
  delayMs?: number;
  actuate?: "ok" | "unavailable";
}

export const WIRE_TYPE: Record<SignalType, number> = {
  bool: WireValueType.BOOL,
  double: WireValueType.DOUBLE,
  int64: WireValueType.INT64,
  uint64: WireValueType.UINT64,
  string: WireValueType.STRING,
};

function wireValue(type: SignalType, v: boolean | number | string): WireValue {
  switch (type) {
    case "bool":
      return { type: WIRE_TYPE.bool, bool_value: v as boolean };
    case "double":
      return { type: WIRE_TYPE.double, double_value: v as number };
    case "int64":
      return {
        type: WIRE_TYPE.int64,
        int64_value: typeof v === "string" ? BigInt(v) : v as number,
      };
    case "uint64":
      return {
        type: WIRE_TYPE.uint64,
        uint64_value: typeof v === "string" ? BigInt(v) : v as number,
      };
    case "string":
      return { type: WIRE_TYPE.string, string_value: v as string };
  }
}

export function sample(dev: DeviceScript, id: string, s: ReadbackSample): WireSignalValue {
  const nowMs = Date.now();
  return {
    signal_id: id,
    ...(s.v !== undefined ? { value: wireValue(dev.signals[id]!, s.v) } : {}),
    timestamp: { seconds: Math.floor(nowMs / 1000), nanos: (nowMs % 1000) * 1e6 },
    quality: WireQuality[s.q ?? "OK"],
  };
}
