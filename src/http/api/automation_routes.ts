/**
 * Automation parameters and the behavior tree (docs/http-api.md "Parameters and automation"). Both
 * services are absent when automation.enabled is false: these routes then answer 503.
 */
import { unavailable } from "../../common/mod.ts";
import { auditedParameterValue } from "../../control/mod.ts";
import { httpOrigin } from "../audit_http.ts";
import { okResponse } from "../envelope.ts";
import { roundedIntegerText } from "../json_body.ts";
import { SET_PARAMETER_BODY_SCHEMA, type SetParameterBody } from "../request_schemas.ts";
import { sentBeforeStop, STOPPED_REFUSAL } from "../stop_marks.ts";
import { type Route, route, type RouteContext } from "../route_table.ts";
import type { HttpServices } from "../services.ts";

/** The parameter and automation routes. */
export const AUTOMATION_ROUTES: readonly Route[] = [
  route("GET", "/v0/parameters", listParameters, {
    doc: {
      operationId: "listParameters",
      summary: "Automation parameters",
      tag: "automation",
      response: "ParametersResponse",
    },
  }),
  route("POST", "/v0/parameters", setParameter, {
    role: "operator",
    doc: {
      operationId: "setParameter",
      summary: "Set an automation parameter",
      tag: "automation",
      body: { schema: SET_PARAMETER_BODY_SCHEMA, required: true },
      response: "SetParameterResponse",
      errors: [404, 409],
    },
  }),
  route("GET", "/v0/automation/tree", automationTree, {
    doc: {
      operationId: "getAutomationTree",
      summary: "The behavior-tree XML of the tree that runs (as read to load it)",
      tag: "automation",
      response: "AutomationTreeResponse",
      errors: [404],
    },
  }),
  route("GET", "/v0/automation/status", automationStatus, {
    doc: {
      operationId: "getAutomationStatus",
      summary: "The automation engine's execution status",
      tag: "automation",
      response: "AutomationStatusResponse",
    },
  }),
];

function parameterService(services: HttpServices) {
  if (!services.parameters) throw unavailable("Parameters not available: automation is disabled");
  return services.parameters;
}

function listParameters({ services }: RouteContext): Response {
  return okResponse({ parameters: parameterService(services).list() });
}

async function setParameter(
  { services, body, principal, stoppedSinceArrival }: RouteContext,
): Promise<Response> {
  const parameters = parameterService(services);
  const b = await body<SetParameterBody>();
  const written = roundedIntegerText(b, "value");
  // Sent before a stop that happened while its body arrived: never set after it. A tree reads
  // parameters as setpoints; set now, the value would act on the machine once re-armed, for
  // someone who asked before the stop (as a call or an arming request: stop_marks.ts).
  if (stoppedSinceArrival()) {
    const err = sentBeforeStop("POST /v0/parameters");
    services.audit.refused({
      action: "parameter",
      origin: httpOrigin(principal),
      function: b.name,
      args: { value: auditedParameterValue(b.value, written) },
      reason: `${err.code}: ${err.message}`,
      refused_by: STOPPED_REFUSAL,
    });
    throw err;
  }
  return okResponse({ parameter: parameters.set(b.name, b.value, httpOrigin(principal), written) });
}

function automationService(services: HttpServices) {
  if (!services.automation) {
    throw unavailable(
      services.config.automation.enabled
        ? "Automation not available: the automation engine is not running"
        : "Automation not available: automation is disabled",
    );
  }
  return services.automation;
}

async function automationTree({ services }: RouteContext): Promise<Response> {
  return okResponse({ tree: await automationService(services).treeXml() });
}

function automationStatus({ services }: RouteContext): Response {
  return okResponse(automationService(services).status());
}
