import {
  type DeviceDefinition,
  MAX_FRAME_BYTES,
  ProviderError,
  type ReplyContext,
  type RequestPayloads,
} from "../../../src/provider_sdk/mod.ts";
import type { SeededRandom } from "./rng.ts";

/** Device id of the fault-injection device (reserved, always listed last). */
export const CHAOS_DEVICE_ID = "chaos_control";

/** Active injected faults. Expiry is checked lazily on use, like the reference. */
export class ChaosState {
  readonly #monoMs: () => number;
  readonly #rng: SeededRandom;
  /** device_id -> expiry (monotonic ms). */
  readonly #unavailable = new Map<string, number>();
  /** Stacked signal faults: each `device/signal` with its own expiry. */
  #signalFaults: Array<{ deviceId: string; signalId: string; until: number }> = [];
  readonly #latencyMs = new Map<string, number>();
  /** `device_id\u0000function_id` -> failure rate. */
  readonly #failureRate = new Map<string, number>();
  /** device_id -> expiry (monotonic ms) of a stuck-output fault. */
  readonly #stuck = new Map<string, number>();

  constructor(monoMs: () => number, rng: SeededRandom) {
    this.#monoMs = monoMs;
    this.#rng = rng;
  }

  /** True while an injected "device unavailable" fault is active for the device. */
  isUnavailable(deviceId: string): boolean {
    const until = this.#unavailable.get(deviceId);
    if (until === undefined) return false;
    if (this.#monoMs() < until) return true;
    this.#unavailable.delete(deviceId);
    return false;
  }

  /** True while at least one signal fault for that signal is active. */
  hasSignalFault(deviceId: string, signalId: string): boolean {
    const now = this.#monoMs();
    this.#signalFaults = this.#signalFaults.filter((f) => now < f.until);
    return this.#signalFaults.some((f) => f.deviceId === deviceId && f.signalId === signalId);
  }

  /** True while writes to the device are acknowledged without changing its outputs. */
  hasStuckOutputs(deviceId: string): boolean {
    const until = this.#stuck.get(deviceId);
    if (until === undefined) return false;
    if (this.#monoMs() < until) return true;
    this.#stuck.delete(deviceId);
    return false;
  }

  /** Injected latency for calls to the device (0 when none). */
  callLatencyMs(deviceId: string): number {
    return this.#latencyMs.get(deviceId) ?? 0;
  }

  /** Rolls the dice for an injected call failure; true means the call must fail. */
  rollCallFailure(deviceId: string, functionId: number): boolean {
    const rate = this.#failureRate.get(`${deviceId}\u0000${functionId}`);
    if (rate === undefined || rate <= 0) return false;
    return this.#rng.next() < rate;
  }

  makeUnavailable(deviceId: string, durationMs: number): void {
    this.#unavailable.set(deviceId, this.#monoMs() + durationMs);
  }

  addSignalFault(deviceId: string, signalId: string, durationMs: number): void {
    this.#signalFaults.push({ deviceId, signalId, until: this.#monoMs() + durationMs });
  }

  setStuckOutputs(deviceId: string, durationMs: number): void {
    this.#stuck.set(deviceId, this.#monoMs() + durationMs);
  }

  setCallLatency(deviceId: string, latencyMs: number): void {
    this.#latencyMs.set(deviceId, latencyMs);
  }

  setCallFailure(deviceId: string, functionId: number, rate: number): void {
    this.#failureRate.set(`${deviceId}\u0000${functionId}`, rate);
  }

  clear(): void {
    this.#unavailable.clear();
    this.#signalFaults = [];
    this.#latencyMs.clear();
    this.#failureRate.clear();
    this.#stuck.clear();
  }
}

/** What the chaos device needs from the process. */
export interface ChaosHost {
  /** Ends the process with this code (after the reply was written). */
  exit(code: number): void;
  /** Resolves after `ms` milliseconds. */
  sleep(ms: number): Promise<void>;
  /** Never resolves and keeps the process alive (an endless hang). */
  hangForever(): Promise<never>;
}

/** Payload of the garbage frame: not a parseable Response (an unterminated varint tag). */
export const GARBAGE_FRAME = new Uint8Array([0x03, 0x00, 0x00, 0x00, 0xff, 0xff, 0xff]);
/** Length prefix announcing 2 MiB (over the 1 MiB limit), followed by a few payload bytes. */
export const OVERSIZE_FRAME_BYTES = 2 * MAX_FRAME_BYTES;

function oversizeFrame(): Uint8Array {
  const out = new Uint8Array(4 + 8);
  new DataView(out.buffer).setUint32(0, OVERSIZE_FRAME_BYTES, true);
  return out;
}

const ms = { unit: "ms" } as const;

/** The chaos_control device: README.md, "Fault injection" (1-5 as the reference sim, 6-10 ours). */
export function createChaosDevice(chaos: ChaosState, host: ChaosHost): DeviceDefinition {
  return {
    deviceId: CHAOS_DEVICE_ID,
    typeId: "chaos.control",
    typeVersion: "1.0",
    label: "Chaos Fault Injection Control",
    address: "chaos://control",
    tags: { family: "chaos", kind: "fault_injection" },
    signals: [],
    functions: [
      {
        id: 1,
        name: "inject_device_unavailable",
        description: "Make a device unavailable for duration_ms",
        category: "ACTUATE",
        args: [{ name: "device_id", type: "string" }, {
          name: "duration_ms",
          type: "int64",
          ...ms,
        }],
        handler: (args) => {
          const deviceId = args.string("device_id");
          chaos.makeUnavailable(deviceId, positive(args.int64("duration_ms"), "duration_ms"));
        },
      },
      {
        id: 2,
        name: "inject_signal_fault",
        description: "Report a signal with QUALITY_FAULT for duration_ms",
        category: "ACTUATE",
        args: [
          { name: "device_id", type: "string" },
          { name: "signal_id", type: "string" },
          { name: "duration_ms", type: "int64", ...ms },
        ],
        handler: (args) => {
          const deviceId = args.string("device_id");
          const signalId = args.string("signal_id");
          chaos.addSignalFault(
            deviceId,
            signalId,
            positive(args.int64("duration_ms"), "duration_ms"),
          );
        },
      },
      {
        id: 3,
        name: "inject_call_latency",
        description: "Delay every call to a device by latency_ms (until clear_faults)",
        category: "ACTUATE",
        args: [{ name: "device_id", type: "string" }, { name: "latency_ms", type: "int64", ...ms }],
        handler: (args) => {
          const deviceId = args.string("device_id");
          const latency = args.int64("latency_ms");
          if (latency < 0) throw ProviderError.invalidArgument("latency_ms must be >= 0");
          chaos.setCallLatency(deviceId, latency);
        },
      },
      {
        id: 4,
        name: "inject_call_failure",
        description: "Fail calls of one function with failure_rate probability",
        category: "ACTUATE",
        args: [
          { name: "device_id", type: "string" },
          { name: "function_id", type: "string" },
          { name: "failure_rate", type: "double" },
        ],
        handler: (args) => {
          const deviceId = args.string("device_id");
          const fid = args.string("function_id");
          const rate = args.double("failure_rate");
          if (!/^[0-9]+$/.test(fid) || Number(fid) === 0 || Number(fid) > 0xffffffff) {
            throw ProviderError.invalidArgument(
              `function_id must be a decimal function id >= 1, got '${fid}'`,
            );
          }
          if (!(rate >= 0 && rate <= 1)) {
            throw ProviderError.invalidArgument(`failure_rate must be in [0, 1], got ${rate}`);
          }
          chaos.setCallFailure(deviceId, Number(fid), rate);
        },
      },
      {
        id: 5,
        name: "clear_faults",
        description: "Remove every injected fault",
        category: "ACTUATE",
        handler: () => chaos.clear(),
      },
      {
        id: 6,
        name: "crash",
        description: "Reply OK, then exit the process with exit_code",
        category: "ACTUATE",
        args: [{ name: "exit_code", type: "int64", min: 0, max: 255 }],
        handler: (args, ctx) => {
          const code = args.int64("exit_code");
          ctx.afterReply(() => host.exit(code));
        },
      },
      {
        id: 7,
        name: "hang",
        description: "Reply OK, then stop reading and answering for duration_ms (0 = forever)",
        category: "ACTUATE",
        args: [{ name: "duration_ms", type: "int64", min: 0, ...ms }],
        handler: (args, ctx) => {
          const duration = args.int64("duration_ms");
          ctx.afterReply(() => duration === 0 ? host.hangForever() : host.sleep(duration));
        },
      },
      {
        id: 8,
        name: "send_garbage_frame",
        description: "Answer with a frame whose payload is not a parseable Response",
        category: "ACTUATE",
        handler: (_args, ctx) => ctx.replaceReplyWithRawBytes(GARBAGE_FRAME),
      },
      {
        id: 9,
        name: "send_oversize_frame",
        description: "Answer with a length prefix of 2 MiB (over the 1 MiB limit)",
        category: "ACTUATE",
        handler: (_args, ctx) => ctx.replaceReplyWithRawBytes(oversizeFrame()),
      },
      {
        id: 10,
        name: "inject_stuck_outputs",
        description:
          "Acknowledge calls to a device without changing its outputs for duration_ms (an actuator that does not obey)",
        category: "ACTUATE",
        args: [
          { name: "device_id", type: "string" },
          { name: "duration_ms", type: "int64", min: 1, ...ms },
        ],
        handler: (args) => {
          chaos.setStuckOutputs(args.string("device_id"), args.int64("duration_ms"));
        },
      },
    ],
  };
}

function positive(v: number, name: string): number {
  if (v <= 0) throw ProviderError.invalidArgument(`${name} must be > 0, got ${v}`);
  return v;
}

/**
 * The call path faults, in the reference order: unavailable -> latency -> failure roll. Applies
 * to calls on chaos_control too.
 */
export async function applyCallFaults(
  chaos: ChaosState,
  host: ChaosHost,
  req: RequestPayloads["call"],
  _ctx: ReplyContext,
): Promise<void> {
  const deviceId = req.device_id ?? "";
  if (chaos.isUnavailable(deviceId)) {
    throw ProviderError.invalidArgument("device unavailable (injected fault)");
  }
  const latency = chaos.callLatencyMs(deviceId);
  if (latency > 0) await host.sleep(latency);
  if (chaos.rollCallFailure(deviceId, req.function_id ?? 0)) {
    throw ProviderError.invalidArgument("function call failed (injected fault)");
  }
}
