/**
 * The anolis custom nodes (docs/automation.md, "Custom nodes") with their exact ports, defaults and
 * return rules. Nodes that reach the runtime find BtServices on their blackboard under
 * SERVICE_CONTEXT_KEY (set on the root blackboard), so inside a SubTree without `_autoremap` they
 * return FAILURE, as in anolis. CallDevice is asynchronous: it starts the call on its first tick
 * and reports RUNNING until the call settles; halting aborts the call.
 */
import { errorMessage, quoteProviderText, type TypedValue } from "../../common/mod.ts";
import { parseCallArgs } from "../call_args.ts";
import { CallHeldBack } from "../call_held_back.ts";
import type { BtServices } from "./services.ts";
import { type NodeStatus, StatefulActionNode, SyncActionNode, type TreeNode } from "./tree_node.ts";

/** Root-blackboard key holding the runtime services (anolis name). */
export const SERVICE_CONTEXT_KEY = "anolis.bt_service_context";

/** The qualities CheckQuality can match (anolis's names; the HTTP API's UNAVAILABLE is UNKNOWN). */
export const BT_QUALITY_NAMES: readonly string[] = ["OK", "STALE", "FAULT", "UNKNOWN"];

function servicesOf(node: TreeNode): BtServices | undefined {
  const v = node.blackboard.get(SERVICE_CONTEXT_KEY);
  return v?.type === "object" ? v.value as BtServices : undefined;
}

/**
 * A signal value as a double: integers cast, bool -> 1/0, string/bytes -> 0. Null for a 64-bit
 * integer that no double holds exactly (beyond 2^53 and not a multiple of its spacing): the tree
 * never reads a rounded value as if it were the provider's.
 */
export function signalAsDouble(v: TypedValue): number | null {
  switch (v.type) {
    case "double":
      return v.double;
    case "int64":
      return integerAsDouble(v.int64);
    case "uint64":
      return integerAsDouble(v.uint64);
    case "bool":
      return v.bool ? 1 : 0;
    case "string":
    case "bytes":
      return 0;
  }
}

function integerAsDouble(n: number | bigint): number | null {
  if (typeof n === "number") return n;
  const d = Number(n);
  return BigInt(d) === n ? d : null;
}

/**
 * ReadSignal: value (double; a string signal as its string) and quality (string) of a cached
 * signal; FAILURE if absent, if the provider never gave it a value (a missing input is never read
 * as 0), or if it is a 64-bit integer no double holds exactly (never rounded silently).
 */
export class ReadSignalNode extends SyncActionNode {
  protected override tickSync(): NodeStatus {
    const services = servicesOf(this);
    const handle = this.getString("device_handle");
    const signal = this.getString("signal_id");
    if (!services || !handle.ok || !signal.ok) return "FAILURE";
    const cached = services.readSignal(handle.value, signal.value);
    if (!cached || cached.value === null) return "FAILURE";
    if (cached.value.type === "string") {
      // A string (a mode, a state name) is carried as it is: scripts compare it ('closed').
      this.setOutput("value", { type: "string", value: cached.value.string });
      this.setOutput("quality", { type: "string", value: cached.quality });
      return "SUCCESS";
    }
    const value = signalAsDouble(cached.value);
    if (value === null) return "FAILURE";
    this.setOutput("value", { type: "double", value });
    this.setOutput("quality", { type: "string", value: cached.quality });
    return "SUCCESS";
  }
}

/** CheckQuality: SUCCESS when the cached quality equals expected_quality (default OK). */
export class CheckQualityNode extends SyncActionNode {
  protected override tickSync(): NodeStatus {
    const services = servicesOf(this);
    const handle = this.getString("device_handle");
    const signal = this.getString("signal_id");
    const expected = this.getString("expected_quality");
    if (!services || !handle.ok || !signal.ok || !expected.ok) return "FAILURE";
    // Only the four names anolis maps can ever match (UNSPECIFIED never does).
    if (!BT_QUALITY_NAMES.includes(expected.value)) return "FAILURE";
    const cached = services.readSignal(handle.value, signal.value);
    if (!cached) return "FAILURE";
    return cached.quality === expected.value ? "SUCCESS" : "FAILURE";
  }
}

/** One call of a CallDevice node, as its ports gave it when the node started. */
interface DeviceCall {
  readonly services: BtServices;
  readonly handle: string;
  readonly fn: string;
  readonly args: Record<string, TypedValue>;
}

