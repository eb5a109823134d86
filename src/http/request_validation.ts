/**
 * POST bodies checked by the validators generated from their schemas (request_schemas.ts ->
 * `deno task api:validators` -> _request_validators.js): the first problem, in the order of the
 * schema's members, becomes a 400 INVALID_ARGUMENT naming the field (`args.duty.double: must be a
 * number`), with the schema's `x-errors` message when it has one.
 */
import { invalidArgument } from "../common/mod.ts";
import {
  type BodyLimits,
  denotesInteger,
  readJsonBody,
  roundedIntegerText,
  storedAsWritten,
} from "./json_body.ts";
import type { JsonSchema } from "./request_schemas.ts";

/** One error of a generated validator (ajv's shape, `verbose`: with its schema and data). */
export interface ValidatorError {
  readonly instancePath: string;
  readonly keyword: string;
  readonly params: Readonly<Record<string, unknown>>;
  readonly parentSchema?: JsonSchema;
  readonly data?: unknown;
}

/** A generated validator: true when valid, else its `errors`. */
export type RequestValidator = ((data: unknown) => boolean) & {
  errors?: readonly ValidatorError[] | null;
};

let validators: Readonly<Record<string, RequestValidator | undefined>> | null = null;

/**
 * Loads the generated validators: on the first request with a body, so a runtime that is only
 * read from never holds their code. Resolves at once after the first time.
 */
export async function loadRequestValidators(): Promise<void> {
  validators ??= await import("./_request_validators.js") as unknown as Readonly<
    Record<string, RequestValidator | undefined>
  >;
}

/**
 * The generated validator of a route's body, by operationId (after loadRequestValidators);
 * throws when it was not generated.
 */
export function requestValidator(operationId: string): RequestValidator {
  if (validators === null) throw new Error("requestValidator before loadRequestValidators()");
  const v = validators[operationId];
  if (typeof v !== "function") {
    throw new Error(
      `no generated validator for ${operationId}: run \`deno task api:validators\``,
    );
  }
  return v;
}

/**
 * Checks a parsed body (`undefined`: none was sent) against a route's schema (after
 * loadRequestValidators) and returns it
 * typed; throws INVALID_ARGUMENT naming the first wrong field. An absent body is `null` for a
 * schema that allows null, else refused with the schema's `absent` message.
 */
export function validateRequestBody<T>(
  operationId: string,
  schema: JsonSchema,
  body: unknown,
): T {
  const validate = requestValidator(operationId);
  const value = body === undefined ? null : body;
  if (validate(value)) {
    const rounded = roundedIntegerMember(schema, value, []);
    if (rounded !== null) throw invalidArgument(rounded);
    return value as T;
  }
  if (body === undefined) {
    const absent = xErrors(schema).absent;
    if (typeof absent === "string") throw invalidArgument(`body: ${absent}`);
  }
  throw invalidArgument(firstProblem(validate.errors ?? [], schema, value));
}

/**
 * The first member the schema declares an integer whose JSON text parsing rounded to the integer
 * it holds (json_body.ts roundedIntegerText: `10.0000000000000001` read as 10), as the 400
 * message naming it; null when there is none. The validators see only the parsed double, which
 * is an integer. Walks the members the schema declares (properties, additionalProperties, items)
 * in the schema's order.
 */
function roundedIntegerMember(
  schema: JsonSchema,
  value: unknown,
  path: (string | number)[],
): string | null {
  if (typeof value !== "object" || value === null) return null;
  const check = (sub: unknown, key: string | number): string | null => {
    if (typeof sub !== "object" || sub === null) return null;
    const s = sub as JsonSchema;
    const member = (value as Record<string, unknown>)[key];
    const types = Array.isArray(s.type) ? s.type : [s.type];
    if (types.includes("integer") && typeof member === "number") {
      const written = roundedIntegerText(value, String(key));
      if (written !== undefined) return roundedAt([...path, key], written, member);
    }
    if (freeForm(s)) return roundedFreeFormInteger(member, [...path, key]);
    return roundedIntegerMember(s, member, [...path, key]);
  };
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = check(schema.items, i);
      if (problem !== null) return problem;
    }
    return null;
  }
  const properties = (schema.properties ?? {}) as Record<string, unknown>;
  for (const key of Object.keys(properties)) {
    if (!Object.hasOwn(value, key)) continue;
    const problem = check(properties[key], key);
    if (problem !== null) return problem;
  }
  const more = schema.additionalProperties;
  if (typeof more === "object" && more !== null) {
    for (const key of Object.keys(value)) {
      if (Object.hasOwn(properties, key)) continue;
      const problem = check(more, key);
      if (problem !== null) return problem;
    }
  }
  return null;
}

