/** Run records and their event logs (docs/http-api.md "Runs"). */
import { ULID_PATTERN } from "../../runs/mod.ts";
import { okResponse } from "../envelope.ts";
import {
  CLOSE_RUN_BODY_SCHEMA,
  type CloseRunBody,
  MARKER_BODY_SCHEMA,
  type MarkerBody,
  OPEN_RUN_BODY_SCHEMA,
  type OpenRunBody,
} from "../request_schemas.ts";
import { SAFE_DIGITS_PATTERN } from "../query_patterns.ts";
import { type QueryParameterDoc, type Route, route, type RouteContext } from "../route_table.ts";
import {
  closeRunRequest,
  LENIENT_INT_PATTERN,
  markerRequest,
  openRunRequest,
  parseEventsPage,
  parseRunsListPage,
} from "../run_bodies.ts";

const PAGE_QUERY = (defaultLimit: number, maxLimit: number): QueryParameterDoc[] => [
  {
    name: "limit",
    description:
      `Page size (default ${defaultLimit}, at most ${maxLimit}; a larger value is cut, ` +
      "a value below 1 or one that does not read as a number takes the default; a number that " +
      "is not an integer within \u00b1(2^53-1), such as 1e20 or 1.5, is 400).",
    schema: { type: "string", pattern: LENIENT_INT_PATTERN },
  },
  {
    name: "offset",
    description: "Entries to skip (default 0; a value that does not read as a number takes the " +
      "default; a number that is not an integer within \u00b1(2^53-1) is 400).",
    schema: { type: "string", pattern: LENIENT_INT_PATTERN },
  },
];

/** The run routes. */
export const RUN_ROUTES: readonly Route[] = [
  route("GET", "/v0/runs", listRuns, {
    doc: {
      operationId: "listRuns",
      summary: "Run records, newest first",
      tag: "runs",
      query: [
        ...PAGE_QUERY(50, 200),
        {
          name: "before",
          description: "Only runs opened before this run id (a cursor: the last run of the " +
            "previous page; a run opened meanwhile does not shift the pages; offset counts " +
            "from there). Any text ending with a ULID (a run id is `<runtime name>-<ULID>`); " +
            "another is 400.",
          // Anchored at both ends, any text before the ULID: a run id is `<name>-<ULID>` and the
          // server reads only its last 26 characters (RunRegistry.list), so anchoring the bare
          // ULID would refuse every run id the server hands out.
          schema: { type: "string", pattern: String.raw`^[\s\S]*` + ULID_PATTERN.source.slice(1) },
        },
      ],
      response: "RunsListResponse",
    },
  }),
  route("POST", "/v0/runs", openRun, {
    role: "operator",
    doc: {
      operationId: "openRun",
      summary: "Open a run (one at a time)",
      tag: "runs",
      body: { schema: OPEN_RUN_BODY_SCHEMA, required: false },
      response: "RunResponse",
      errors: [409],
    },
  }),
  route("GET", "/v0/runs/:run_id", getRun, {
    doc: {
      operationId: "getRun",
      summary: "One run record",
      tag: "runs",
      response: "RunResponse",
      errors: [404],
    },
  }),
  route("POST", "/v0/runs/:run_id/close", closeRun, {
    role: "operator",
    doc: {
      operationId: "closeRun",
      summary: "Close a run (idempotent)",
      tag: "runs",
      body: { schema: CLOSE_RUN_BODY_SCHEMA, required: false },
      response: "RunResponse",
      errors: [404],
    },
  }),
  route("GET", "/v0/runs/:run_id/events", listRunEvents, {
    doc: {
      operationId: "listRunEvents",
      summary: "A run's event log, oldest first",
      tag: "runs",
      query: [
        ...PAGE_QUERY(200, 1000),
        {
          name: "after_sequence",
          description: "Only events with a larger sequence (a cursor; offset counts from there): " +
            "an integer from 0 to 2^53-1 (9007199254740991) in digits.",
          schema: { type: "string", pattern: SAFE_DIGITS_PATTERN },
        },
      ],
      response: "RunEventsListResponse",
      errors: [404],
    },
  }),
  route("POST", "/v0/runs/:run_id/events", addRunMarker, {
    role: "operator",
    doc: {
      operationId: "addRunMarker",
      summary: "Record an operator marker in an open run",
      tag: "runs",
      body: { schema: MARKER_BODY_SCHEMA, required: true },
      response: "RunEventResponse",
      errors: [404, 409],
    },
  }),
];

async function listRuns({ services, url }: RouteContext): Promise<Response> {
  return okResponse(await services.runs.list(parseRunsListPage(url.searchParams)));
}

async function openRun({ services, body, stillAdmitted }: RouteContext): Promise<Response> {
  const request = openRunRequest(await body<OpenRunBody | null>());
  // Asked again at its turn in the registry's write queue (a reload while a slow write ran).
  const admitted = await stillAdmitted();
  return okResponse(await services.runs.open(request, admitted));
}

async function getRun({ services, params }: RouteContext): Promise<Response> {
  return okResponse(await services.runs.get(params.run_id!));
}

async function closeRun({ services, body, params }: RouteContext): Promise<Response> {
  // A run's close is a stop: never asked again if a reload changed its token meanwhile.
  const request = closeRunRequest(await body<CloseRunBody | null>(() => true));
  return okResponse(await services.runs.close(params.run_id!, request));
}

async function listRunEvents({ services, params, url }: RouteContext): Promise<Response> {
  const page = parseEventsPage(url.searchParams);
  return okResponse(await services.runs.listEvents(params.run_id!, page));
}

async function addRunMarker(
  { services, body, params, stillAdmitted }: RouteContext,
): Promise<Response> {
  const marker = markerRequest(await body<MarkerBody>());
  // Asked again at its turn in the registry's write queue (a reload while a slow write ran).
  const admitted = await stillAdmitted();
  return okResponse(await services.runs.addMarker(params.run_id!, marker, admitted));
}