/**
 * CallDevice: calls device_handle.function_name with args through the call router. RUNNING until
 * the call settles; outputs success/error are set in every outcome; halting aborts the call. A
 * call held back by a transition leaving AUTO (CallHeldBack) has no outcome: the node stays
 * RUNNING and asks again at its next tick (the same call), until the commit halts it or a veto
 * lets the call go out.
 */
export class CallDeviceNode extends StatefulActionNode {
  #abort: AbortController | undefined;
  #outcome: { ok: true } | { ok: false; error: string } | { heldBack: true } | undefined;
  /** The call made, asked again while a transition leaving AUTO holds it back. */
  #call: DeviceCall | undefined;

  protected override onStart(): NodeStatus {
    const services = servicesOf(this);
    if (!services) return this.#finish(false, "no runtime services on this blackboard");
    const handle = this.getString("device_handle");
    const port = (name: string) => this.rawPort(name) ?? "";
    if (!handle.ok) {
      return this.#refuse(services, port("device_handle"), port("function_name"), handle.error);
    }
    const fn = this.getString("function_name");
    if (!fn.ok) return this.#refuse(services, handle.value, port("function_name"), fn.error);
    const argsText = this.getString("args");
    if (!argsText.ok) return this.#refuse(services, handle.value, fn.value, argsText.error);
    const args = parseCallArgs(argsText.value);
    if (!args.ok) return this.#refuse(services, handle.value, fn.value, args.error);
    if (handle.value === "") {
      // An entry holding "": refused under the port as written (`{dev}`), as an entry with no
      // value is -- an empty key would list the refusal under `device_handle: ""`.
      const written = port("device_handle");
      return this.#refuse(
        services,
        written,
        fn.value,
        // The port as the tree file wrote it, any length: cut and quoted, as config text is.
        `device_handle must be 'provider/device', got "" from ${quoteProviderText(written)}`,
      );
    }
    const reason = this.hasPort("reason") ? this.getString("reason") : undefined;
    this.env.log?.debug(
      `CallDevice ${handle.value} ${fn.value}` + (reason?.ok ? ` reason=${reason.value}` : ""),
    );
    this.#call = { services, handle: handle.value, fn: fn.value, args: args.args };
    this.#send(this.#call);
    return "RUNNING";
  }

  /** Makes the call; its outcome is read by the next tick (onRunning). */
  #send(c: DeviceCall): void {
    const abort = new AbortController();
    this.#abort = abort;
    this.#outcome = undefined;
    let call: Promise<void>;
    try {
      call = c.services.callDevice(c.handle, c.fn, c.args, abort.signal, this.path, this.init.at);
    } catch (err) {
      call = Promise.reject(err);
    }
    // Results of an aborted call are dropped: a halted node must not report a stale outcome.
    call.then(
      () => {
        if (this.#abort === abort) this.#outcome = { ok: true };
      },
      (err) => {
        if (this.#abort !== abort) return;
        this.#outcome = err instanceof CallHeldBack
          ? { heldBack: true }
          : { ok: false, error: errorMessage(err) };
      },
    );
  }

  protected override onRunning(): NodeStatus {
    const outcome = this.#outcome;
    if (!outcome) return "RUNNING";
    if ("heldBack" in outcome) {
      // Held back, not failed: asked again (refused, unsent, until the transition is decided).
      this.#send(this.#call!);
      return "RUNNING";
    }
    this.#abort = undefined;
    this.#outcome = undefined;
    this.#call = undefined;
    return outcome.ok ? this.#finish(true, "") : this.#finish(false, outcome.error);
  }

  protected override onHalted(): void {
    const abort = this.#abort;
    this.#abort = undefined;
    this.#outcome = undefined;
    this.#call = undefined;
    abort?.abort();
  }

  /**
   * FAILURE without a call, for the tree's own error found only now (a port it cannot read, a
   * blackboard entry not set, args that do not parse): the error names where the node is written,
   * and the runtime is told of the refusal (automation status `refused_calls`) when the node
   * names a device, even as a blackboard reference.
   */
  #refuse(services: BtServices, handle: string, fn: string, error: string): NodeStatus {
    const message = this.init.at === undefined ? error : `${error} (CallDevice at ${this.init.at})`;
    if (handle !== "") services.refuseCall?.(handle, fn, message, this.path);
    return this.#finish(false, message);
  }

  #finish(ok: boolean, error: string): NodeStatus {
    this.setOutput("success", { type: "bool", value: ok });
    this.setOutput("error", { type: "string", value: error });
    return ok ? "SUCCESS" : "FAILURE";
  }
}

