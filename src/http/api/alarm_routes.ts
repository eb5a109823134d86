/** Alarms and interlocks (docs/http-api.md "Alarms and interlocks", docs/alarms.md). */
import { httpOrigin } from "../audit_http.ts";
import { okResponse } from "../envelope.ts";
import {
  NO_ARGUMENTS_BODY_SCHEMA,
  SHELVE_BODY_SCHEMA,
  type ShelveBody,
} from "../request_schemas.ts";
import { type Route, route, type RouteContext } from "../route_table.ts";

/** The alarm and interlock routes. */
export const ALARM_ROUTES: readonly Route[] = [
  route("GET", "/v0/alarms", listAlarms, {
    doc: {
      operationId: "listAlarms",
      summary: "Every configured alarm with its state",
      tag: "alarms",
      response: "AlarmsResponse",
    },
  }),
  route("GET", "/v0/alarms/:alarm_id", getAlarm, {
    doc: {
      operationId: "getAlarm",
      summary: "One alarm",
      tag: "alarms",
      response: "AlarmResponse",
      errors: [404],
    },
  }),
  route("POST", "/v0/alarms/:alarm_id/ack", ackAlarm, {
    role: "operator",
    doc: {
      operationId: "ackAlarm",
      summary: "Acknowledge an active alarm",
      tag: "alarms",
      body: { schema: NO_ARGUMENTS_BODY_SCHEMA, required: false },
      response: "AlarmResponse",
      errors: [404, 409],
    },
  }),
  route("POST", "/v0/alarms/:alarm_id/shelve", shelveAlarm, {
    role: "operator",
    doc: {
      operationId: "shelveAlarm",
      summary: "Shelve an alarm for a while (not one whose action is fault or estop)",
      tag: "alarms",
      body: { schema: SHELVE_BODY_SCHEMA, required: true },
      response: "AlarmResponse",
      errors: [404, 409],
    },
  }),
  route("POST", "/v0/alarms/:alarm_id/unshelve", unshelveAlarm, {
    role: "operator",
    doc: {
      operationId: "unshelveAlarm",
      summary: "Unshelve a shelved alarm",
      tag: "alarms",
      body: { schema: NO_ARGUMENTS_BODY_SCHEMA, required: false },
      response: "AlarmResponse",
      errors: [404, 409],
    },
  }),
  route("GET", "/v0/interlocks", listInterlocks, {
    doc: {
      operationId: "listInterlocks",
      summary: "Every configured interlock and whether it blocks now",
      tag: "alarms",
      response: "InterlocksResponse",
    },
  }),
];

function listAlarms({ services }: RouteContext): Response {
  return okResponse({ alarms: services.alarms.alarms() });
}

function getAlarm({ services, params }: RouteContext): Response {
  return okResponse({ alarm: services.alarms.alarm(params.alarm_id!) });
}

async function ackAlarm({ services, body, params, principal }: RouteContext): Promise<Response> {
  await body<unknown>();
  return okResponse({ alarm: services.alarms.ack(params.alarm_id!, httpOrigin(principal)) });
}

async function shelveAlarm(
  { services, body, params, principal }: RouteContext,
): Promise<Response> {
  const { duration_ms } = await body<ShelveBody>();
  return okResponse({
    alarm: services.alarms.shelve(params.alarm_id!, duration_ms, httpOrigin(principal)),
  });
}

async function unshelveAlarm(
  { services, body, params, principal }: RouteContext,
): Promise<Response> {
  await body<unknown>();
  return okResponse({ alarm: services.alarms.unshelve(params.alarm_id!, httpOrigin(principal)) });
}

function listInterlocks({ services }: RouteContext): Response {
  return okResponse({ interlocks: services.alarms.interlocks() });
}
