/** GET /v0/events: the Server-Sent Events stream (docs/http-api.md "Events"; sse_hub.ts). */
import { type Route, route, type RouteContext } from "../route_table.ts";
import { LAST_EVENT_ID_PATTERN } from "../sse_hub.ts";

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
        {
          name: "last_event_id",
          description: "Resume after this event, as the `Last-Event-ID` header does (the " +
            "header wins when both are sent, unless it is empty): the events since then that the " +
            "runtime still holds, then live ones; or one `resync` event when it cannot. Blank " +
            "is none; else `<boot>-<n>` (boot: 1 to 32 of 0-9 a-z, n: 1 to 15 digits) or a " +
            "plain number (1 to 20 digits), spaces around it ignored; any other text is 400.",
          schema: { type: "string", pattern: LAST_EVENT_ID_PATTERN },
        },
      ],
      response: {
        contentType: "text/event-stream",
        description: "An endless stream of `event: <kind>`, `id: <boot>-<n>`, `data: <JSON>` " +
          "frames (the kinds are listed in the document's description of this operation); " +
          "comments `: keepalive` and `: dropped N events`, the latter followed by a `dropped` " +
          "event without id (`count`, `timestamp_ms`) for EventSource pages. With `Last-Event-ID` (header) or " +
          "`last_event_id`, the missed events first, or one `resync` event " +
          "(`reason`: too_old, restarted or unknown; `last_event_id`; `timestamp_ms`).",
        schema: { type: "string" },
      },
      errors: [400, 503],
    },
  }),
];

/**
 * The stream ends (and frees its subscription) when the client goes: Deno cancels the body; and
 * when a reload of the API tokens no longer admits its credentials (SseHub.recheck).
 * `Last-Event-ID` (as EventSource sends it on its reconnections) wins over `last_event_id`, which
 * a URL may still carry from the first connection; an empty (or blank) one counts as absent.
 */
function events(
  {
    sse,
    url,
    req,
    principal,
    admitted,
    admittedUnderCurrentTokens,
    dropConnection,
    answered,
  }: RouteContext,
): Response {
  const q = url.searchParams;
  // An empty (or blank) header names no event: as absent, so that last_event_id still counts.
  const header = req.headers.get("last-event-id")?.trim() ?? "";
  const query = q.get("last_event_id");
  const lastEventId = header !== ""
    ? { text: header, where: "Last-Event-ID header" }
    : query !== null
    ? { text: query.trim(), where: "query parameter last_event_id" }
    : undefined;
  return sse.open(
    {
      providerId: q.get("provider_id") ?? "",
      deviceId: q.get("device_id") ?? "",
      signalId: q.get("signal_id") ?? "",
    },
    lastEventId,
    { principal: principal.name, admitted, current: admittedUnderCurrentTokens },
    dropConnection,
    answered ?? undefined,
  );
}
