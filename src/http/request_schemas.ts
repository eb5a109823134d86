/**
 * JSON Schemas (2020-12, the dialect of OpenAPI 3.1) of every POST body, with the TypeScript type
 * each one validates to. They are the one source of truth: the route table (api/<domain>_routes.ts)
 * puts each next to its route, `deno task api:validators` compiles them into
 * src/http/_request_validators.js (no ajv at run time), request_validation.ts turns a failed check
 * into the 400 message naming the field, and GET /v0/openapi.json publishes them.
 *
 * `x-errors` is this project's annotation (ignored by other tools): the message for a failed
 * keyword of that schema (`*` for any keyword; `required` on a member: the message when it is
 * missing; `absent` at a body's root: the message when there is no body). Templates: `{data}` the
 * value, `{json}` its JSON, `{type}` its JSON type name, `{missing}` the missing member's name.
 * `null` counts as absent: a member that may not be null is "missing" when it is.
 */
import { MAX_SHELVE_MS } from "../alarms/mod.ts";
import { INCIDENT_REASON_MAX_CHARS } from "../history/mod.ts";
import { ESTOP_LOGGED_REASON_CHARS } from "../safety/mod.ts";
import { VALUE_TYPES } from "../common/mod.ts";
import type { RuntimeMode } from "../config/mod.ts";
import {
  CLIENT_CLOSE_REASONS,
  MAX_MARKER_ID_CHARS,
  MAX_MARKER_TYPE_CHARS,
  MAX_RECORD_BYTES,
} from "../runs/mod.ts";

/** A JSON Schema object (2020-12) as plain data. */
export type JsonSchema = { readonly [keyword: string]: unknown };

/** Largest integer a JSON body can carry exactly (bodies are parsed into doubles). */
const MAX_EXACT = Number.MAX_SAFE_INTEGER;
const MAX_UINT32 = 0xffff_ffff;

/** Standard base64 alphabet, padded to a multiple of 4 (RFC 4648 sec. 4). */
export const BASE64_PATTERN = "^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$";

/** The JSON member that carries the value of each type (bytes travel as `base64`). */
const VALUE_MEMBER: Readonly<Record<string, { member: string; schema: JsonSchema }>> = {
  double: { member: "double", schema: { type: "number" } },
  int64: {
    member: "int64",
    schema: {
      type: "integer",
      minimum: -MAX_EXACT,
      maximum: MAX_EXACT,
      "x-errors": { "*": "must be an integer within \u00b1(2^53-1)" },
    },
  },
  uint64: {
    member: "uint64",
    schema: {
      type: "integer",
      minimum: 0,
      maximum: MAX_EXACT,
      "x-errors": { "*": "must be an integer from 0 to 2^53-1" },
    },
  },
  bool: { member: "bool", schema: { type: "boolean" } },
  string: { member: "string", schema: { type: "string" } },
  bytes: {
    member: "base64",
    schema: {
      type: "string",
      pattern: BASE64_PATTERN,
      "x-errors": { "*": "must be base64 (standard alphabet, padded)" },
    },
  },
};

/** A typed value as a client sends it: `{type, <member named like the type>}`. */
export const TYPED_VALUE_INPUT_SCHEMA: JsonSchema = {
  type: "object",
  description: "A typed value: `{type, <member>}`; bytes travel as `base64` (standard, padded). " +
    "int64/uint64 are limited to \u00b1(2^53-1) in a request (a JSON body is parsed into doubles).",
  required: ["type"],
  properties: {
    type: {
      type: "string",
      enum: [...VALUE_TYPES],
      "x-errors": {
        enum: `unknown value type "{data}" (expected one of ${VALUE_TYPES.join(", ")})`,
      },
    },
    ...Object.fromEntries(
      Object.values(VALUE_MEMBER).map(({ member, schema }) => [member, schema]),
    ),
  },
  allOf: VALUE_TYPES.map((t) => ({
    if: { required: ["type"], properties: { type: { const: t } } },
    then: {
      required: [VALUE_MEMBER[t]!.member],
      "x-errors": { required: 'missing "{missing}" member' },
    },
  })),
  "x-errors": { type: "must be a typed value object", required: 'missing "{missing}"' },
};

/** POST /v0/call. */
export const CALL_BODY_SCHEMA: JsonSchema = {
  type: "object",
  required: ["provider_id", "device_id", "function_id"],
  properties: {
    provider_id: { type: "string" },
    device_id: { type: "string" },
    function_id: {
      type: "integer",
      minimum: 0,
      maximum: MAX_UINT32,
      description: "The function to call (dispatch by name is not accepted over HTTP).",
      "x-errors": {
        "*": `must be an integer from 0 to ${MAX_UINT32}`,
        required: "missing (name dispatch is not accepted over HTTP)",
      },
    },
    args: {
      type: "object",
      description: "Arguments by name; checked against the function's declared arguments by the " +
        "call router (required, type, min/max, allowed values), which a schema cannot know.",
      additionalProperties: TYPED_VALUE_INPUT_SCHEMA,
      "x-errors": { type: "must be an object of typed values" },
    },
  },
  "x-errors": { absent: "missing, expected a JSON object", type: "must be a JSON object" },
};

