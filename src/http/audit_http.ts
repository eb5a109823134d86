/**
 * The HTTP side of the audit trail: the origin of a request (client address and token name) and
 * refusals decided in this layer (authentication, origin policy, role). GET /v0/audit itself is
 * in api/audit_routes.ts.
 */
import type { AuditAction, AuditOrigin } from "../control/mod.ts";
import type { Principal } from "./auth.ts";
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
  if (!action) return;
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
