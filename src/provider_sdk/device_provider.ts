import { ADPP_PROTOCOL_VERSION, MAX_NAMED_IN_WARNING, quoteProviderText } from "../common/mod.ts";
import {
  MAX_FRAME_BYTES,
  type RequestPayloads,
  type ResponsePayloads,
  type WireDevice,
  type WireDeviceHealth,
  WireDeviceState,
  type WireFunctionSpec,
  WireProviderState,
  WireQuality,
  type WireSignalSpec,
  type WireSignalValue,
  type WireValue,
} from "../adpp/mod.ts";
import {
  type ArgOptions,
  type FunctionOptions,
  functionSpec,
  type SignalOptions,
  signalSpec,
} from "./capability.ts";
import { CallArgs } from "./call_args.ts";
import { ProviderError } from "./provider_error.ts";
import { errorMessageText, statusMessageText } from "./_status_message.ts";
import type { SafeStateReason, SafeStateSummary } from "./safe_state.ts";
import {
  hostReadinessDiagnostics,
  type HostRequirement,
  unmetSummary,
} from "./executable_profile.ts";
import type { ProviderHandler, ReplyContext } from "./serve.ts";
import { type ScalarValue, toWireValue } from "./wire_values.ts";

type MaybePromise<T> = T | Promise<T>;

/** A signal declaration plus how to read its current value. */
export interface SignalDefinition extends SignalOptions {
  /** Current value, in the declared type (checked when converted). */
  read(): ScalarValue;
}

/** What a function handler may return: nothing, or named results. */
export type CallResults = Record<string, WireValue> | void;

/** A function declaration plus its handler. */
export interface FunctionDefinition extends FunctionOptions {
  /**
   * When true (default) every declared argument is checked (presence, type, bounds, allowed
   * values) before the handler runs. Set false when the handler must check a device precondition
   * first and then read its arguments itself through `args`.
   */
  readonly precheckArgs?: boolean;
  handler(args: CallArgs, ctx: ReplyContext): MaybePromise<CallResults>;
}

/** A device as a provider author declares it. */
export interface DeviceDefinition {
  readonly deviceId: string;
  readonly typeId: string;
  readonly typeVersion: string;
  readonly label: string;
  readonly address?: string;
  readonly tags?: Readonly<Record<string, string>>;
  readonly signals: readonly SignalDefinition[];
  readonly functions: readonly FunctionDefinition[];
  /**
   * Drives this device's outputs to their safe state: the values it starts with (declare them once
   * and use them for both). Absent for a device with nothing to make safe. Must be idempotent.
   */
  readonly applySafeState?: () => MaybePromise<void>;
}

/** A DeviceDefinition compiled to wire specs and lookup tables. */
export interface ProviderDevice {
  readonly definition: DeviceDefinition;
  readonly signalSpecs: readonly WireSignalSpec[];
  readonly functionSpecs: readonly WireFunctionSpec[];
  readonly signalsById: ReadonlyMap<string, SignalDefinition>;
  readonly functionsById: ReadonlyMap<number, FunctionDefinition>;
  readonly functionsByName: ReadonlyMap<string, FunctionDefinition>;
  /** Signal ids returned for a ReadSignals without ids, in declaration order. */
  readonly defaultSignalIds: readonly string[];
}

/**
 * Compiles and checks a device declaration. Throws TypeError on a declaration bug: duplicate
 * signal ids, function ids or names, function id 0, bounds on a non-numeric argument.
 */
export function compileDevice(def: DeviceDefinition): ProviderDevice {
  if (def.deviceId === "") throw new TypeError("device id must not be empty");
  const signalsById = new Map<string, SignalDefinition>();
  for (const s of def.signals) {
    if (signalsById.has(s.id)) throw new TypeError(`${def.deviceId}: duplicate signal '${s.id}'`);
    signalsById.set(s.id, s);
  }
  const functionsById = new Map<number, FunctionDefinition>();
  const functionsByName = new Map<string, FunctionDefinition>();
  for (const f of def.functions) {
    if (!Number.isInteger(f.id) || f.id <= 0) {
      throw new TypeError(`${def.deviceId}: function '${f.name}' needs an id >= 1`);
    }
    if (functionsById.has(f.id) || functionsByName.has(f.name)) {
      throw new TypeError(`${def.deviceId}: duplicate function ${f.id} '${f.name}'`);
    }
    functionsById.set(f.id, f);
    functionsByName.set(f.name, f);
  }
  return {
    definition: def,
    signalSpecs: def.signals.map(signalSpec),
    functionSpecs: def.functions.map(functionSpec),
    signalsById,
    functionsById,
    functionsByName,
    defaultSignalIds: def.signals.filter((s) => s.inDefaultSet !== false).map((s) => s.id),
  };
}