/** The modes in the order the error names them (`must be one of MANUAL, AUTO, IDLE, FAULT`). */
const MODES = ["MANUAL", "AUTO", "IDLE", "FAULT"] as const satisfies readonly RuntimeMode[];

/** POST /v0/mode. */
export const MODE_BODY_SCHEMA: JsonSchema = {
  type: "object",
  required: ["mode"],
  properties: {
    mode: {
      type: "string",
      enum: [...MODES],
      "x-errors": { enum: `must be one of ${MODES.join(", ")} (got "{data}")` },
    },
  },
  "x-errors": { absent: "missing, expected a JSON object", type: "must be a JSON object" },
};

/** POST /v0/estop: optional; a body that does not match is ignored, never refused. */
export const ESTOP_BODY_SCHEMA: JsonSchema = {
  type: "object",
  description: "Optional and informative only: the latch engages before the body is read; a " +
    "body that is not this (not JSON, too deep, too slow) is ignored, never refused.",
  properties: {
    reason: {
      type: "string",
      // No maxLength: a longer reason is taken, and kept whole where the stop is read back.
      description: "Logged with the stop; the cause of its incident record. Any length (within " +
        "the body's bound): the E-STOP log lines carry at most " +
        `${ESTOP_LOGGED_REASON_CHARS} characters of it and the incident record's cause at most ` +
        `${INCIDENT_REASON_MAX_CHARS}, each cut marked with an ellipsis; the e-stop status, its ` +
        "event and the audit trail keep it whole.",
    },
  },
};

/** POST /v0/estop/clear: any body is discarded unread. */
export const IGNORED_BODY_SCHEMA: JsonSchema = {
  description: "Ignored (discarded unread); send none.",
};

/** POST /v0/parameters. */
export const SET_PARAMETER_BODY_SCHEMA: JsonSchema = {
  type: "object",
  required: ["name", "value"],
  properties: {
    name: { type: "string" },
    value: {
      description: "Any JSON value: the parameter service checks it against the parameter's " +
        "declared type, range and allowed values (400 `Invalid value \u2026`).",
    },
  },
  "x-errors": { absent: "missing, expected a JSON object", type: "must be a JSON object" },
};

/** POST /v0/alarms/{alarm_id}/ack and /unshelve: no body, or an object (members ignored). */
export const NO_ARGUMENTS_BODY_SCHEMA: JsonSchema = {
  type: ["object", "null"],
  description: "No body, or a JSON object whose members are ignored.",
  "x-errors": { type: "must be empty or a JSON object" },
};

/** POST /v0/alarms/{alarm_id}/shelve. */
export const SHELVE_BODY_SCHEMA: JsonSchema = {
  type: "object",
  required: ["duration_ms"],
  properties: {
    duration_ms: {
      type: "integer",
      minimum: 1,
      maximum: MAX_SHELVE_MS,
      description: "How long to shelve, in ms (at most 8 h).",
      "x-errors": {
        "*": `must be an integer from 1 to ${MAX_SHELVE_MS} (8 h), got {json}`,
        required: "missing (how long to shelve, in ms, at most 8 h)",
      },
    },
  },
  "x-errors": {
    absent: "must be a JSON object with duration_ms",
    type: "must be a JSON object with duration_ms",
  },
};

const stringList = (field: string): JsonSchema => ({
  type: ["array", "null"],
  items: { type: "string", "x-errors": { type: "must be a string, got {type}" } },
  description: `${field} (absent: []).`,
  "x-errors": { type: "must be an array of strings, got {type}" },
});

/** The run record's bound, shared by the texts of POST /v0/runs (no maxLength of their own). */
const RUN_RECORD_BOUND = `experiment_label, params and tag_scope are bounded together, not one ` +
  `by one: the run record holding them must fit in ${MAX_RECORD_BYTES} bytes (UTF-8 JSON, ` +
  `MAX_RECORD_BYTES), else 400 "run record exceeds ${MAX_RECORD_BYTES} bytes: shorten params, ` +
  `tag_scope or experiment_label".`;

