/**
 * Request bodies and query strings of /v0/runs* parsed into the run registry's typed requests.
 * A member of the wrong type is a 400 naming it (never silently dropped); `null` counts as
 * absent for optional members; unknown members are ignored.
 */
import { invalidArgument } from "../common/mod.ts";
import {
  CLIENT_CLOSE_REASONS,
  type ClientCloseReason,
  type CloseRunRequest,
  type EventPageRequest,
  type MarkerRequest,
  type OpenRunRequest,
  type PageRequest,
  type TagScope,
} from "../runs/mod.ts";
import { isPlainObject } from "./json_body.ts";

/** POST /v0/runs: `undefined` (no body) or null is the empty request. */
export function parseOpenRun(body: unknown): OpenRunRequest {
  const b = optionalBodyObject(body);
  const out: { -readonly [K in keyof OpenRunRequest]: OpenRunRequest[K] } = {};
  const params = optionalObject(b, "params");
  if (params !== undefined) out.params = params;
  const label = b.experiment_label;
  if (label !== undefined && label !== null) {
    if (typeof label !== "string") {
      throw invalidArgument(`experiment_label: must be a string or null, got ${typeName(label)}`);
    }
    out.experiment_label = label;
  }
  const scope = optionalObject(b, "tag_scope");
  if (scope !== undefined) {
    const tagScope: Partial<TagScope> = {};
    for (const key of ["provider_ids", "device_ids", "signal_ids"] as const) {
      const list = optionalStringList(scope[key], `tag_scope.${key}`);
      if (list !== undefined) tagScope[key] = list;
    }
    out.tag_scope = tagScope;
  }
  return out;
}

/** POST /v0/runs/{run_id}/close. */
export function parseCloseRun(body: unknown): CloseRunRequest {
  const b = optionalBodyObject(body);
  const reason = b.close_reason;
  if (reason === undefined || reason === null) return {};
  if (
    typeof reason !== "string" || !(CLIENT_CLOSE_REASONS as readonly string[]).includes(reason)
  ) {
    throw invalidArgument(`close_reason: must be one of ${CLIENT_CLOSE_REASONS.join(", ")}`);
  }
  return { close_reason: reason as ClientCloseReason };
}

/** POST /v0/runs/{run_id}/events: a marker; the body is required. */
export function parseMarker(body: unknown): MarkerRequest {
  if (!isPlainObject(body)) throw invalidArgument("body: must be a JSON object with a type");
  const type = body.type;
  if (type === undefined || type === null) throw invalidArgument("type: missing");
  if (typeof type !== "string") {
    throw invalidArgument(`type: must be a string, got ${typeName(type)}`);
  }
  const out: { -readonly [K in keyof MarkerRequest]: MarkerRequest[K] } = { type };
  const payload = optionalObject(body, "payload");
  if (payload !== undefined) out.payload = payload;
  const occurred = body.occurred_at_epoch_ms;
  if (occurred !== undefined && occurred !== null) {
    if (typeof occurred !== "number" || !Number.isSafeInteger(occurred) || occurred < 0) {
      throw invalidArgument("occurred_at_epoch_ms: must be a non-negative integer");
    }
    out.occurred_at_epoch_ms = occurred;
  }
  return out;
}

/**
 * GET /v0/runs: `limit` and `offset` as the contract has them (an unparseable value takes the
 * default, as anolis does).
 */
export function parseRunsPage(query: URLSearchParams): PageRequest {
  const out: { -readonly [K in keyof PageRequest]: PageRequest[K] } = {};
  const limit = lenientInt(query.get("limit"));
  const offset = lenientInt(query.get("offset"));
  if (limit !== undefined) out.limit = limit;
  if (offset !== undefined) out.offset = offset;
  return out;
}

/** GET /v0/runs/{run_id}/events: limit/offset as for runs, plus the strict `after_sequence`. */
export function parseEventsPage(query: URLSearchParams): EventPageRequest {
  const page: { -readonly [K in keyof EventPageRequest]: EventPageRequest[K] } = {
    ...parseRunsPage(query),
  };
  const after = query.get("after_sequence");
  if (after !== null) {
    if (!/^\d{1,15}$/.test(after)) {
      throw invalidArgument("after_sequence: must be a non-negative integer");
    }
    page.after_sequence = Number(after);
  }
  return page;
}

/** An optional body: absent or null -> {}; otherwise it must be a JSON object. */
function optionalBodyObject(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (!isPlainObject(body)) throw invalidArgument("body: must be a JSON object");
  return body;
}

function optionalObject(
  b: Record<string, unknown>,
  field: string,
): Record<string, unknown> | undefined {
  const v = b[field];
  if (v === undefined || v === null) return undefined;
  if (!isPlainObject(v)) {
    throw invalidArgument(`${field}: must be a JSON object, got ${typeName(v)}`);
  }
  return v;
}

function optionalStringList(v: unknown, field: string): string[] | undefined {
  if (v === undefined || v === null) return undefined;
  if (!Array.isArray(v)) {
    throw invalidArgument(`${field}: must be an array of strings, got ${typeName(v)}`);
  }
  v.forEach((s, i) => {
    if (typeof s !== "string") {
      throw invalidArgument(`${field}[${i}]: must be a string, got ${typeName(s)}`);
    }
  });
  return v as string[];
}

/** `[+-]digits` -> the number; anything else -> undefined (the default applies). */
function lenientInt(s: string | null): number | undefined {
  return s !== null && /^\s*[+-]?\d+\s*$/.test(s) ? Number.parseInt(s, 10) : undefined;
}

/** JSON type name for messages: string, number, boolean, array, object, null. */
function typeName(v: unknown): string {
  if (v === null) return "null";
  if (Array.isArray(v)) return "array";
  return typeof v;
}