/** Options of a DeviceProvider. */
export interface DeviceProviderOptions {
  /** HelloResponse.provider_name. */
  readonly name: string;
  /** HelloResponse.provider_version. */
  readonly version: string;
  /** Extra Hello metadata; transport, max_frame_bytes and supports_wait_ready are filled in. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** When given, WaitReady is advertised and answered with these diagnostics once ready. */
  readonly waitReady?: (req: RequestPayloads["wait_ready"]) => MaybePromise<Record<string, string>>;
  /** Wall clock in epoch ms for signal timestamps (default Date.now). */
  readonly nowMs?: () => number;
  /**
   * The start-up host check's results (executable profile sec. 6; `runProviderCli` passes them to
   * `serve`). When given, WaitReady is advertised and its diagnostics carry `host_check`,
   * `host_unmet` and `ready`, and GetHealth the same as metrics. With a requirement unmet the
   * provider is up but not ready: it lists no devices (each answers NOT_FOUND, saying why) and
   * GetHealth is at least DEGRADED, until it is restarted on a host that meets them.
   */
  readonly hostRequirements?: readonly HostRequirement[];
}

/**
 * A ProviderHandler built from device declarations, with the reference provider's semantics:
 * Hello version check, ListDevices in list order, DescribeDevice, ReadSignals (empty ids -> the
 * default set, unknown ids omitted, none known -> NOT_FOUND), Call (selector rules, argument
 * checks), GetHealth. Subclasses override the protected hooks to add faults or health detail.
 */
export class DeviceProvider implements ProviderHandler {
  protected readonly options: DeviceProviderOptions;
  protected readonly devices: Map<string, ProviderDevice> = new Map();
  protected readonly nowMs: () => number;

  /** The unmet host requirements as `id: detail; ...` ("" when ready). */
  readonly #hostUnmet: string;
  /** Milliseconds from the process's start to this provider's construction (its init time). */
  readonly #initTimeMs = Math.round(performance.now());

  constructor(options: DeviceProviderOptions, devices: readonly DeviceDefinition[] = []) {
    this.options = options;
    this.nowMs = options.nowMs ?? Date.now;
    this.#hostUnmet = unmetSummary(options.hostRequirements ?? []);
    for (const d of devices) this.addDevice(d);
  }

  /** False when a start-up host requirement is unmet: the provider then lists no devices. */
  get hostReady(): boolean {
    return this.#hostUnmet === "";
  }

  /** Adds a device (ListDevices order = insertion order). Throws on a duplicate id. */
  addDevice(def: DeviceDefinition): void {
    if (this.devices.has(def.deviceId)) {
      throw new TypeError(`duplicate device id '${def.deviceId}'`);
    }
    this.devices.set(def.deviceId, compileDevice(def));
  }

  /** Devices to list, in order (none while a host requirement is unmet). Override to hide devices. */
  protected listedDevices(): ProviderDevice[] {
    return this.hostReady ? [...this.devices.values()] : [];
  }

  /** Device lookup used by every request (none while not ready). Override to hide devices. */
  protected findDevice(deviceId: string): ProviderDevice | undefined {
    return this.hostReady ? this.devices.get(deviceId) : undefined;
  }

  /** Quality of one reading (default QUALITY_OK). */
  protected signalQuality(_device: ProviderDevice, _signalId: string): number {
    return WireQuality.OK;
  }

  /** Runs before a Call is resolved and dispatched (fault injection, rate limits). */
  protected beforeCall(_req: RequestPayloads["call"], _ctx: ReplyContext): MaybePromise<void> {}

  /** The Device message of a device. */
  protected deviceMessage(d: ProviderDevice): WireDevice {
    const def = d.definition;
    return {
      device_id: def.deviceId,
      provider_name: this.options.name,
      type_id: def.typeId,
      type_version: def.typeVersion,
      label: def.label,
      address: def.address ?? "",
      tags: { ...(def.tags ?? {}) },
    };
  }

