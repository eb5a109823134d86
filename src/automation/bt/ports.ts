/** Port declarations of node types and the `{key}` / literal rules for port values. */
import { parseDeviceHandle, quoteProviderText } from "../../common/mod.ts";
import { type BbType, type BbValue, parseScalar } from "./blackboard.ts";
import { parseScript, ScriptSyntaxError } from "./script.ts";

/**
 * Port value types. "script" is a string holding a script (checked at verify time), "status" a
 * NodeStatus name, "any" accepts every value (SetBlackboard, SubTree remapping).
 */
export type PortType = "double" | "int64" | "bool" | "string" | "script" | "status" | "any";

/** One declared port of a node type. */
export interface PortSpec {
  readonly name: string;
  readonly direction: "input" | "output" | "inout";
  readonly type: PortType;
  /** A missing required port is a verify error. */
  readonly required?: boolean;
  /** Literal default used when the attribute is absent. */
  readonly defaultValue?: string;
  /** Integer ports that must not be negative (BT.CPP `unsigned`). */
  readonly nonNegative?: boolean;
}

/** Blackboard type of a port (what the entry is declared as). */
export function bbTypeOfPort(type: PortType): BbType {
  switch (type) {
    case "double":
    case "int64":
    case "bool":
    case "string":
      return type;
    case "script":
      return "string";
    case "status":
    case "any":
      return "any";
  }
}

/**
 * Node statuses accepted by "status" ports (Precondition `else`): what a node may return, so not
 * IDLE (a parent refuses a child returning it, as BT.CPP's do).
 */
export const STATUS_NAMES = ["RUNNING", "SUCCESS", "FAILURE", "SKIPPED"] as const;

/**
 * The blackboard key of a port value: `{key}` -> key, `{=}` / `=` -> the port name; undefined
 * for a literal. Like BT.CPP, any text of 3+ characters in braces is a reference (so a JSON
 * object literal needs the `json:` prefix) and `{}` is a literal.
 */
export function blackboardKeyOf(raw: string, portName: string): string | undefined {
  const t = raw.trim();
  if (t === "=" || t === "{=}") return portName;
  if (t.length >= 3 && t.startsWith("{") && t.endsWith("}")) return t.slice(1, -1).trim();
  return undefined;
}

const KEY_RE = /^@?[A-Za-z_][A-Za-z0-9_.\-]*$/;

/** Checks a port value; returns a problem description or undefined when fine. */
export function checkPortValue(
  spec: PortSpec,
  raw: string,
): { severity: "error" | "warning"; message: string } | undefined {
  const key = blackboardKeyOf(raw, spec.name);
  if (key !== undefined) {
    if (!KEY_RE.test(key)) {
      const hint = key.startsWith('"')
        ? "; text in braces is read as a blackboard reference, so write JSON literals as " +
          "json:{...}"
        : "";
      return {
        severity: "error",
        // The tree file's text, any length and any character: cut and quoted (as config text),
        // here and in every message below naming a port's value.
        message: `port '${spec.name}': ${
          quoteProviderText(raw)
        } is not a valid blackboard reference${hint}`,
      };
    }
    return undefined;
  }
  if (spec.direction === "output") {
    return {
      severity: "warning",
      message: `output port '${spec.name}' holds the literal ${quoteProviderText(raw)}; ` +
        `it needs a blackboard reference like {key} to store anything`,
    };
  }
  return checkLiteral(spec, raw);
}

/** What a literal is not, when it does not parse as a scalar port's type (a diagnostic's words). */
export const NOT_A_SCALAR: Readonly<Record<"double" | "int64" | "bool", string>> = {
  double: "a number (double)",
  int64: "an integer",
  bool: "a boolean (true/false)",
};