/** GetParameter (double, int converted), GetParameterBool, GetParameterInt64. */
export class GetParameterNode extends SyncActionNode {
  constructor(
    init: ConstructorParameters<typeof SyncActionNode>[0],
    readonly want: "number" | "bool" | "int64",
  ) {
    super(init);
  }

  protected override tickSync(): NodeStatus {
    const services = servicesOf(this);
    const name = this.getString("param");
    if (!services || !name.ok) return "FAILURE";
    const p = services.getParameter(name.value);
    if (!p) return "FAILURE";
    switch (this.want) {
      case "number":
        if (p.type !== "double" && p.type !== "int64") return "FAILURE";
        this.setOutput("value", { type: "double", value: Number(p.value) });
        return "SUCCESS";
      case "bool":
        if (p.type !== "bool") return "FAILURE";
        this.setOutput("value", { type: "bool", value: Boolean(p.value) });
        return "SUCCESS";
      case "int64":
        if (p.type !== "int64") return "FAILURE";
        this.setOutput("value", { type: "int64", value: Number(p.value) });
        return "SUCCESS";
    }
  }
}

/** CheckBool: SUCCESS when value equals expected (default true); FAILURE if value missing. */
export class CheckBoolNode extends SyncActionNode {
  protected override tickSync(): NodeStatus {
    const value = this.getBool("value");
    const expected = this.getBool("expected");
    if (!value.ok || !expected.ok) return "FAILURE";
    return value.value === expected.value ? "SUCCESS" : "FAILURE";
  }
}

function readInts(node: TreeNode, names: readonly string[]): number[] | undefined {
  const out: number[] = [];
  for (const n of names) {
    const r = node.getInt(n);
    if (!r.ok) return undefined;
    out.push(r.value);
  }
  return out;
}

function nowMs(node: TreeNode): number {
  if (node.init.ports.has("now_ms")) {
    const r = node.getInt("now_ms");
    if (r.ok) return r.value;
  }
  return node.env.clock.monoMs();
}

/**
 * PeriodicPulseWindow: a pulse of pulse_s every interval_s after startup_delay_s, counted from the
 * first enabled tick (monotonic); max_pulses_per_hour stretches the interval. State survives halts.
 */
export class PeriodicPulseWindowNode extends SyncActionNode {
  #startMs: number | undefined;

  protected override tickSync(): NodeStatus {
    const enabled = this.getBool("enabled");
    const ints = readInts(this, [
      "startup_delay_s",
      "interval_s",
      "pulse_s",
      "max_pulses_per_hour",
    ]);
    if (!enabled.ok || !ints) return "FAILURE";
    const [delayS, intervalS, pulseS, cap] = ints;
    if (delayS! < 0 || intervalS! <= 0 || pulseS! <= 0 || pulseS! > intervalS! || cap! < 0) {
      return "FAILURE";
    }
    const now = nowMs(this);
    if (!enabled.value) {
      this.#startMs = undefined;
      return this.#emit(false, -1, 0);
    }
    this.#startMs ??= now;
    const elapsed = Math.max(0, now - this.#startMs);
    const t = elapsed - delayS! * 1000;
    if (t < 0) return this.#emit(false, -1, elapsed);
    const interval = cap! > 0
      ? Math.max(intervalS! * 1000, Math.floor(3_600_000 / cap!))
      : intervalS! * 1000;
    const index = Math.floor(t / interval);
    return this.#emit(t % interval < pulseS! * 1000, index, elapsed);
  }

  #emit(active: boolean, index: number, elapsed: number): NodeStatus {
    this.setOutput("active", { type: "bool", value: active });
    this.setOutput("pulse_index", { type: "int64", value: index });
    this.setOutput("elapsed_ms", { type: "int64", value: elapsed });
    return "SUCCESS";
  }
}

/**
 * EmitOnChangeOrInterval: decides whether to emit: force, first tick, key changed (respecting
 * min_spacing_ms since the last emit), keepalive_s elapsed; otherwise "hold".
 */
export class EmitOnChangeOrIntervalNode extends SyncActionNode {
  #lastEmitMs: number | undefined;
  #lastKey: string | undefined;

