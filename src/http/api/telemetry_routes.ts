/** GET /v0/telemetry/status (docs/http-api.md "Runtime, providers, telemetry"). */
import { okResponse } from "../envelope.ts";
import { type Route, route, type RouteContext } from "../route_table.ts";

/** The telemetry writer's status route. */
export const TELEMETRY_ROUTES: readonly Route[] = [
  route("GET", "/v0/telemetry/status", telemetryStatus, {
    doc: {
      operationId: "getTelemetryStatus",
      summary: "Telemetry writer counters (also when telemetry is disabled)",
      tag: "runtime",
      response: "TelemetryStatusResponse",
    },
  }),
];

function telemetryStatus({ services }: RouteContext): Response {
  return okResponse(services.telemetry.status());
}
