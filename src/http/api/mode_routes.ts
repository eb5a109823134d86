/** GET and POST /v0/mode (docs/http-api.md "Modes and calls"). */
import { failedPrecondition } from "../../common/mod.ts";
import { httpOrigin } from "../audit_http.ts";
import { okResponse } from "../envelope.ts";
import { MODE_BODY_SCHEMA, type ModeBody } from "../request_schemas.ts";
import { sentBeforeStop, STOPPED_REFUSAL } from "../stop_marks.ts";
import { type Route, route, type RouteContext } from "../route_table.ts";

/** The mode routes. */
export const MODE_ROUTES: readonly Route[] = [
  route("GET", "/v0/mode", getMode, {
    doc: {
      operationId: "getMode",
      summary: "The runtime mode",
      tag: "control",
      response: "ModeResponse",
    },
  }),
  route("POST", "/v0/mode", setMode, {
    role: "operator",
    doc: {
      operationId: "setMode",
      summary: "Change the runtime mode (runs the mode-transition hooks)",
      tag: "control",
      body: { schema: MODE_BODY_SCHEMA, required: true },
      response: "ModeResponse",
      errors: [409],
    },
  }),
];

function getMode({ services }: RouteContext): Response {
  return okResponse({ mode: services.modes.current() });
}

async function setMode(
  { services, body, principal, stoppedSinceArrival, stillAdmitted }: RouteContext,
): Promise<Response> {
  const source = httpOrigin(principal);
  // A body refused here (malformed JSON, a missing, mistyped or unknown mode) names no mode:
  // nothing was decided, so it is not recorded, as for POST /v0/call and /v0/parameters.
  // Into FAULT or IDLE is a stop: never asked again if a reload changed its token meanwhile.
  const { mode } = await body<ModeBody>((b) => b.mode === "FAULT" || b.mode === "IDLE");
  // Asked again before MANUAL or AUTO commits, after the before-hooks (a reload meanwhile). Its
  // token check takes turns (an alarm's FAULT or e-stop may come in one): taken before the
  // check below, with no await between that check and the request.
  const admitted = await stillAdmitted();
  // Arming sent before a stop that happened while its body arrived (or its token was checked): it
  // would re-arm after the stop without the operator's deliberate act. Into IDLE or FAULT arms
  // nothing.
  if ((mode === "MANUAL" || mode === "AUTO") && stoppedSinceArrival()) {
    const err = sentBeforeStop("POST /v0/mode");
    services.audit.refused({
      action: "mode",
      origin: source,
      function: mode,
      reason: `${err.code}: ${err.message}`,
      refused_by: STOPPED_REFUSAL,
    });
    throw err;
  }
  if (mode === "AUTO" && !services.config.automation.enabled) {
    // Decided here (the request never reaches the mode manager): recorded as its refusals are.
    const err = failedPrecondition("Mode AUTO requires automation (automation.enabled is false)");
    services.audit.refused({
      action: "mode",
      origin: source,
      function: mode,
      reason: `${err.code}: ${err.message}`,
      refused_by: "mode",
    });
    throw err;
  }
  const report = await services.modes.requestWithReport(mode, source, admitted);
  return okResponse({
    mode: report.mode,
    hook_failures: report.hook_failures,
    ...(report.hooks_pending ? { hooks_pending: true } : {}),
    ...(report.superseded_by === undefined ? {} : { superseded_by: report.superseded_by }),
    ...(report.superseded_reason === undefined
      ? {}
      : { superseded_reason: report.superseded_reason }),
  });
}
