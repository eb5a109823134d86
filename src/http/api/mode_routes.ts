/** GET and POST /v0/mode (docs/http-api.md "Modes and calls"). */
import { failedPrecondition, RuntimeError } from "../../common/mod.ts";
import { httpOrigin } from "../audit_http.ts";
import { okResponse } from "../envelope.ts";
import { MODE_BODY_SCHEMA, type ModeBody } from "../request_schemas.ts";
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

async function setMode({ services, body, principal }: RouteContext): Promise<Response> {
  const source = httpOrigin(principal);
  /** Records a refusal decided here (the request never reaches the mode manager). */
  const refused = (err: unknown, refusedBy: string, mode: string | null): unknown => {
    if (err instanceof RuntimeError) {
      services.audit.refused({
        action: "mode",
        origin: source,
        function: mode,
        reason: `${err.code}: ${err.message}`,
        refused_by: refusedBy,
      });
    }
    return err;
  };
  let mode: ModeBody["mode"];
  try {
    ({ mode } = await body<ModeBody>());
  } catch (err) {
    throw refused(err, "validation", null);
  }
  if (mode === "AUTO" && !services.config.automation.enabled) {
    throw refused(
      failedPrecondition("Mode AUTO requires automation (automation.enabled is false)"),
      "mode",
      mode,
    );
  }
  const report = await services.modes.requestWithReport(mode, source);
  return okResponse({
    mode: report.mode,
    hook_failures: report.hook_failures,
    ...(report.hooks_pending ? { hooks_pending: true } : {}),
  });
}
