import type { FunctionCategory, ValueType } from "../common/mod.ts";
import {
  type WireArgSpec,
  WireCategory,
  type WireFunctionSpec,
  type WireSignalSpec,
} from "../adpp/mod.ts";
import { wireValueTypeOf } from "./wire_values.ts";

/** Declaration of one signal (SignalSpec) of a device. */
export interface SignalOptions {
  readonly id: string;
  readonly name: string;
  readonly description?: string;
  readonly type: ValueType;
  readonly unit?: string;
  /**
   * > 0 makes the runtime poll the signal; 0 means "on request only". The runtime polls a device
   * at the pace of its fastest signal's hint, never faster than its polling.interval_ms.
   */
  readonly pollHintHz: number;
  /** Age after which a reading is stale (0 = not declared); the runtime reads it STALE then. */
  readonly staleAfterMs: number;
  /** Part of the default set returned for a ReadSignals with no ids (default true). */
  readonly inDefaultSet?: boolean;
}

/** Declaration of one function argument (ArgSpec). */
export interface ArgOptions {
  readonly name: string;
  readonly type: ValueType;
  readonly unit?: string;
  readonly description?: string;
  /** Default true. */
  readonly required?: boolean;
  /** Inclusive bounds for numeric types; written to the wire only when given (even when 0). */
  readonly min?: number;
  readonly max?: number;
  /** Enum-like constraint for STRING args (checked by the SDK when the arg is read). */
  readonly allowedValues?: readonly string[];
}

/** Declaration of one function (FunctionSpec). */
export interface FunctionOptions {
  readonly id: number;
  readonly name: string;
  readonly description?: string;
  /** READ only for functions without side effects; runtimes treat anything else as actuating. */
  readonly category: Exclude<FunctionCategory, "UNSPECIFIED">;
  readonly args?: readonly ArgOptions[];
  /** Runtime modes (IDLE, MANUAL, AUTO, FAULT) the runtime lets a call through in; empty = all. */
  readonly allowedModes?: readonly string[];
  /** The runtime refuses every call to such a function: it grants no leases. */
  readonly requiresLease?: boolean;
  readonly isIdempotent?: boolean;
  /** Least time between two calls; the runtime refuses a sooner one (429). */
  readonly minIntervalMs?: number;
  readonly safetyProfile?: string;
}

/** Builds the wire SignalSpec of a signal declaration. */
export function signalSpec(o: SignalOptions): WireSignalSpec {
  return {
    signal_id: o.id,
    name: o.name,
    description: o.description ?? "",
    value_type: wireValueTypeOf(o.type),
    unit: o.unit ?? "",
    poll_hint_hz: o.pollHintHz,
    stale_after_ms: o.staleAfterMs,
  };
}

/**
 * Builds the wire ArgSpec of an argument declaration: `min`/`max` go to the bound fields of the
 * argument's own type (min_double for double, ...). Throws TypeError for bounds on a non-numeric
 * type or for a non-integer bound on an integer type (a declaration bug).
 */
export function argSpec(o: ArgOptions): WireArgSpec {
  const spec: WireArgSpec = {
    name: o.name,
    type: wireValueTypeOf(o.type),
    unit: o.unit ?? "",
    description: o.description ?? "",
    required: o.required ?? true,
  };
  if (o.allowedValues !== undefined) spec.allowed_values = [...o.allowedValues];
  if (o.min === undefined && o.max === undefined) return spec;
  const integer = o.type === "int64" || o.type === "uint64";
  for (const [which, bound] of [["min", o.min], ["max", o.max]] as const) {
    if (bound === undefined) continue;
    if (integer && !Number.isInteger(bound)) {
      throw new TypeError(`arg '${o.name}': ${which} ${bound} is not an integer`);
    }
    if (o.type === "double") spec[`${which}_double`] = bound;
    else if (o.type === "int64") spec[`${which}_int64`] = bound;
    else if (o.type === "uint64") spec[`${which}_uint64`] = bound;
    else throw new TypeError(`arg '${o.name}': bounds are only allowed on numeric types`);
  }
  return spec;
}

/** Builds the wire FunctionSpec of a function declaration. */
export function functionSpec(o: FunctionOptions): WireFunctionSpec {
  return {
    function_id: o.id,
    name: o.name,
    description: o.description ?? "",
    policy: {
      category: WireCategory[o.category],
      allowed_modes: [...(o.allowedModes ?? [])],
      requires_lease: o.requiresLease ?? false,
      safety_profile: o.safetyProfile ?? "",
      min_interval_ms: o.minIntervalMs ?? 0,
      is_idempotent: o.isIdempotent ?? false,
    },
    args: (o.args ?? []).map(argSpec),
    results: [],
  };
}