function roundedAt(path: readonly (string | number)[], written: string, member: number): string {
  if (!Number.isFinite(member)) {
    return at(
      path,
      `${written} is beyond any double ` +
        `(a JSON number read as a double: it would arrive as ${member})`,
    );
  }
  return at(
    path,
    `${written} is not an integer as written ` +
      `(a JSON number read as a double: it would arrive as ${member})`,
  );
}

/**
 * A member the schema leaves free-form (run `params`, marker `payload`: an object or array it
 * does not describe), stored as given: any double is welcome, but an integer its text gives that
 * parsing rounded (beyond 2^53) would be stored as another integer, and a number beyond any double
 * (`1e400`: Infinity) as null. A number stored as the text written denotes (`6.02e23`, stored
 * `6.02e+23`) is kept, although the double is not exactly that integer.
 */
function freeForm(s: JsonSchema): boolean {
  const types = Array.isArray(s.type) ? s.type : [s.type];
  return (types.includes("object") || types.includes("array")) &&
    s.properties === undefined && s.additionalProperties === undefined && s.items === undefined;
}

/**
 * The first integer of a free-form value (document order) that parsing rounded, or number beyond
 * any double, as the 400 message; or null. Recursive: bodies nest at most MAX_JSON_DEPTH levels (json_body.ts).
 */
function roundedFreeFormInteger(value: unknown, path: (string | number)[]): string | null {
  if (typeof value !== "object" || value === null) return null;
  const keys: (string | number)[] = Array.isArray(value)
    ? value.map((_, i) => i)
    : Object.keys(value);
  for (const k of keys) {
    const member = (value as Record<string | number, unknown>)[k];
    if (typeof member === "number") {
      const written = roundedIntegerText(value, String(k));
      if (
        written !== undefined &&
        (!Number.isFinite(member) ||
          (denotesInteger(written) && !storedAsWritten(written, member)))
      ) {
        return roundedAt([...path, k], written, member);
      }
      continue;
    }
    const problem = roundedFreeFormInteger(member, [...path, k]);
    if (problem !== null) return problem;
  }
  return null;
}

/** What readRequestBody needs of a route's documentation (route_table.ts RouteDoc). */
export interface BodySpec {
  readonly operationId: string;
  readonly body?: {
    readonly schema: JsonSchema;
    readonly handling?: "validated" | "lenient" | "ignored";
  };
}

/**
 * A route's body, read (bounded by `limits`) and checked against its schema; a route without a
 * checked body has its body discarded unread and gets `null`.
 */
export async function readRequestBody<T>(
  req: Request,
  limits: BodyLimits,
  spec: BodySpec,
): Promise<T> {
  if (spec.body === undefined || (spec.body.handling ?? "validated") !== "validated") {
    await req.body?.cancel().catch(() => {});
    return null as T;
  }
  const body = await readJsonBody(req, limits);
  await loadRequestValidators();
  return validateRequestBody<T>(spec.operationId, spec.body.schema, body);
}

/** Wrapper keywords whose own error only repeats what their subschemas said. */
const WRAPPERS = new Set(["if", "then", "else", "allOf", "anyOf", "oneOf", "not"]);

/**
 * The message of the first error, in the order of the root schema's members; `body` (the parsed
 * body validated) gives a number beyond any double as the client wrote it.
 */
export function firstProblem(
  errors: readonly ValidatorError[],
  root: JsonSchema,
  body?: unknown,
): string {
  const order = Object.keys((root.properties ?? {}) as object);
  let best: { rank: number; text: string } | null = null;
  for (const e of errors) {
    if (WRAPPERS.has(e.keyword)) continue;
    const p = describe(e, body, root);
    const rank = p.path.length === 0 ? -1 : order.indexOf(String(p.path[0]));
    if (best === null || rank < best.rank) best = { rank, text: p.text };
  }
  return best?.text ?? "body: does not match the request schema";
}

