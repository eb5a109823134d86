/**
 * Signal history and incident records (docs/http-api.md "History and incidents"): GET
 * /v0/history/{provider_id}/{device_id} (JSON or CSV), GET /v0/incidents and GET
 * /v0/incidents/{incident_id} (JSON, CSV or JSON Lines). 503 when history.enabled is false.
 */
import { invalidArgument, namedDeviceHandle, notFound, unavailable } from "../../common/mod.ts";
import {
  csvField,
  type HistoryAnswer,
  incidentCsv,
  INCIDENTS_PAGE_LIMIT,
  MAX_HISTORY_POINTS,
  QUALITY_BY_CODE,
} from "../../history/mod.ts";
import { okResponse } from "../envelope.ts";
import { type QueryParameterDoc, type Route, route, type RouteContext } from "../route_table.ts";
import { digitsRangePattern, SAFE_DIGITS, SAFE_DIGITS_PATTERN } from "../query_patterns.ts";
import { LENIENT_INT_PATTERN, parseRunsPage } from "../run_bodies.ts";
import type { HttpServices } from "../services.ts";

const CSV_TYPE = "text/csv; charset=utf-8";
const JSONL_TYPE = "application/jsonl";
/** A CSV history answer's mark of a partial answer (a JSON answer's `incomplete`). */
export const INCOMPLETE_HEADER = "x-history-incomplete";

/** What a `before` of GET /v0/incidents must look like: an incident id. */
const INCIDENT_ID_PATTERN = String.raw`^inc-\d+-\d+$`;

/** The largest `step_ms` (10 digits: 115 days). */
const MAX_STEP_MS = 9_999_999_999;

const HISTORY_QUERY_DOC: readonly QueryParameterDoc[] = [
  {
    name: "signal_id",
    description: "Only these signals (may repeat); default every signal the history holds.",
    schema: { type: "string", minLength: 1 },
    repeated: true,
  },
  {
    name: "since_ms",
    description: "From this time (epoch ms: 1 to 16 digits, at most 2^53-1); default until_ms " +
      "minus history.memory_seconds.",
    schema: { type: "string", pattern: SAFE_DIGITS_PATTERN },
  },
  {
    name: "until_ms",
    description: "Up to this time (epoch ms: 1 to 16 digits, at most 2^53-1); default now.",
    schema: { type: "string", pattern: SAFE_DIGITS_PATTERN },
  },
  {
    name: "step_ms",
    description: "Bucket width (ms): min, max, last, count and worst quality per bucket. " +
      "0 or absent: every sample from the memory ring (the disk tier answers in its own " +
      "history.step_ms buckets).",
    schema: {
      type: "string",
      pattern: digitsRangePattern({ min: 0, max: MAX_STEP_MS, maxChars: 10 }),
    },
  },
  {
    name: "format",
    description: "`json` (default) or `csv`; `Accept: text/csv` asks for CSV too.",
    schema: { enum: ["json", "csv"] },
  },
];

