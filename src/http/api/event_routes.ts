/** GET /v0/events: the Server-Sent Events stream (docs/http-api.md "Events"; sse_hub.ts). */
import { type Route, route, type RouteContext } from "../route_table.ts";

/** The event stream route. */
export const EVENT_ROUTES: readonly Route[] = [
  route("GET", "/v0/events", events, {
    doc: {
      operationId: "streamEvents",
      summary: "Server-Sent Events: state updates, mode changes, alarms, \u2026",
      tag: "events",
      query: [
        {
          name: "provider_id",
          description: "Only this provider's device events.",
          schema: { type: "string" },
        },
        {
          name: "device_id",
          description: "Only this device's device events.",
          schema: { type: "string" },
        },
        {
          name: "signal_id",
          description: "Only this signal's signal events.",
          schema: { type: "string" },
        },
      ],
      response: {
        contentType: "text/event-stream",
        description: "An endless stream of `event: <kind>`, `id: <n>`, `data: <JSON>` frames " +
          "(the kinds are listed in the document's description of this operation); comments " +
          "`: keepalive` and `: dropped N events`.",
        schema: { type: "string" },
      },
      errors: [503],
    },
  }),
];

/** The stream ends (and frees its subscription) when the client goes: Deno cancels the body. */
function events({ sse, url }: RouteContext): Response {
  const q = url.searchParams;
  return sse.open({
    providerId: q.get("provider_id") ?? "",
    deviceId: q.get("device_id") ?? "",
    signalId: q.get("signal_id") ?? "",
  });
}