  protected override tickSync(): NodeStatus {
    const key = this.getString("key");
    const ints = readInts(this, ["keepalive_s", "min_spacing_ms"]);
    const force = this.getBool("force");
    if (!key.ok || !ints || !force.ok) return "FAILURE";
    const [keepaliveS, spacingMs] = ints;
    if (keepaliveS! < 0 || spacingMs! < 0) return "FAILURE";
    const now = nowMs(this);
    let reason: string;
    if (force.value) reason = "force";
    else if (this.#lastEmitMs === undefined) reason = "first";
    else if (key.value !== this.#lastKey && now - this.#lastEmitMs >= spacingMs!) {
      reason = "changed";
    } else if (keepaliveS! > 0 && now - this.#lastEmitMs >= keepaliveS! * 1000) {
      reason = "keepalive";
    } else reason = "hold";
    const emit = reason !== "hold";
    if (emit) {
      this.#lastEmitMs = now;
      this.#lastKey = key.value;
    }
    this.setOutput("emit", { type: "bool", value: emit });
    this.setOutput("reason", { type: "string", value: reason });
    return "SUCCESS";
  }
}

/** Number of BuildArgsJson slots. */
export const BUILD_ARGS_SLOTS = 6;
/** The types a BuildArgsJson slot can be (`arg{i}_type`; "" takes its source's). */
export const BUILD_ARGS_TYPES: readonly string[] = ["int64", "double", "bool", "string"];
const SOURCE_TYPES = { num: "double", bool: "bool", str: "string" } as const;

/** Formats a double so JSON keeps it a float (`5` -> `5.0`), as nlohmann::json dumps it. */
function jsonDouble(v: number): string {
  const s = String(v);
  return /[.eE]/.test(s) ? s : `${s}.0`;
}

/**
 * BuildArgsJson: builds the CallDevice args object from up to 6 named slots, each with exactly one
 * value source (arg{i}_num, arg{i}_bool, arg{i}_str) and an optional type.
 */
export class BuildArgsJsonNode extends SyncActionNode {
  protected override tickSync(): NodeStatus {
    const fields = new Map<string, string>();
    for (let i = 1; i <= BUILD_ARGS_SLOTS; i++) {
      const nameR = this.getString(`arg${i}_name`);
      const name = nameR.ok ? nameR.value : "";
      if (name === "") continue;
      const typeR = this.getString(`arg${i}_type`);
      const type = typeR.ok ? typeR.value : "";
      const sources: ("num" | "bool" | "str")[] = [];
      let num = 0;
      let bool = false;
      let str = "";
      if (this.init.ports.has(`arg${i}_num`)) {
        const r = this.getNumber(`arg${i}_num`);
        if (r.ok) {
          sources.push("num");
          num = r.value;
        }
      }
      if (this.init.ports.has(`arg${i}_bool`)) {
        const r = this.getBool(`arg${i}_bool`);
        if (r.ok) {
          sources.push("bool");
          bool = r.value;
        }
      }
      if (this.init.ports.has(`arg${i}_str`)) {
        const r = this.getString(`arg${i}_str`);
        if (r.ok) {
          sources.push("str");
          str = r.value;
        }
      }
      if (sources.length !== 1) return "FAILURE";
      if (type !== "" && !BUILD_ARGS_TYPES.includes(type)) return "FAILURE";
      const source = sources[0];
      // An untyped slot takes the type of its single source.
      const effective = type !== "" ? type : SOURCE_TYPES[source!];
      let text: string;
      switch (effective) {
        case "int64": {
          if (source !== "num") return "FAILURE";
          const r = Math.round(num);
          if (!Number.isFinite(num) || Math.abs(num - r) > 1e-9 || !Number.isSafeInteger(r)) {
            return "FAILURE";
          }
          text = String(r);
          break;
        }
        case "double":
          if (source !== "num" || !Number.isFinite(num)) return "FAILURE";
          text = jsonDouble(num);
          break;
        case "bool":
          if (source !== "bool") return "FAILURE";
          text = String(bool);
          break;
        default:
          if (source !== "str") return "FAILURE";
          text = JSON.stringify(str);
      }
      fields.set(name, text);
    }
    // nlohmann::json objects are sorted by key; keep the same compact output.
    const keys = [...fields.keys()].sort();
    const json = `{${keys.map((k) => `${JSON.stringify(k)}:${fields.get(k)}`).join(",")}}`;
    this.setOutput("json", { type: "string", value: json });
    return "SUCCESS";
  }
}
