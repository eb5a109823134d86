/**
 * Validated bodies (request_schemas.ts) and query strings of /v0/runs* as the run registry's
 * typed requests: `null` members are absent, unknown members are dropped.
 */
import { invalidArgument } from "../common/mod.ts";
import type {
  CloseRunRequest,
  EventPageRequest,
  MarkerRequest,
  OpenRunRequest,
  PageRequest,
  RunsPageRequest,
  TagScope,
} from "../runs/mod.ts";
import type { CloseRunBody, MarkerBody, OpenRunBody } from "./request_schemas.ts";
import { positiveAtMost, SAFE_DIGITS } from "./query_patterns.ts";

/** POST /v0/runs: no body (null) is the empty request. */
export function openRunRequest(body: OpenRunBody | null): OpenRunRequest {
  const out: { -readonly [K in keyof OpenRunRequest]: OpenRunRequest[K] } = {};
  if (body === null) return out;
  if (body.params != null) out.params = body.params;
  if (body.experiment_label != null) out.experiment_label = body.experiment_label;
  const scope = body.tag_scope;
  if (scope != null) {
    const tagScope: Partial<TagScope> = {};
    for (const key of ["provider_ids", "device_ids", "signal_ids"] as const) {
      const list = scope[key];
      if (list != null) tagScope[key] = list;
    }
    out.tag_scope = tagScope;
  }
  return out;
}

/** POST /v0/runs/{run_id}/close. */
export function closeRunRequest(body: CloseRunBody | null): CloseRunRequest {
  const reason = body?.close_reason;
  return reason == null ? {} : { close_reason: reason };
}

/** POST /v0/runs/{run_id}/events: a marker. */
export function markerRequest(body: MarkerBody): MarkerRequest {
  const out: { -readonly [K in keyof MarkerRequest]: MarkerRequest[K] } = { type: body.type };
  if (body.payload != null) out.payload = body.payload;
  if (body.occurred_at_epoch_ms != null) out.occurred_at_epoch_ms = body.occurred_at_epoch_ms;
  if (body.marker_id != null) out.marker_id = body.marker_id;
  return out;
}

/**
 * GET /v0/runs: `limit` and `offset` as docs/http-api.md "Runs" gives them (a value that does not
 * read as a number takes the default, as anolis does; one written as a number that is not an
 * integer within +-(2^53-1) -- `1e20`, twenty digits, `1.5` -- is INVALID_ARGUMENT naming it).
 */
export function parseRunsPage(query: URLSearchParams): PageRequest {
  const out: { -readonly [K in keyof PageRequest]: PageRequest[K] } = {};
  const limit = lenientInt(query.get("limit"), "limit");
  const offset = lenientInt(query.get("offset"), "offset");
  if (limit !== undefined) out.limit = limit;
  if (offset !== undefined) out.offset = offset;
  return out;
}

/** GET /v0/runs: limit/offset, plus the cursor `before` (a run id; the registry checks it). */
export function parseRunsListPage(query: URLSearchParams): RunsPageRequest {
  const before = query.get("before");
  return before === null ? parseRunsPage(query) : { ...parseRunsPage(query), before };
}

/** Characters of a bad `after_sequence` its error message shows (the rest cut, "..."). */
export const AFTER_SEQUENCE_SHOWN_CHARS = 32;

/** GET /v0/runs/{run_id}/events: limit/offset as for runs, plus the strict `after_sequence`. */
export function parseEventsPage(query: URLSearchParams): EventPageRequest {
  const page: { -readonly [K in keyof EventPageRequest]: EventPageRequest[K] } = {
    ...parseRunsPage(query),
  };
  const after = query.get("after_sequence");
  if (after !== null) {
    // Digits only (no sign, fraction, exponent or spaces), at most 2^53-1: any sequence number.
    const n = SAFE_DIGITS.test(after) ? Number(after) : NaN;
    if (!Number.isSafeInteger(n)) {
      const shown = after.length > AFTER_SEQUENCE_SHOWN_CHARS
        ? `${after.slice(0, AFTER_SEQUENCE_SHOWN_CHARS)}...`
        : after;
      throw invalidArgument(
        `after_sequence: must be an integer from 0 to 2^53-1 written in digits (got ${
          JSON.stringify(shown)
        })`,
      );
    }
    page.after_sequence = n;
  }
  return page;
}

/** A JSON-like number: sign, digits, fraction, exponent (what `1e20` or `1.5` look like). */
const NUMBER_TEXT_SOURCE = String.raw`\s*[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?\s*`;
const NUMBER_TEXT = new RegExp(`^${NUMBER_TEXT_SOURCE}$`);
/** An integer in digits, signed, spaces around it (parsed with parseInt, then range-checked). */
const INTEGER_TEXT = /^\s*[+-]?\d+\s*$/;

/**
 * What `limit` and `offset` accept (lenientInt), as the OpenAPI pattern of the parameters: a text
 * that does not read as a number (it takes the default), or an integer in digits within
 * +-(2^53-1).
 */
export const LENIENT_INT_PATTERN = `^(?:(?!${NUMBER_TEXT_SOURCE}$)|` +
  String.raw`\s*[+-]?(?:0*(?:${positiveAtMost(String(Number.MAX_SAFE_INTEGER))})|0+)\s*$)`;

/**
 * `[+-]digits` -> the number; text that does not read as a number -> undefined (the default
 * applies); a number that is not a safe integer -> INVALID_ARGUMENT naming `field`.
 */
function lenientInt(s: string | null, field: string): number | undefined {
  if (s === null || !NUMBER_TEXT.test(s)) return undefined;
  const n = INTEGER_TEXT.test(s) ? Number.parseInt(s, 10) : NaN;
  if (!Number.isSafeInteger(n)) {
    throw invalidArgument(
      `${field}: must be an integer from -(2^53-1) to 2^53-1 (got ${s.trim()})`,
    );
  }
  return n;
}