/** The history and incident routes. */
export const HISTORY_ROUTES: readonly Route[] = [
  route("GET", "/v0/history/:provider_id/:device_id", deviceHistory, {
    doc: {
      operationId: "getDeviceHistory",
      summary: "A device's signal history: the memory ring where it reaches, the disk tier beyond",
      tag: "history",
      description: "Points of each signal over a time range: every polled sample from the " +
        "full-rate ring in memory (history.memory_seconds), and `history.step_ms` buckets " +
        "from the disk tier before it. `source` says which answered; points before " +
        `\`memory_from_ms\` are the disk tier's; \`incomplete\` is non-null when some may be ` +
        `missing (the disk tier unreadable or behind). At most ${MAX_HISTORY_POINTS} points per ` +
        "answer (all signals together), else 400. Bools are 0/1; strings and bytes (base64) " +
        "have `min`/`max` null. Project addition.",
      query: HISTORY_QUERY_DOC,
      response: "HistoryResponse",
      alternatives: [{
        contentType: "text/csv",
        description: "CSV (`format=csv` or `Accept: text/csv`): " +
          "`signal_id,t_ms,min,max,last,count,quality,unit`, one line per point (`unit` " +
          "empty for a signal that declares none); a partial answer carries the header " +
          "`X-History-Incomplete` (the JSON answer's `incomplete`).",
        schema: { type: "string" },
      }],
      errors: [400, 404],
    },
  }),
  route("GET", "/v0/incidents", listIncidents, {
    doc: {
      operationId: "listIncidents",
      summary: "Incident records: the full-rate window around every e-stop, FAULT, alarm " +
        "raise and device loss",
      tag: "history",
      description: "In the order the incidents were noted, the last first (the counter of " +
        "their ids, which goes on across restarts), not by time: a device loss found late, " +
        "dated back to its first failed read, is listed above an alarm raised after that date " +
        "but noted before the loss was found (sort by `at_epoch_ms` or `trigger_at_epoch_ms` " +
        "for time order). Bounded by history.incident_max_count and " +
        "history.incident_max_bytes (the oldest noted are removed, e-stops' records last). " +
        "Project addition.",
      query: [
        {
          name: "limit",
          description: `Page size (default ${INCIDENTS_PAGE_LIMIT.default}, at most ` +
            `${INCIDENTS_PAGE_LIMIT.max}; a larger value is cut, a value below 1 or one that ` +
            "does not read as a number takes the default; a number that is not an integer " +
            "within \u00b1(2^53-1), such as 1e20 or 1.5, is 400).",
          schema: { type: "string", pattern: LENIENT_INT_PATTERN },
        },
        {
          name: "offset",
          description: "Entries to skip (default 0; from `before` when given; a value that does " +
            "not read as a number takes the default; a number that is not an integer within " +
            "\u00b1(2^53-1) is 400).",
          schema: { type: "string", pattern: LENIENT_INT_PATTERN },
        },
        {
          name: "before",
          description: "Only incidents noted before this incident id (a cursor: the last " +
            "incident of the previous page, by the counter of its id, whether or not its record " +
            "is still kept; incidents noted meanwhile and records the bounds removed do not " +
            "shift the pages; offset counts from there). `inc-<epoch ms>-<n>`; another is 400.",
          schema: { type: "string", pattern: INCIDENT_ID_PATTERN },
        },
      ],
      response: "IncidentsResponse",
      errors: [400],
    },
  }),
  route("GET", "/v0/incidents/:incident_id", getIncident, {
    doc: {
      operationId: "getIncident",
      summary: "One incident record with every signal's samples",
      tag: "history",
      description: "`format=csv` (or `Accept: text/csv`): " +
        "`provider_id,device_id,signal_id,t_ms,value,quality,unit,from_epoch_ms` (`unit` as " +
        "the record keeps it: as polled in when the incident began, empty for none; " +
        "`from_epoch_ms` the signal's, where its samples begin when the ring had lost its " +
        "earlier changes in the window or a retype or a unit change before the trigger began " +
        "its line, empty when they cover it); `format=jsonl` (or " +
        "`Accept: application/jsonl`): the record as stored, a header line then one line per " +
        "signal. A record that is not whole (`incomplete`: `torn`, a power cut while it was " +
        "written; `damaged`, a signal line that does not parse) is given with what is readable " +
        "(`signals` and `samples` count those); a CSV or JSON Lines export of it carries the " +
        "header `X-Incident-Incomplete`. 404 for a record not kept: removed by the bounds or " +
        "by hand, or never written (a full disk). Its run's `incident` event still links to " +
        "it: the message says why (the bound that removed it, or that it could not be written) " +
        "for the last 256 not kept, across restarts. Project addition.",
      query: [{
        name: "format",
        description: "`json` (default), `csv` or `jsonl`.",
        schema: { enum: ["json", "csv", "jsonl"] },
      }],
      response: "IncidentResponse",
      alternatives: [
        {
          contentType: "text/csv",
          description: "CSV export.",
          schema: { type: "string" },
        },
        {
          contentType: JSONL_TYPE,
          description: "JSON Lines export.",
          schema: { type: "string" },
        },
      ],
      errors: [400, 404],
    },
  }),
];

function requireHistory(services: HttpServices) {
  const h = services.history;
  const i = services.incidents;
  if (h === undefined || i === undefined) {
    throw unavailable("history is disabled (history.enabled: false)");
  }
  return { history: h, incidents: i };
}

/** The media types by which `Accept` asks for each format. */
const FORMAT_MEDIA_TYPES: Readonly<Record<string, readonly string[]>> = {
  json: ["application/json"],
  csv: ["text/csv"],
  jsonl: ["application/jsonl", "application/x-ndjson"],
};

/** One media range of an Accept header: `type/subtype` (lower case) and its quality. */
interface MediaRange {
  readonly type: string;
  readonly q: number;
}