/** Checks a literal against the port type. */
export function checkLiteral(
  spec: PortSpec,
  raw: string,
): { severity: "error"; message: string } | undefined {
  const bad = (what: string) => ({
    severity: "error" as const,
    message: `port '${spec.name}': ${quoteProviderText(raw)} is not ${what}`,
  });
  switch (spec.type) {
    case "double":
      return parseScalar(raw, "double") ? undefined : bad(NOT_A_SCALAR.double);
    case "int64": {
      const v = parseScalar(raw, "int64");
      if (!v) return bad(NOT_A_SCALAR.int64);
      if (spec.nonNegative && (v.value as number) < 0) return bad("a non-negative integer");
      return undefined;
    }
    case "bool":
      return parseScalar(raw, "bool") ? undefined : bad(NOT_A_SCALAR.bool);
    case "status":
      return (STATUS_NAMES as readonly string[]).includes(raw.trim())
        ? undefined
        : bad(`a node status (${STATUS_NAMES.join(", ")})`);
    case "script":
      try {
        parseScript(raw);
        return undefined;
      } catch (err) {
        if (err instanceof ScriptSyntaxError) {
          return {
            severity: "error",
            message: `port '${spec.name}': script error at offset ${err.offset}: ${err.message}`,
          };
        }
        throw err;
      }
    case "string":
    case "any":
      return undefined;
  }
}

/** Ports whose value a node reads as a name, exactly as written (nameLiteralProblem). */
export type NamePort = "device_handle" | "function_name";

/**
 * The error of a literal port `port` reads as a name exactly as written (not trimmed) when it can
 * name nothing, or null: a `device_handle` that is not provider_id/device_id (spaces around
 * included), a CallDevice `function_name` that is blank or has spaces around it. The AUTO gates
 * judge the name the node reads, so such a node can only fail. `via`: the `{ref}` a SubTree port
 * sets to `value` (the message names both); absent for a literal written in the node.
 */
export function nameLiteralProblem(port: NamePort, value: string, via?: string): string | null {
  const spaced = value !== value.trim();
  const reason = port === "device_handle"
    ? (spaced || parseDeviceHandle(value) === null ? "is not provider_id/device_id" : null)
    : value.trim() === ""
    ? "is blank"
    : spaced
    ? "has spaces around it"
    : null;
  if (reason === null) return null;
  if (via === undefined) return `port '${port}': ${quoteProviderText(value)} ${reason}`;
  return `port '${port}': ${quoteProviderText(via)} is ${
    quoteProviderText(value)
  } (a SubTree port's literal), ` +
    (port === "device_handle" ? "not provider_id/device_id" : `which ${reason}`);
}

/** A SubTree element's ports, as its attributes set them (BT.CPP's port remapping). */
export interface SubTreePorts {
  /** Ports set to a literal (the instance's own entry of that name), as written. */
  readonly literals: ReadonlyMap<string, string>;
  /** Ports remapped to a key of the parent's scope (`@key`: the root's). */
  readonly remaps: ReadonlyMap<string, string>;
  /** `_autoremap="true"`: keys the subtree uses that no port names are the parent's. */
  readonly autoremap: boolean;
}

/**
 * The ports a SubTree element's attributes set (not ID, name or `_`-prefixed ones): a literal
 * or a `{key}` remapping each, in attribute order. The one reading of them: the build, the
 * blackboard-key analysis and the literal resolution of device handles all use it.
 */
export function subTreePortsOf(attributes: ReadonlyMap<string, string>): SubTreePorts {
  const literals = new Map<string, string>();
  const remaps = new Map<string, string>();
  for (const [name, value] of attributes) {
    if (name === "ID" || name === "name" || name.startsWith("_")) continue;
    const key = blackboardKeyOf(value, name);
    if (key !== undefined) remaps.set(name, key);
    else literals.set(name, value);
  }
  const auto = attributes.get("_autoremap");
  return {
    literals,
    remaps,
    autoremap: auto !== undefined && parseScalar(auto, "bool")?.value === true,
  };
}

/** Converts a checked literal to a blackboard value of the port type. */
export function literalValue(spec: PortSpec, raw: string): BbValue | undefined {
  switch (spec.type) {
    case "double":
    case "int64":
    case "bool":
    case "string":
      return parseScalar(raw, spec.type);
    case "script":
    case "status":
    case "any":
      return { type: "string", value: raw };
  }
}
