/**
 * The programmable provider's samples on the wire, shared by its child process
 * (_programmable_provider.ts) and its in-process twin (programmable_provider.ts): what a `Sample`
 * becomes in a ReadSignals answer, as given (no checks).
 */
import type { WireSignalValue, WireValue } from "../../src/adpp/mod.ts";
import type { Sample } from "./programmable_provider.ts";

/** The Value of a sample; undefined for a sample without a value (no member and no type). */
export function wireValue(s: Sample): WireValue | undefined {
  const v: WireValue = s.type !== undefined ? { type: s.type } : {};
  if (s.double !== undefined) v.double_value = Number(s.double);
  else if (s.int64 !== undefined) v.int64_value = BigInt(s.int64);
  else if (s.uint64 !== undefined) v.uint64_value = BigInt(s.uint64);
  else if (s.bool !== undefined) v.bool_value = s.bool;
  else if (s.string !== undefined) v.string_value = s.string;
  else if (s.bytes !== undefined) {
    v.bytes_value = Uint8Array.from(atob(s.bytes), (c) => c.charCodeAt(0));
  } else if (s.type === undefined) return undefined;
  return v;
}

/** One SignalValue of a ReadSignals answer (quality default 1, OK; no `ts`: no timestamp). */
export function wireSample(s: Sample): WireSignalValue {
  const value = wireValue(s);
  return {
    signal_id: s.id,
    ...(value ? { value } : {}),
    ...(s.ts !== undefined
      ? { timestamp: { seconds: Math.floor(s.ts / 1000), nanos: (s.ts % 1000) * 1e6 } }
      : {}),
    quality: s.quality ?? 1,
  };
}

/**
 * The poll hint a signal declares unless it says otherwise: 20 Hz, so that the runtime polls the
 * device every cycle at the fastest interval these tests use (50 ms); a slower hint makes the
 * runtime poll the device only every k-th cycle (docs/http-api.md, Provider policies).
 */
export const DEFAULT_POLL_HINT_HZ = 20;