/** POST /v0/runs: every member optional; no body, `{}` and `null` are the same. */
export const OPEN_RUN_BODY_SCHEMA: JsonSchema = {
  type: ["object", "null"],
  description: `Every member optional. ${RUN_RECORD_BOUND}`,
  properties: {
    experiment_label: {
      type: ["string", "null"],
      description: `Stored as given. ${RUN_RECORD_BOUND}`,
      "x-errors": { type: "must be a string or null, got {type}" },
    },
    params: {
      type: ["object", "null"],
      description: "Any JSON object, stored as given.",
      "x-errors": { type: "must be a JSON object, got {type}" },
    },
    tag_scope: {
      type: ["object", "null"],
      description: "Recorded with the run; it filters nothing.",
      properties: {
        provider_ids: stringList("Provider ids"),
        device_ids: stringList("Device ids"),
        signal_ids: stringList("Signal ids"),
      },
      "x-errors": { type: "must be a JSON object, got {type}" },
    },
  },
  "x-errors": { type: "must be a JSON object" },
};

/** POST /v0/runs/{run_id}/close. */
export const CLOSE_RUN_BODY_SCHEMA: JsonSchema = {
  type: ["object", "null"],
  properties: {
    close_reason: {
      type: ["string", "null"],
      enum: [...CLIENT_CLOSE_REASONS, null],
      description: "Default operator_stop; the runtime alone sets abandoned.",
      "x-errors": { "*": `must be one of ${CLIENT_CLOSE_REASONS.join(", ")}` },
    },
  },
  "x-errors": { type: "must be a JSON object" },
};

/** POST /v0/runs/{run_id}/events: an operator marker. */
export const MARKER_BODY_SCHEMA: JsonSchema = {
  type: "object",
  required: ["type"],
  properties: {
    type: {
      type: "string",
      // maxLength counts characters (code points), as the run registry does.
      minLength: 1,
      maxLength: MAX_MARKER_TYPE_CHARS,
      description: `Non-empty, at most ${MAX_MARKER_TYPE_CHARS} characters (Unicode code points).`,
      "x-errors": {
        type: "must be a string, got {type}",
        minLength: "must be a non-empty string",
        maxLength: `longer than ${MAX_MARKER_TYPE_CHARS} characters`,
      },
    },
    payload: {
      type: ["object", "null"],
      description: `Default {}. The marker's event must fit in ${MAX_RECORD_BYTES} bytes ` +
        `(UTF-8 JSON), else 400 "marker exceeds ${MAX_RECORD_BYTES} bytes: shorten payload".`,
      "x-errors": { type: "must be a JSON object, got {type}" },
    },
    occurred_at_epoch_ms: {
      type: ["integer", "null"],
      minimum: 0,
      maximum: MAX_EXACT,
      description: "Default: now.",
      "x-errors": { "*": "must be a non-negative integer" },
    },
    marker_id: {
      type: ["string", "null"],
      minLength: 1,
      maxLength: MAX_MARKER_ID_CHARS,
      description:
        `The client's key for this marker (project addition; 1 to ${MAX_MARKER_ID_CHARS} ` +
        "characters, Unicode code points): a repeat within the run answers the marker recorded " +
        "first and writes nothing (a retry after a lost answer).",
      "x-errors": {
        type: "must be a string, got {type}",
        minLength: `must be a string of 1 to ${MAX_MARKER_ID_CHARS} characters`,
        maxLength: `must be a string of 1 to ${MAX_MARKER_ID_CHARS} characters`,
      },
    },
  },
  "x-errors": {
    absent: "must be a JSON object with a type",
    type: "must be a JSON object with a type",
  },
};

// ---- the types the schemas above validate to ----

/** A typed value as validated by TYPED_VALUE_INPUT_SCHEMA (members other than its own ignored). */
export interface TypedValueInput {
  readonly type: "double" | "int64" | "uint64" | "bool" | "string" | "bytes";
  readonly double?: number;
  readonly int64?: number;
  readonly uint64?: number;
  readonly bool?: boolean;
  readonly string?: string;
  readonly base64?: string;
}

export interface CallBody {
  readonly provider_id: string;
  readonly device_id: string;
  readonly function_id: number;
  readonly args?: Readonly<Record<string, TypedValueInput>>;
}

export interface ModeBody {
  readonly mode: RuntimeMode;
}

export interface SetParameterBody {
  readonly name: string;
  readonly value: unknown;
}

export interface ShelveBody {
  readonly duration_ms: number;
}

export interface OpenRunBody {
  readonly experiment_label?: string | null;
  readonly params?: Record<string, unknown> | null;
  readonly tag_scope?: {
    readonly provider_ids?: string[] | null;
    readonly device_ids?: string[] | null;
    readonly signal_ids?: string[] | null;
  } | null;
}

export interface CloseRunBody {
  readonly close_reason?: (typeof CLIENT_CLOSE_REASONS)[number] | null;
}

export interface MarkerBody {
  readonly type: string;
  readonly payload?: Record<string, unknown> | null;
  readonly occurred_at_epoch_ms?: number | null;
  readonly marker_id?: string | null;
}
