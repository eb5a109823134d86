/**
 * Structure layer: validates the plain YAML data against the embedded JSON Schema (allErrors) and
 * maps every error back to a key path, so it can be positioned and deduplicated against the
 * semantic layer. The validator is ajv's standalone code for RUNTIME_CONFIG_SCHEMA, generated at
 * build time (`deno task config:validator` -> _structure_validator.js), so neither ajv nor a
 * schema compile runs at start-up.
 */
import { validate as generatedValidate } from "./_structure_validator.js";
import type { Path, Segment } from "./_source.ts";

/** One structure error: where and what, before positions are attached. */
export interface StructureError {
  readonly path: Path;
  readonly message: string;
}

/** The fields of an ajv error object (verbose mode) that the structure layer reads. */
interface ErrorObject {
  readonly keyword: string;
  readonly instancePath: string;
  readonly schemaPath: string;
  readonly params: Record<string, unknown>;
  readonly message?: string;
  readonly parentSchema?: unknown;
}

/** An ajv validate function: true when valid, else its errors are in `errors`. */
interface ValidateFunction {
  (data: unknown): boolean;
  errors?: ErrorObject[] | null;
}

const validate = generatedValidate as unknown as ValidateFunction;

/** Validates `data` against the runtime configuration schema. */
export function validateStructure(data: unknown): StructureError[] {
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