/**
 * An Accept header's media ranges (RFC 9110 sec. 12.5.1), each with its quality: `q` from 0 to 1,
 * 1 when absent or not a number in that range. Linear in the header (bounded by the server).
 */
function mediaRanges(accept: string): MediaRange[] {
  const out: MediaRange[] = [];
  for (const item of accept.split(",")) {
    const [type, ...params] = item.split(";").map((s) => s.trim().toLowerCase());
    if (!type) continue;
    const qParam = params.find((p) => /^q\s*=/.test(p));
    const text = qParam?.slice(qParam.indexOf("=") + 1).trim() ?? "";
    const q = text === "" ? 1 : Number(text);
    out.push({ type, q: Number.isFinite(q) && q >= 0 && q <= 1 ? q : 1 });
  }
  return out;
}

/**
 * The quality of `type` under `ranges`: that of the most specific range matching it (the type
 * itself, then `major/*`, then `*\/*`), 0 when none does. `named`: the type itself only.
 */
function qualityOf(ranges: readonly MediaRange[], type: string, named = false): number {
  const exact = ranges.find((r) => r.type === type);
  if (exact !== undefined || named) return exact?.q ?? 0;
  const major = ranges.find((r) => r.type === `${type.slice(0, type.indexOf("/"))}/*`);
  return major?.q ?? ranges.find((r) => r.type === "*/*")?.q ?? 0;
}

/**
 * The format asked for: `format`, else the one `Accept` ranks first, else JSON. CSV or JSON Lines
 * only when Accept names its media type with a quality above 0 (`text/csv;q=0` refuses it) and not
 * below JSON's (a wildcard alone never asks for them); of two named alike, the first `allowed`.
 * JSON otherwise, also when Accept does not take it (the API answers JSON; no 406).
 */
export function wantedFormat(
  format: string | null,
  accept: string | null,
  allowed: readonly string[],
): string {
  if (format !== null) {
    if (!allowed.includes(format)) {
      throw invalidArgument(`format: must be one of ${allowed.join(", ")} (got "${format}")`);
    }
    return format;
  }
  if (accept === null) return "json";
  const ranges = mediaRanges(accept);
  const json = qualityOf(ranges, FORMAT_MEDIA_TYPES.json![0]!);
  let best = "json";
  let bestQ = 0;
  for (const f of allowed) {
    if (f === "json") continue;
    const q = Math.max(0, ...(FORMAT_MEDIA_TYPES[f] ?? []).map((t) => qualityOf(ranges, t, true)));
    if (q > 0 && q >= json && q > bestQ) {
      best = f;
      bestQ = q;
    }
  }
  return best;
}

/** wantedFormat of a request: its `format` query parameter and its Accept header. */
function requestFormat(ctx: RouteContext, allowed: readonly string[]): string {
  return wantedFormat(ctx.url.searchParams.get("format"), ctx.req.headers.get("accept"), allowed);
}

function epochParam(q: URLSearchParams, name: string): number | undefined {
  const text = q.get(name);
  if (text === null) return undefined;
  const n = SAFE_DIGITS.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) {
    throw invalidArgument(
      `${name}: must be epoch milliseconds (a non-negative integer, at most ${Number.MAX_SAFE_INTEGER})`,
    );
  }
  return n;
}

