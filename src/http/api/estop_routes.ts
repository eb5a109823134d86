/** POST /v0/estop and POST /v0/estop/clear (docs/http-api.md "E-stop"). */
import { httpOrigin } from "../audit_http.ts";
import { okResponse } from "../envelope.ts";
import { declaresNoBody, priorityBodyLimits, readJsonBody } from "../json_body.ts";
import { ESTOP_BODY_SCHEMA, IGNORED_BODY_SCHEMA } from "../request_schemas.ts";
import { type Route, route, type RouteContext } from "../route_table.ts";
import { sentBeforeStop, STOPPED_REFUSAL } from "../stop_marks.ts";

/** The e-stop routes: priority routes (slots of their own, http_api.ts). */
export const ESTOP_ROUTES: readonly Route[] = [
  route("POST", "/v0/estop", estopTrigger, {
    // Anyone who may read may stop the machine.
    role: "viewer",
    priority: true,
    // Served, and latches, whatever holds the priority slots (http_api.ts).
    neverBusy: true,
    anyBody: true,
    doc: {
      operationId: "triggerEstop",
      summary: "Latch the software e-stop, enter FAULT and run the safe-state ladder",
      tag: "safety",
      description: "Any body is accepted (whatever its Content-Type): the latch engages before " +
        "it is read, and the answer waits at most ESTOP_REASON_READ_TIMEOUT_MS for it. Never " +
        "refused for capacity: with every priority slot taken it latches, its body unread.",
      body: { schema: ESTOP_BODY_SCHEMA, required: false, handling: "lenient" },
      response: "EstopResponse",
    },
  }),
  route("POST", "/v0/estop/clear", estopClear, {
    role: "operator",
    priority: true,
    doc: {
      operationId: "clearEstop",
      summary: "Release the e-stop latch (re-arms nothing)",
      tag: "safety",
      body: { schema: IGNORED_BODY_SCHEMA, required: false, handling: "ignored" },
      response: "EstopClearResponse",
      // An e-stop that latched after the clear was sent (the clear is refused, the stop holds).
      errors: [409],
    },
  }),
];

async function estopTrigger(
  { services, req, limits, bodyMatches, principal, slot }: RouteContext,
): Promise<Response> {
  // The reason is optional and informative only: the latch engages before the body is read, so
  // an unreadable, non-JSON or slow body never delays or blocks the stop.
  // A request without a body (Content-Length: 0; HTTP/1.1 with neither Content-Length nor
  // Transfer-Encoding) triggers with no reason, not one "still arriving"; its empty body stream
  // is released, not left unread (not awaited: the latch comes first). So does a press served
  // without a priority slot (every one was taken): its body is not read.
  const noBody = slot === null || declaresNoBody(req);
  if (noBody) void req.body?.cancel().catch(() => {});
  const reason = noBody ? undefined : readJsonBody(req, priorityBodyLimits(limits)).then(
    async (body: unknown) =>
      body !== undefined && await bodyMatches(body)
        ? (body as { reason?: string }).reason
        : undefined,
    () => undefined,
  );
  // The answer also waits for the body (bounded by the read timeout above): once the answer is
  // sent the body can no longer be read, and a reason still arriving would be lost. The slot is
  // given back once the latch holds and the body has arrived: a press during a stop waits for
  // the whole further stop it joined, and presses must not hold the slots of the clear and
  // status meanwhile (their number is bounded by http.max_connections).
  const [result] = await Promise.all([
    services.estop.trigger(reason, { source: httpOrigin(principal) }),
    Promise.resolve(reason).then(() => slot?.release()),
  ]);
  return okResponse(result);
}

async function estopClear(
  { services, req, principal, stoppedSinceArrival, stillAdmitted }: RouteContext,
): Promise<Response> {
  await req.body?.cancel().catch(() => {}); // body ignored
  // A clear releases the latch (it is no stop): it acts only while the tokens in force still
  // admit its token with its role (a reload may have removed or lowered it since it arrived),
  // asked with no await between the check and the release.
  const admitted = await stillAdmitted();
  // A clear never releases a stop that came after it was sent (its token check and these awaits
  // are turns in which an alarm's e-stop may latch): it is refused and the latch holds.
  if (stoppedSinceArrival() && services.estop.latched !== false) {
    const err = sentBeforeStop("POST /v0/estop/clear");
    services.audit.refused({
      action: "estop_clear",
      origin: httpOrigin(principal),
      reason: `${err.code}: ${err.message}`,
      refused_by: STOPPED_REFUSAL,
    });
    throw err;
  }
  const unadmitted = admitted();
  if (unadmitted !== null) {
    // Answered 401 or 403 as the first check would have (http_api.ts); the latch holds.
    services.audit.refused({
      action: "estop_clear",
      origin: httpOrigin(principal),
      reason: `${unadmitted.error.code}: ${unadmitted.error.message}`,
      refused_by: unadmitted.refusedBy,
    });
    throw unadmitted.error;
  }
  return okResponse(services.estop.clear(httpOrigin(principal)));
}
