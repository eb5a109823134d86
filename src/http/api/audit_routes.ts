/** GET /v0/audit: the audit trail, filtered and paged (docs/http-api.md "Audit trail"). */
import { invalidArgument } from "../../common/mod.ts";
import { AUDIT_ORIGIN_KINDS, type AuditOriginKind } from "../../control/mod.ts";
import { AUDIT_CURSOR_PATTERN, AUDIT_PAGE_LIMIT, type AuditQuery } from "../../audit/mod.ts";
import { okResponse } from "../envelope.ts";
import { digitsRangePattern, SAFE_DIGITS, SAFE_DIGITS_PATTERN } from "../query_patterns.ts";
import { type QueryParameterDoc, type Route, route, type RouteContext } from "../route_table.ts";

/** The query parameters of GET /v0/audit as the OpenAPI document shows them (parsed below). */
export const AUDIT_QUERY_DOC: readonly QueryParameterDoc[] = [
  {
    name: "since",
    description: "Only entries whose last decision is at or after this time (epoch ms: 1 to 16 " +
      "digits, at most 2^53-1).",
    schema: { type: "string", pattern: SAFE_DIGITS_PATTERN },
  },
  {
    name: "until",
    description: "Only entries whose first decision is at or before this time (epoch ms: 1 to 16 " +
      "digits, at most 2^53-1).",
    schema: { type: "string", pattern: SAFE_DIGITS_PATTERN },
  },
  {
    name: "device_id",
    description: "Only calls to this device: `provider/device` or a bare device id.",
    schema: { type: "string", minLength: 1 },
  },
  {
    name: "origin",
    description: "Only entries from this kind of origin.",
    schema: { enum: [...AUDIT_ORIGIN_KINDS] },
  },
  {
    name: "limit",
    description: `Page size (default ${AUDIT_PAGE_LIMIT.default}, 1 to ${AUDIT_PAGE_LIMIT.max} ` +
      "in at most 7 digits; 0 or a larger value is 400).",
    schema: {
      type: "string",
      pattern: digitsRangePattern({ min: 1, max: AUDIT_PAGE_LIMIT.max, maxChars: 7 }),
    },
  },
  {
    name: "cursor",
    description: "`next_cursor` of the previous page (opaque; stays valid across rotation; " +
      "empty: from the start). A text of this pattern that is no cursor of this runtime's trail " +
      "is 400 too.",
    // The parser's own shape (audit_trail.ts), or empty (the route ignores an empty cursor).
    schema: { type: "string", pattern: `^$|${AUDIT_CURSOR_PATTERN}` },
  },
];

/**
 * GET /v0/audit query parameters. Throws INVALID_ARGUMENT naming the parameter: `since`/`until`
 * are epoch milliseconds, `origin` one of the origin kinds, `limit` 1..AUDIT_PAGE_LIMIT.max.
 */
export function parseAuditQuery(q: URLSearchParams): AuditQuery {
  const out: {
    sinceMs?: number;
    untilMs?: number;
    deviceId?: string;
    origin?: AuditOriginKind;
    limit: number;
    cursor?: string;
  } = { limit: AUDIT_PAGE_LIMIT.default };
  const since = q.get("since");
  if (since !== null) out.sinceMs = epochMs(since, "since");
  const until = q.get("until");
  if (until !== null) out.untilMs = epochMs(until, "until");
  if (out.sinceMs !== undefined && out.untilMs !== undefined && out.untilMs < out.sinceMs) {
    throw invalidArgument(`until: ${out.untilMs} is before since (${out.sinceMs})`);
  }
  const device = q.get("device_id");
  if (device !== null) {
    if (device === "") throw invalidArgument("device_id: must not be empty");
    out.deviceId = device;
  }
  const origin = q.get("origin");
  if (origin !== null) {
    if (!(AUDIT_ORIGIN_KINDS as readonly string[]).includes(origin)) {
      throw invalidArgument(
        `origin: must be one of ${AUDIT_ORIGIN_KINDS.join(", ")} (got "${origin}")`,
      );
    }
    out.origin = origin as AuditOriginKind;
  }
  const limit = q.get("limit");
  if (limit !== null) {
    const n = /^\d{1,7}$/.test(limit) ? Number(limit) : NaN;
    if (!(n >= 1 && n <= AUDIT_PAGE_LIMIT.max)) {
      throw invalidArgument(`limit: must be an integer from 1 to ${AUDIT_PAGE_LIMIT.max}`);
    }
    out.limit = n;
  }
  const cursor = q.get("cursor");
  if (cursor !== null && cursor !== "") out.cursor = cursor;
  return out;
}

function epochMs(text: string, name: string): number {
  const n = SAFE_DIGITS.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) {
    throw invalidArgument(
      `${name}: must be epoch milliseconds (a non-negative integer, at most ${Number.MAX_SAFE_INTEGER})`,
    );
  }
  return n;
}

/** The audit trail route (docs/http-api.md, "Audit trail"). */
export const AUDIT_ROUTES: readonly Route[] = [
  route("GET", "/v0/audit", listAudit, {
    doc: {
      operationId: "listAudit",
      summary: "The audit trail: who commanded what, when, and what the machine answered",
      tag: "safety",
      description: "Every decision on an actuating call (accepted, refused or failed), mode " +
        "change, parameter set, e-stop and clear, with its origin; consecutive identical calls " +
        "from one origin are collapsed into one entry with a count. Oldest first; page with " +
        "`next_cursor` (null at the end). Project addition.",
      query: AUDIT_QUERY_DOC,
      response: "AuditResponse",
      errors: [400],
    },
  }),
];

/** GET /v0/audit: entries oldest first, filtered, paged with an opaque cursor. */
async function listAudit({ services, url }: RouteContext): Promise<Response> {
  return okResponse(await services.audit.query(parseAuditQuery(url.searchParams)));
}
