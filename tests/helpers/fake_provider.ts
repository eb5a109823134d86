/**
 * The fake provider of the unit tests: a DeviceProvider (the provider SDK's, so every answer is
 * real ADPP with the SDK's checks) whose answers a test can replace while it runs, and which
 * records every request it received. Served in-process by tests/helpers/in_process_provider.ts
 * (or by runStdioProvider in a child). tests/contract/provider_contract_test.ts keeps it honest
 * against the simulated provider as a real child process.
 *
 *   const fake = new FakeProvider([plantDevice()]);
 *   fake.answer("read_signals", { error: { code: WireStatusCode.UNAVAILABLE } }, "plant0");
 *   fake.answer("get_health", { hang: true });
 *   fake.count("read_signals", "plant0");
 *
 * Like every SDK provider it serves one request at a time: a delayed or hung answer holds the
 * requests behind it.
 */
import {
  type DeviceDefinition,
  DeviceProvider,
  type DeviceProviderOptions,
  type FunctionDefinition,
  ProviderError,
  type ProviderHandler,
  type ReplyContext,
  type RequestPayloads,
  type ResponsePayloads,
  toWireValue,
  type WireStatusCodeNumber,
} from "../../src/provider_sdk/mod.ts";
import type { ProgramHost } from "./in_process_provider.ts";

/** An ADPP operation: `hello`, `wait_ready`, `list_devices`, ... */
export type RequestKind = keyof RequestPayloads;

/**
 * How a request is answered instead of the provider's own answer. Applied in this order: wait
 * `delayMs`; then `hang`, `exit`, `error` or `reply`; with none of them, the provider's own answer.
 */
export interface FakeAnswer<K extends RequestKind = RequestKind> {
  /** Answer this many ms later (the requests behind it wait: one request at a time). */
  readonly delayMs?: number;
  /** Never answer (and so never answer anything after it). */
  readonly hang?: boolean;
  /** The process exits with this code instead of answering. */
  readonly exit?: number;
  /** Answer with this status (wire Status.Code) and no payload. */
  readonly error?: { readonly code: number; readonly message?: string };
  /**
   * Answer with this payload as given: nothing is checked, so it may carry what the SDK would
   * refuse (a value of another type, NaN, no timestamp). A function gets the request and how many
   * requests of this kind (for this device) came before it; it may answer later (a promise), and
   * fail the request by throwing a ProviderError.
   */
  readonly reply?:
    | ResponsePayloads[K]
    | ((
      req: RequestPayloads[K],
      n: number,
    ) => ResponsePayloads[K] | Promise<ResponsePayloads[K]>);
}

/** One request the fake received. */
export interface FakeRequest {
  readonly kind: RequestKind;
  /** The device it names (DescribeDevice, ReadSignals, Call); "" for the others. */
  readonly device: string;
  readonly payload: RequestPayloads[RequestKind];
}

/** Options of a FakeProvider over device declarations (the SDK's DeviceProviderOptions). */
export interface FakeProviderOptions extends Partial<DeviceProviderOptions> {
  /** The process it runs in: scripted delays sleep, hangs and exits through it. */
  readonly host?: ProgramHost;
}

/**
 * A scriptable provider (see the module comment): the SDK's DeviceProvider over `devices`, or
 * any other ProviderHandler (the simulated provider), behind answers a test may replace.
 */
export class FakeProvider implements ProviderHandler {
  /** The provider answering what is not scripted. */
  readonly inner: ProviderHandler;
  /** Every request received, in arrival order. */
  readonly requests: FakeRequest[] = [];
  /** The inner provider's safe state (absent when it declares none). */
  readonly applySafeState?: NonNullable<ProviderHandler["applySafeState"]>;
  readonly #answers = new Map<string, FakeAnswer>();
  readonly #host: ProgramHost | undefined;

  constructor(
    provider: readonly DeviceDefinition[] | ProviderHandler = [],
    o: FakeProviderOptions = {},
  ) {
    this.inner = Array.isArray(provider)
      ? new DeviceProvider({ name: "fake", version: "0.0.1", ...o }, provider)
      : provider as ProviderHandler;
    this.#host = o.host;
    const inner = this.inner;
    if (inner.applySafeState !== undefined) {
      this.applySafeState = (reason) => inner.applySafeState!(reason);
    }
  }

