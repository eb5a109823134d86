/**
 * The HTTP side of the audit trail: the origin of a request (client address and token name),
 * refusals decided in this layer (authentication, origin policy, role) and the GET /v0/audit
 * query parameters.
 */
import { invalidArgument } from "../common/mod.ts";
import {
  AUDIT_ORIGIN_KINDS,
  type AuditAction,
  type AuditOrigin,
  type AuditOriginKind,
} from "../control/mod.ts";
import { AUDIT_PAGE_LIMIT, type AuditQuery } from "../audit/mod.ts";
import type { Principal } from "./auth.ts";
import type { QueryParameterDoc } from "./routes.ts";
import type { HttpServices } from "./services.ts";

/** The routes that actuate, by `METHOD path`, and the audit action of each. */
export const ACTUATING_ROUTES: Readonly<Record<string, AuditAction>> = {
  "POST /v0/call": "call",
  "POST /v0/mode": "mode",
  "POST /v0/parameters": "parameter",
  "POST /v0/estop": "estop",
  "POST /v0/estop/clear": "estop_clear",
};

/** The audit origin of a request: its client address and the name it acts under. */
export function httpOrigin(principal: Principal): AuditOrigin {
  return { kind: "http", address: principal.address, token_name: principal.name };
}

/**
 * Records a refusal of an actuating route decided in the HTTP layer (`auth`: no valid token,
 * `origin`: a foreign web page, `role`: the token's role does not allow it). Does nothing for a
 * route that does not actuate. `principal` is null when the request has none (401).
 */
export function auditHttpRefusal(
  services: HttpServices,
  refusal: {
    readonly method: string;
    readonly pathname: string;
    readonly principal: Principal | null;
    readonly address: string;
    readonly refusedBy: "auth" | "origin" | "role";
    readonly reason: string;
  },
): void {
  const action = ACTUATING_ROUTES[`${refusal.method} ${refusal.pathname}`];
  if (!action || !services.audit) return;
  // Anyone who can reach the port can cause these: the trail bounds how many it writes.
  services.audit.refusedUntrusted({
    action,
    origin: refusal.principal
      ? httpOrigin(refusal.principal)
      : { kind: "http", address: refusal.address },
    refused_by: refusal.refusedBy,
    reason: refusal.reason,
  });
}

/** The query parameters of GET /v0/audit as the OpenAPI document shows them (parsed below). */
export const AUDIT_QUERY_DOC: readonly QueryParameterDoc[] = [
  {
    name: "since",
    description: "Only entries whose last decision is at or after this time (epoch ms).",
    schema: { type: "string", pattern: "^\\d{1,16}$" },
  },
  {
    name: "until",
    description: "Only entries whose first decision is at or before this time (epoch ms).",
    schema: { type: "string", pattern: "^\\d{1,16}$" },
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
    description: `Page size (default ${AUDIT_PAGE_LIMIT.default}, 1 to ${AUDIT_PAGE_LIMIT.max}).`,
    schema: { type: "string", pattern: "^\\d{1,7}$" },
  },
  {
    name: "cursor",
    description: "`next_cursor` of the previous page (opaque; stays valid across rotation).",
    schema: { type: "string" },
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
  const n = /^\d{1,16}$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) {
    throw invalidArgument(`${name}: must be epoch milliseconds (a non-negative integer)`);
  }
  return n;
}
