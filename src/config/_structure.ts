/**
 * Structure layer: validates the plain YAML data against the embedded JSON Schema with ajv
 * (allErrors) and maps every error back to a key path, so it can be positioned and deduplicated
 * against the semantic layer.
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import { RUNTIME_CONFIG_SCHEMA } from "./_schema.ts";
import type { Path, Segment } from "./_source.ts";

/** One structure error: where and what, before positions are attached. */
export interface StructureError {
  readonly path: Path;
  readonly message: string;
}

let validator: ValidateFunction | null = null;

/** Compiled once per process: compiling the schema costs more than validating a file. */
function compiled(): ValidateFunction {
  if (validator === null) {
    // strictTypes off: conditional `then` branches carry bounds without repeating the type.
    const ajv = new Ajv2020({
      allErrors: true,
      verbose: true,
      strictTypes: false,
      allowUnionTypes: true,
    });
    ajv.addVocabulary(["errorMessage", "deprecationMessage"]);
    validator = ajv.compile(RUNTIME_CONFIG_SCHEMA);
  }
  return validator;
}

/** Validates `data` against the runtime configuration schema. */
export function validateStructure(data: unknown): StructureError[] {
  const validate = compiled();
  if (validate(data)) return [];
  const out: StructureError[] = [];
  for (const e of validate.errors ?? []) {
    // `if` only says "the then-branch failed" (its own errors follow); errors inside an `anyOf`
    // branch are summarised by the anyOf error itself.
    if (e.keyword === "if" || e.schemaPath.includes("/anyOf/")) continue;
    const path = pointerToPath(data, e.instancePath);
    if (e.keyword === "required") {
      out.push({ path: [...path, String(e.params.missingProperty)], message: "is required" });
    } else {
      out.push({ path, message: describe(e) });
    }
  }
  return out;
}

/** Turns an ajv instancePath (JSON pointer) into a key path, using the data to tell indexes. */
function pointerToPath(data: unknown, pointer: string): Path {
  if (pointer === "") return [];
  const path: Segment[] = [];
  let node: unknown = data;
  for (const raw of pointer.slice(1).split("/")) {
    const key = raw.replaceAll("~1", "/").replaceAll("~0", "~");
    if (Array.isArray(node)) {
      const i = Number(key);
      path.push(i);
      node = node[i];
    } else {
      path.push(key);
      node = node !== null && typeof node === "object"
        ? (node as Record<string, unknown>)[key]
        : undefined;
    }
  }
  return path;
}

const TYPE_NAMES: Record<string, string> = {
  integer: "an integer",
  number: "a number",
  string: "a string",
  boolean: "a boolean",
  object: "a mapping",
  array: "a sequence",
};

function describe(e: ErrorObject): string {
  const custom = (e.parentSchema as Record<string, unknown> | undefined)?.errorMessage;
  if (typeof custom === "string") return custom;
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "type": {
      const types = String(p.type).split(",").filter((t) => t !== "null");
      return `must be ${types.map((t) => TYPE_NAMES[t] ?? t).join(" or ")}`;
    }
    case "minimum":
      return `must be >= ${p.limit}`;
    case "maximum":
      return `must be <= ${p.limit}`;
    case "minItems":
      return `must have at least ${p.limit} item${p.limit === 1 ? "" : "s"}`;
    case "minLength":
      return "must not be empty";
    case "enum":
      return `must be one of ${
        (p.allowedValues as unknown[]).filter((v) => v !== null && v !== "").join(", ")
      }`;
    case "false schema":
      return "is not allowed here";
    default:
      return e.message ?? e.keyword;
  }
}
