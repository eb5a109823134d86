import type { ValueType } from "../common/mod.ts";
import type { WireValue } from "../adpp/mod.ts";
import type { ArgOptions } from "./capability.ts";
import { ProviderError } from "./provider_error.ts";
import { fromWireValue, type ScalarValue, wireTypeName } from "./wire_values.ts";

/**
 * Provider-side access to the arguments of one Call. Each accessor checks, for that argument,
 * presence, the type (by `Value.type`, as the reference provider does) and the declared bounds
 * and allowed values; a failure throws ProviderError INVALID_ARGUMENT naming the argument.
 * Handlers that must check a precondition before the arguments read them lazily in their own
 * order; otherwise the SDK calls `checkAll()` before the handler runs. Unknown extra arguments are
 * ignored (the reference provider does the same; runtimes reject them before they get here).
 */
export class CallArgs {
  readonly #specs: ReadonlyMap<string, ArgOptions>;
  readonly #args: Readonly<Record<string, WireValue>>;
  readonly #functionName: string;

  constructor(
    functionName: string,
    specs: readonly ArgOptions[],
    args: Readonly<Record<string, WireValue>>,
  ) {
    this.#functionName = functionName;
    this.#specs = new Map(specs.map((s) => [s.name, s]));
    this.#args = args;
  }

  /** True when the argument was supplied (whatever its type). */
  has(name: string): boolean {
    return Object.hasOwn(this.#args, name);
  }

  /** Checks every declared argument in declaration order; throws on the first problem. */
  checkAll(): void {
    for (const spec of this.#specs.values()) {
      if (spec.required === false && !this.has(spec.name)) continue;
      this.#get(spec.name, spec.type);
    }
  }

  /** A DOUBLE argument. */
  double(name: string): number {
    return this.#get(name, "double") as number;
  }

  /** An INT64 argument. */
  int64(name: string): number {
    return this.#get(name, "int64") as number;
  }

  /** A UINT64 argument. */
  uint64(name: string): number {
    return this.#get(name, "uint64") as number;
  }

  /** A BOOL argument. */
  bool(name: string): boolean {
    return this.#get(name, "bool") as boolean;
  }

  /** A STRING argument. */
  string(name: string): string {
    return this.#get(name, "string") as string;
  }

  /** A BYTES argument. */
  bytes(name: string): Uint8Array {
    return this.#get(name, "bytes") as Uint8Array;
  }

  #get(name: string, type: ValueType): ScalarValue {
    const where = `${this.#functionName}: argument '${name}'`;
    const raw = this.#args[name];
    const decoded = raw === undefined ? null : fromWireValue(raw);
    if (raw === undefined) {
      throw ProviderError.invalidArgument(`${where} is missing (expected ${wireTypeName(type)})`);
    }
    if (decoded === null || decoded.type !== type) {
      const got = decoded === null ? "UNSPECIFIED" : wireTypeName(decoded.type);
      throw ProviderError.invalidArgument(
        `${where} has type ${got}, expected ${wireTypeName(type)}`,
      );
    }
    const spec = this.#specs.get(name);
    const v = decoded.value;
    if (spec !== undefined && typeof v === "number") {
      // NaN fails on purpose: a provider must not drive hardware with it.
      if (Number.isNaN(v)) throw ProviderError.invalidArgument(`${where} is NaN`);
      if (spec.min !== undefined && v < spec.min) {
        throw ProviderError.invalidArgument(`${where} = ${v} is below the minimum ${spec.min}`);
      }
      if (spec.max !== undefined && v > spec.max) {
        throw ProviderError.invalidArgument(`${where} = ${v} is above the maximum ${spec.max}`);
      }
    }
    if (
      spec?.allowedValues !== undefined && typeof v === "string" &&
      !spec.allowedValues.includes(v)
    ) {
      throw ProviderError.invalidArgument(
        `${where} = '${v}' is not one of ${spec.allowedValues.join(", ")}`,
      );
    }
    return v;
  }
}