function describe(
  e: ValidatorError,
  body: unknown,
  root: JsonSchema,
): { path: (string | number)[]; text: string } {
  const path = e.instancePath.split("/").slice(1).map((s) => {
    const key = s.replaceAll("~1", "/").replaceAll("~0", "~");
    return /^\d+$/.test(key) ? Number(key) : key;
  });
  const own = e.parentSchema === undefined ? {} : xErrors(e.parentSchema);
  if (e.keyword === "required") {
    const missing = String(e.params.missingProperty);
    // A message for the parent (`args.duty: missing "double" member`) or for the member itself.
    if (typeof own.required === "string") {
      return { path, text: at(path, fill(own.required, undefined, missing)) };
    }
    const memberSchema = (e.parentSchema?.properties as Record<string, JsonSchema> | undefined)
      ?.[missing];
    const text = memberSchema === undefined ? undefined : xErrors(memberSchema).required;
    return {
      path: [...path, missing],
      text: at([...path, missing], typeof text === "string" ? text : "missing"),
    };
  }
  if (e.keyword === "type" && e.data === null && path.length > 0 && requiredAt(root, path)) {
    // null counts as absent: for a member that must be there, it is missing (an optional one
    // that does not take null is named by its type, below: `args: null` is not "missing").
    return {
      path,
      text: at(path, typeof own.required === "string" ? own.required : "missing"),
    };
  }
  if (e.keyword === "type" && typeof e.data === "number" && !Number.isFinite(e.data)) {
    // Valid JSON beyond any double (`1e400`) parses to +/-Infinity: it is a number, so not "must
    // be a number" but named as written, as the members that pass their schema are (roundedAt).
    return { path, text: roundedAt(path, writtenAt(body, path) ?? String(e.data), e.data) };
  }
  const template = own[e.keyword] ?? own["*"];
  const text = typeof template === "string"
    ? fill(template, e.data, undefined)
    : defaultMessage(e, path.length === 0);
  return { path, text: at(path, text) };
}

/**
 * Whether the schema requires the member at `path` of its holder (its `required`, or one its
 * `allOf` branches add: a typed value's member named like its type).
 */
function requiredAt(root: JsonSchema, path: readonly (string | number)[]): boolean {
  let s: unknown = root;
  for (const p of path.slice(0, -1)) {
    if (typeof s !== "object" || s === null) return true;
    const h = s as JsonSchema;
    const own = (h.properties as Record<string, unknown> | undefined)?.[String(p)];
    s = typeof p === "number" ? h.items : own ?? h.additionalProperties;
  }
  if (typeof s !== "object" || s === null) return true;
  const holder = s as JsonSchema;
  const key = String(path[path.length - 1]);
  const branches = Array.isArray(holder.allOf) ? holder.allOf as JsonSchema[] : [];
  return [holder, ...branches.map((b) => (b.then ?? {}) as JsonSchema)]
    .some((h) => Array.isArray(h.required) && h.required.includes(key));
}

/** The JSON text of the number at `path` in `body` when parsing noted it (roundedIntegerText). */
function writtenAt(body: unknown, path: readonly (string | number)[]): string | undefined {
  let holder = body;
  for (const p of path.slice(0, -1)) {
    if (typeof holder !== "object" || holder === null) return undefined;
    holder = (holder as Record<string | number, unknown>)[p];
  }
  if (typeof holder !== "object" || holder === null || path.length === 0) return undefined;
  return roundedIntegerText(holder, String(path[path.length - 1]));
}

function xErrors(schema: JsonSchema): Record<string, unknown> {
  const x = schema["x-errors"];
  return typeof x === "object" && x !== null ? x as Record<string, unknown> : {};
}

/** `args.duty.double`, `tag_scope.provider_ids[2]`; the root is `body`. */
function at(path: readonly (string | number)[], text: string): string {
  if (path.length === 0) return `body: ${text}`;
  let name = "";
  for (const p of path) name += typeof p === "number" ? `[${p}]` : name === "" ? p : `.${p}`;
  return `${name}: ${text}`;
}

function fill(template: string, data: unknown, missing: string | undefined): string {
  return template
    .replaceAll("{data}", String(data))
    .replaceAll("{json}", JSON.stringify(data) ?? "undefined")
    .replaceAll("{type}", typeName(data))
    .replaceAll("{missing}", missing ?? "");
}

const A_TYPE: Readonly<Record<string, string>> = {
  object: "a JSON object",
  array: "an array",
  string: "a string",
  number: "a number",
  integer: "an integer",
  boolean: "a boolean",
  null: "null",
};

function defaultMessage(e: ValidatorError, root: boolean): string {
  const p = e.params;
  switch (e.keyword) {
    case "type": {
      const types = String(p.type).split(",").map((t) => A_TYPE[t] ?? t);
      return root && types[0] === "a JSON object"
        ? "must be a JSON object"
        : `must be ${types.join(" or ")}`;
    }
    case "enum":
      return `must be one of ${(p.allowedValues as unknown[]).map(String).join(", ")}`;
    case "const":
      return `must be ${JSON.stringify(p.allowedValue)}`;
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
      return `must be ${p.comparison} ${p.limit}`;
    case "minLength":
      return `must be at least ${p.limit} characters long`;
    case "maxLength":
      return `must be at most ${p.limit} characters long`;
    case "pattern":
      return `must match ${p.pattern}`;
    default:
      return `does not match the schema (${e.keyword})`;
  }
}

/** JSON type name for messages: string, number, boolean, array, object, null. */
function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}