  /**
   * From now on answers `kind` requests (those naming `device`, when given, before any answer set
   * for all devices) as `answer` says; `null` gives the provider's own answer back.
   */
  answer<K extends RequestKind>(kind: K, answer: FakeAnswer<K> | null, device = ""): void {
    const key = `${kind}\u0000${device}`;
    if (answer === null) this.#answers.delete(key);
    else this.#answers.set(key, answer as unknown as FakeAnswer);
  }

  /** The requests of `kind` (naming `device`, when given), oldest first. */
  received<K extends RequestKind>(kind: K, device?: string): RequestPayloads[K][] {
    return this.requests
      .filter((r) => r.kind === kind && (device === undefined || r.device === device))
      .map((r) => r.payload as RequestPayloads[K]);
  }

  /** How many `kind` requests (naming `device`, when given) arrived. */
  count(kind: RequestKind, device?: string): number {
    return this.received(kind, device).length;
  }

  hello(req: RequestPayloads["hello"], ctx: ReplyContext): Promise<ResponsePayloads["hello"]> {
    return this.#serve("hello", req, () => this.inner.hello(req, ctx));
  }

  waitReady(
    req: RequestPayloads["wait_ready"],
    ctx: ReplyContext,
  ): Promise<ResponsePayloads["wait_ready"]> {
    return this.#serve("wait_ready", req, () => {
      if (this.inner.waitReady === undefined) {
        throw ProviderError.unimplemented("wait_ready is not implemented");
      }
      return this.inner.waitReady(req, ctx);
    });
  }

  listDevices(
    req: RequestPayloads["list_devices"],
    ctx: ReplyContext,
  ): Promise<ResponsePayloads["list_devices"]> {
    return this.#serve("list_devices", req, () => this.inner.listDevices(req, ctx));
  }

  describeDevice(
    req: RequestPayloads["describe_device"],
    ctx: ReplyContext,
  ): Promise<ResponsePayloads["describe_device"]> {
    return this.#serve("describe_device", req, () => this.inner.describeDevice(req, ctx));
  }

  readSignals(
    req: RequestPayloads["read_signals"],
    ctx: ReplyContext,
  ): Promise<ResponsePayloads["read_signals"]> {
    return this.#serve("read_signals", req, () => this.inner.readSignals(req, ctx));
  }

  call(req: RequestPayloads["call"], ctx: ReplyContext): Promise<ResponsePayloads["call"]> {
    return this.#serve("call", req, () => this.inner.call(req, ctx));
  }

  getHealth(
    req: RequestPayloads["get_health"],
    ctx: ReplyContext,
  ): Promise<ResponsePayloads["get_health"]> {
    return this.#serve("get_health", req, () => {
      if (this.inner.getHealth === undefined) {
        throw ProviderError.unimplemented("get_health is not implemented");
      }
      return this.inner.getHealth(req, ctx);
    });
  }

  async #serve<K extends RequestKind>(
    kind: K,
    req: RequestPayloads[K],
    own: () => ResponsePayloads[K] | Promise<ResponsePayloads[K]>,
  ): Promise<ResponsePayloads[K]> {
    const device = (req as { device_id?: string }).device_id ?? "";
    const n = this.count(kind, device);
    this.requests.push({ kind, device, payload: req });
    const answer = (this.#answers.get(`${kind}\u0000${device}`) ??
      this.#answers.get(`${kind}\u0000`)) as FakeAnswer<K> | undefined;
    if (answer === undefined) return await own();
    if (answer.delayMs !== undefined && answer.delayMs > 0) await this.#sleep(answer.delayMs);
    if (answer.hang) return await this.#hang();
    if (answer.exit !== undefined) {
      if (this.#host === undefined) throw new Error("FakeProvider: exit needs a host");
      this.#host.exit(answer.exit);
      return await this.#hang();
    }
    if (answer.error !== undefined) {
      const { code, message } = answer.error;
      throw new ProviderError(code as WireStatusCodeNumber, message ?? "scripted failure");
    }
    const reply = answer.reply;
    if (reply === undefined) return await own();
    return typeof reply === "function"
      ? await (reply as (
        r: RequestPayloads[K],
        n: number,
      ) => ResponsePayloads[K] | Promise<ResponsePayloads[K]>)(req, n)
      : reply;
  }

  #sleep(ms: number): Promise<void> {
    return this.#host?.sleep(ms) ?? new Promise((r) => setTimeout(r, ms));
  }

  #hang(): Promise<never> {
    return this.#host?.hang() ?? new Promise<never>(() => {});
  }
}

