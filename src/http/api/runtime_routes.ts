/**
 * GET /v0/runtime/status and GET /v0/providers/health (docs/http-api.md "Runtime, providers,
 * telemetry").
 */
import { RUNTIME_VERSION } from "../../common/mod.ts";
import { okResponse } from "../envelope.ts";
import { type Route, route, type RouteContext } from "../route_table.ts";

/** The runtime's and the providers' status routes. */
export const RUNTIME_ROUTES: readonly Route[] = [
  route("GET", "/v0/runtime/status", runtimeStatus, {
    priority: true,
    doc: {
      operationId: "getRuntimeStatus",
      summary: "Version, mode, uptime, providers, the e-stop and the run registry",
      tag: "runtime",
      response: "RuntimeStatusResponse",
    },
  }),
  route("GET", "/v0/providers/health", providersHealth, {
    doc: {
      operationId: "getProvidersHealth",
      summary: "Provider and device health, supervision and discovery warnings",
      tag: "runtime",
      response: "ProvidersHealthResponse",
    },
  }),
];

function runtimeStatus({ services }: RouteContext): Response {
  // Every configured provider, in the configuration file's order, as GET /v0/providers/health
  // and /metrics list them: one with no host listed (a reload restarting or starting it, or one
  // it could not register) is down with no devices, not left out.
  const listed = services.inventory.providers();
  const byId = new Map(listed.map((h) => [h.id, h]));
  const ids = services.inventory.configuredIds?.() ?? listed.map((h) => h.id);
  const providers = ids.map((id) => {
    const h = byId.get(id);
    return {
      provider_id: id,
      state: h?.available === true ? "AVAILABLE" : "UNAVAILABLE",
      device_count: h?.devices.length ?? 0,
    };
  });
  return okResponse({
    version: RUNTIME_VERSION,
    // Project addition: the configured runtime.name ("" when none), for the operator console.
    runtime_name: services.config.runtime.name,
    mode: services.modes.current(),
    uptime_seconds: services.uptimeSeconds(),
    polling_interval_ms: services.config.polling.intervalMs,
    providers,
    device_count: providers.reduce((n, p) => n + p.device_count, 0),
    estop: services.estop.status(),
    // Project addition: a run registry that could not start answers the runs API 503; here is why.
    runs: services.runs.info(),
  });
}

function providersHealth({ services }: RouteContext): Response {
  // Project additions: the audit journal's health and the history's disk tier's (a failing write,
  // a full disk, shows here, not only in GET /metrics); null without history.
  const disk = services.history?.status().disk;
  return okResponse({
    providers: services.providerHealth(),
    audit: services.audit.status(),
    history_disk: disk === undefined ? null : {
      state: disk.state,
      rows_written_total: disk.rowsWritten,
      rows_dropped_total: disk.rowsDropped,
      write_errors_total: disk.writeErrors,
      rows_unreadable_total: disk.rowsUnreadable,
      read_errors_total: disk.readErrors,
      last_error: disk.lastError,
    },
  });
}