async function deviceHistory(ctx: RouteContext): Promise<Response> {
  const { history } = requireHistory(ctx.services);
  const { provider_id: p, device_id: d } = ctx.params;
  const q = ctx.url.searchParams;
  const format = requestFormat(ctx, ["json", "csv"]);
  const sinceMs = epochParam(q, "since_ms");
  const untilMs = epochParam(q, "until_ms");
  const stepText = q.get("step_ms");
  let stepMs: number | undefined;
  if (stepText !== null) {
    stepMs = /^\d{1,10}$/.test(stepText) ? Number(stepText) : NaN;
    if (!Number.isSafeInteger(stepMs)) {
      throw invalidArgument(
        `step_ms: must be a non-negative integer of milliseconds, at most ${MAX_STEP_MS}`,
      );
    }
  }
  const signalIds = q.getAll("signal_id");
  if (signalIds.some((s) => s === "")) throw invalidArgument("signal_id: must not be empty");
  const answer = await history.query({
    providerId: p!,
    deviceId: d!,
    signalIds: [...new Set(signalIds)],
    sinceMs,
    untilMs,
    stepMs,
  });
  // Read once the query is answered, which may wait for the disk tier (HISTORY_QUERY_DISK_WAIT_MS):
  // a reload meanwhile (a unit changed, the device removed) is in the answer.
  const caps = ctx.services.inventory.capabilities(p!, d!);
  // A device the runtime no longer has (its provider removed, the device gone at rediscovery) is
  // answered from its disk rows; one neither has nor the range holds anything of is not found.
  if (!caps && answer.source === "none" && !history.knows(p!, d!)) {
    throw notFound(`Device not found: ${namedDeviceHandle(p!, d!)}`);
  }
  // A signal's declaration: as the device declares it now, or, while no provider lists the device
  // (a reload restarting its provider, or failing to start it) or no longer the signal (a
  // rediscovery removed it), the units its polls were recorded in, as an incident record keeps them.
  const recorded = history.declaredUnits(p!, d!);
  const declarationOf = (id: string) =>
    caps?.signals.find((s) => s.signalId === id) ?? recorded?.find((s) => s.signalId === id);
  const unitOf = (id: string) => declarationOf(id)?.unit;
  if (format === "csv") {
    const res = csvResponse(historyCsv(answer, unitOf));
    // CSV has no place for it: a header says what a JSON answer's `incomplete` says.
    if (answer.incomplete !== null) res.headers.set(INCOMPLETE_HEADER, answer.incomplete);
    return res;
  }
  return okResponse({
    ...answer,
    signals: answer.signals.map((s) => {
      // (Its value_type is History's: its samples', else as declared, as its unit is taken.)
      const unit = unitOf(s.signal_id);
      return {
        ...s,
        // Its unit as the device declares it now (as GET /v0/state), else as its polls were
        // recorded in (declarationOf), only when there is one.
        ...(unit ? { unit } : {}),
        points: s.points.map((pt) => ({ ...pt, quality: QUALITY_BY_CODE[pt.quality] })),
      };
    }),
  });
}

/**
 * A history answer as CSV: `signal_id,t_ms,min,max,last,count,quality,unit`; `unit` is the unit
 * of the point: the signal's declared unit (as a JSON answer's `unit`), empty when it declares
 * none, or, for a point before one of its `unit_changes`, the `unit_before` of the first change
 * after it.
 */
export function historyCsv(
  a: HistoryAnswer,
  unitOf: (signalId: string) => string | undefined,
): string {
  let out = "signal_id,t_ms,min,max,last,count,quality,unit\r\n";
  for (const s of a.signals) {
    const id = csvField(s.signal_id);
    const now = csvField(unitOf(s.signal_id) ?? "");
    const changes = s.unit_changes;
    for (const p of s.points) {
      const next = changes.find((c) => c.at_ms > p.t_ms);
      const unit = next === undefined ? now : csvField(next.unit_before);
      out += `${id},${p.t_ms},${p.min ?? ""},${p.max ?? ""},${
        p.last === null ? "" : csvField(String(p.last))
      },${p.count},${QUALITY_BY_CODE[p.quality]},${unit}\r\n`;
    }
  }
  return out;
}

function csvResponse(text: string): Response {
  return new Response(text, { status: 200, headers: { "content-type": CSV_TYPE } });
}

function listIncidents(ctx: RouteContext): Response {
  const { incidents } = requireHistory(ctx.services);
  const q = ctx.url.searchParams;
  const before = q.get("before");
  const page = incidents.page({
    ...parseRunsPage(q),
    ...(before === null ? {} : { before }),
  });
  return okResponse({ incidents: page, count: page.length });
}

async function getIncident(ctx: RouteContext): Promise<Response> {
  const { incidents } = requireHistory(ctx.services);
  const id = ctx.params.incident_id!;
  const format = requestFormat(ctx, ["json", "csv", "jsonl"]);
  if (format === "jsonl") {
    // The header as the read found it: a bound pruning the record right after leaves it listed
    // nowhere, not whole all the same.
    const { incident, text } = await incidents.jsonlRecord(id);
    const incomplete = incident.incomplete;
    return new Response(text, {
      status: 200,
      headers: {
        "content-type": `${JSONL_TYPE}; charset=utf-8`,
        ...(incomplete === null ? {} : { "x-incident-incomplete": incomplete }),
      },
    });
  }
  const record = await incidents.get(id);
  if (format === "csv") {
    const r = csvResponse(incidentCsv(record.signals));
    const incomplete = record.incident.incomplete;
    if (incomplete !== null) r.headers.set("x-incident-incomplete", incomplete);
    return r;
  }
  return okResponse(record);
}