/** What the plant device holds (its outputs and counters); see plantDevice. */
export interface PlantState {
  heater: boolean;
  fanDuty: number;
  /** read_status calls so far. */
  reads: number;
  /** Epoch ms at which the last actuating call arrived (before any latency). */
  lastCallMs: number;
}

/**
 * `plant0` (tests/safety/_plant_provider.ts): a heater relay `set_heater(enabled: bool)` and a fan
 * `set_fan(duty: double in [0, 1])` (ACTUATE), `read_status` (READ: counts its calls and answers
 * the count and the fan duty as it arrived, plus a result without a value); signals heater_on,
 * fan_duty, status_reads and last_call_ms (poll hint 2 Hz). Actuating calls take `latencyMs`,
 * read_status `readLatencyMs`; `readOnly` declares the READ function only. It declares no safe
 * state.
 */
export function plantDevice(
  o: {
    state?: PlantState;
    latencyMs?: number;
    readLatencyMs?: number;
    readOnly?: boolean;
    sleep?: (ms: number) => Promise<void>;
    nowMs?: () => number;
  } = {},
): DeviceDefinition {
  const state = o.state ?? { heater: false, fanDuty: 0, reads: 0, lastCallMs: 0 };
  const sleep = o.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  const nowMs = o.nowMs ?? Date.now;
  const arrived = async () => {
    state.lastCallMs = nowMs();
    if ((o.latencyMs ?? 0) > 0) await sleep(o.latencyMs!);
  };
  const hint = { pollHintHz: 2, staleAfterMs: 2000 };
  const functions: FunctionDefinition[] = [
    {
      id: 1,
      name: "set_heater",
      category: "ACTUATE",
      args: [{ name: "enabled", type: "bool" }],
      handler: async (args) => {
        await arrived();
        state.heater = args.bool("enabled");
      },
    },
    {
      id: 2,
      name: "set_fan",
      category: "ACTUATE",
      args: [{ name: "duty", type: "double", min: 0, max: 1 }],
      handler: async (args) => {
        await arrived();
        state.fanDuty = args.double("duty");
      },
    },
    {
      id: 3,
      name: "read_status",
      category: "READ",
      // Answers the read count and the fan duty as it arrived, plus a result without a value
      // (the runtime drops it).
      handler: async () => {
        const reads = ++state.reads;
        const fanDuty = state.fanDuty;
        if ((o.readLatencyMs ?? 0) > 0) await sleep(o.readLatencyMs!);
        return {
          reads: toWireValue("int64", reads),
          fan_duty: toWireValue("double", fanDuty),
          unset: {},
        };
      },
    },
  ];
  return {
    deviceId: "plant0",
    typeId: "test.plant",
    typeVersion: "1.0",
    label: "Test plant (heater + fan)",
    signals: [
      { id: "heater_on", name: "Heater On", type: "bool", ...hint, read: () => state.heater },
      { id: "fan_duty", name: "Fan Duty", type: "double", ...hint, read: () => state.fanDuty },
      {
        id: "status_reads",
        name: "Status Reads",
        type: "int64",
        ...hint,
        read: () => state.reads,
      },
      {
        id: "last_call_ms",
        name: "Last actuating call arrival (epoch ms)",
        type: "double",
        ...hint,
        read: () => state.lastCallMs,
      },
    ],
    functions: functions.filter((f) => !o.readOnly || f.category === "READ"),
  };
}