  /** Hello: checks the protocol version and advertises the provider. */
  hello(req: RequestPayloads["hello"]): ResponsePayloads["hello"] {
    const version = req.protocol_version ?? "";
    if (version !== ADPP_PROTOCOL_VERSION) {
      // The peer's text (any length, any character): cut and quoted, as the runtime quotes it.
      throw ProviderError.failedPrecondition(
        `unsupported protocol_version ${quoteProviderText(version)}, expected ${
          quoteProviderText(ADPP_PROTOCOL_VERSION)
        }`,
      );
    }
    const metadata: Record<string, string> = {
      transport: "stdio+uint32_le",
      max_frame_bytes: String(MAX_FRAME_BYTES),
    };
    if (this.options.waitReady !== undefined || this.options.hostRequirements !== undefined) {
      metadata.supports_wait_ready = "true";
    }
    Object.assign(metadata, this.options.metadata ?? {});
    return {
      protocol_version: ADPP_PROTOCOL_VERSION,
      provider_name: this.options.name,
      provider_version: this.options.version,
      metadata,
    };
  }

  /**
   * WaitReady: answers once the readiness callback resolves, with its diagnostics plus, when
   * host requirements were given, `host_check`, `host_unmet` and `ready` (a provider that is up
   * but not ready answers at once: waiting would not change its host). `init_time_ms`, which the
   * executable profile requires (sec. 3), is the callback's, else the milliseconds from the
   * process's start to this provider's construction. UNIMPLEMENTED with neither.
   */
  async waitReady(req: RequestPayloads["wait_ready"]): Promise<ResponsePayloads["wait_ready"]> {
    const ready = this.options.waitReady;
    const host = this.options.hostRequirements;
    if (ready === undefined && host === undefined) {
      throw ProviderError.unimplemented("wait_ready is not implemented");
    }
    const diagnostics: Record<string, string> = {
      init_time_ms: String(this.#initTimeMs),
      ...(ready === undefined ? {} : await ready(req)),
    };
    if (host === undefined) return { diagnostics };
    return {
      diagnostics: {
        ...diagnostics,
        ...hostReadinessDiagnostics(host),
        ready: String(this.hostReady && diagnostics.ready !== "false"),
      },
    };
  }

  /** ListDevices: listed devices in order; one OK DeviceHealth each when asked. */
  listDevices(req: RequestPayloads["list_devices"]): ResponsePayloads["list_devices"] {
    const listed = this.listedDevices();
    const out: ResponsePayloads["list_devices"] = {
      devices: listed.map((d) => this.deviceMessage(d)),
    };
    if (req.include_health === true) {
      out.device_health = listed.map((d) => ({
        device_id: d.definition.deviceId,
        state: WireDeviceState.OK,
        message: "ok",
      }));
    }
    return out;
  }

  /** DescribeDevice: the device and its capability set. */
  describeDevice(req: RequestPayloads["describe_device"]): ResponsePayloads["describe_device"] {
    const d = this.requireDevice(req.device_id);
    return {
      device: this.deviceMessage(d),
      capabilities: { functions: [...d.functionSpecs], signals: [...d.signalSpecs] },
    };
  }

  /** ReadSignals: current values stamped with the read time. */
  readSignals(req: RequestPayloads["read_signals"]): ResponsePayloads["read_signals"] {
    const d = this.requireDevice(req.device_id);
    const asked = req.signal_ids ?? [];
    const ids = asked.length === 0
      ? d.defaultSignalIds
      : asked.filter((id) => d.signalsById.has(id));
    if (asked.length > 0 && ids.length === 0) {
      throw ProviderError.notFound(
        `${d.definition.deviceId}: none of the requested signals exist: ${asked.join(", ")}`,
      );
    }
    const now = this.nowMs();
    const timestamp = { seconds: Math.floor(now / 1000), nanos: (now % 1000) * 1_000_000 };
    const values: WireSignalValue[] = ids.map((id) => {
      const s = d.signalsById.get(id)!;
      return {
        signal_id: id,
        value: toWireValue(s.type, s.read()),
        timestamp,
        quality: this.signalQuality(d, id),
      };
    });
    return { device_id: d.definition.deviceId, values };
  }

  /** Call: resolves the function (id preferred), checks arguments, runs the handler. */
  async call(req: RequestPayloads["call"], ctx: ReplyContext): Promise<ResponsePayloads["call"]> {
    if ((req.device_id ?? "") === "") throw ProviderError.invalidArgument("device_id is empty");
    await this.beforeCall(req, ctx);
    const d = this.requireDevice(req.device_id);
    const fn = resolveFunction(d, req.function_id ?? 0, req.function_name ?? "");
    const args = new CallArgs(fn.name, fn.args ?? ([] as ArgOptions[]), req.args ?? {});
    if (fn.precheckArgs !== false) args.checkAll();
    const results = await fn.handler(args, ctx);
    return { device_id: d.definition.deviceId, results: results ?? {} };
  }

  /** GetHealth: provider OK and one OK entry per listed device, plus the host check's facts. */
  getHealth(_req: RequestPayloads["get_health"]): MaybePromise<ResponsePayloads["get_health"]> {
    const devices: WireDeviceHealth[] = this.listedDevices().map((d) => ({
      device_id: d.definition.deviceId,
      state: WireDeviceState.OK,
      message: "ok",
    }));
    return this.withHostHealth({
      provider: { state: WireProviderState.OK, message: "ok" },
      devices,
    });
  }

  /**
   * Adds the start-up host check to a GetHealth answer (subclasses that build their own call it):
   * metrics `host_check` and `host_unmet`; while not ready the provider state is at least DEGRADED
   * and the message starts with `not ready: host requirements unmet: ...`. Unchanged when no host
   * requirements were given.
   */
  protected withHostHealth(h: ResponsePayloads["get_health"]): ResponsePayloads["get_health"] {
    const host = this.options.hostRequirements;
    if (host === undefined) return h;
    const provider = h.provider ?? {};
    // The SDK's own first (among the MAX_HEALTH_METRICS answered), their values over the handler's.
    const own = hostReadinessDiagnostics(host);
    const metrics = { ...own, ...(provider.metrics ?? {}), ...own };
    if (this.hostReady) return { ...h, provider: { ...provider, metrics } };
    const message = provider.message ?? "";
    return {
      ...h,
      provider: {
        ...provider,
        state: Math.max(provider.state ?? 0, WireProviderState.DEGRADED) as NonNullable<
          typeof provider.state
        >,
        message: `not ready: host requirements unmet: ${this.#hostUnmet}` +
          (message === "" || message === "ok" ? "" : `; ${message}`),
        metrics,
      },
    };
  }

  /**
   * Applies the safe state of every device that declares one, hidden ones included, all started
   * at once in list order; a failing device does not stop the others. Resolves with the devices
   * made safe; rejects naming every device that failed.
   */
  async applySafeState(_reason: SafeStateReason): Promise<SafeStateSummary> {
    const targets = [...this.devices.values()].filter((d) =>
      d.definition.applySafeState !== undefined
    );
    const results = await Promise.allSettled(
      targets.map((d) => Promise.resolve().then(() => this.applyDeviceSafeState(d))),
    );
    // Named bounded: the first MAX_NAMED_IN_WARNING failures, id and reason each cut, the rest
    // counted, so that the error (logged, kept in GetHealth) is built bounded however many fail.
    const named: string[] = [];
    let failed = 0;
    results.forEach((r, i) => {
      if (r.status === "fulfilled") return;
      if (++failed > MAX_NAMED_IN_WARNING) return;
      named.push(
        `${statusMessageText(targets[i]!.definition.deviceId)}: ${errorMessageText(r.reason)}`,
      );
    });
    if (failed > 0) {
      const rest = failed - named.length;
      throw new Error(
        `safe state failed for ${named.join("; ")}` +
          (rest > 0 ? `; and ${rest} more (${failed} in all)` : ""),
      );
    }
    return { devices: targets.map((d) => d.definition.deviceId) };
  }

  /** Applies one device's declared safe state. Override to interpose (fault injection). */
  protected applyDeviceSafeState(device: ProviderDevice): MaybePromise<void> {
    return device.definition.applySafeState?.();
  }

  /** Device lookup with the reference's errors: empty id INVALID_ARGUMENT, unknown NOT_FOUND. */
  protected requireDevice(deviceId: string | undefined): ProviderDevice {
    const id = deviceId ?? "";
    if (id === "") throw ProviderError.invalidArgument("device_id is empty");
    const d = this.findDevice(id);
    if (d === undefined) {
      throw ProviderError.notFound(
        `device not found: ${id}` +
          (this.hostReady ? "" : ` (not ready: host requirements unmet: ${this.#hostUnmet})`),
      );
    }
    return d;
  }
}

function resolveFunction(d: ProviderDevice, id: number, name: string): FunctionDefinition {
  const dev = d.definition.deviceId;
  if (id !== 0) {
    const fn = d.functionsById.get(id);
    if (fn === undefined) throw ProviderError.notFound(`${dev}: function ${id} not found`);
    if (name !== "" && name !== fn.name) {
      throw ProviderError.invalidArgument(
        `${dev}: function_id ${id} is '${fn.name}' but function_name is '${name}'`,
      );
    }
    return fn;
  }
  if (name === "") throw ProviderError.invalidArgument(`${dev}: no function_id or function_name`);
  const fn = d.functionsByName.get(name);
  if (fn === undefined) throw ProviderError.notFound(`${dev}: function '${name}' not found`);
  return fn;
}
