/**
 * Grafana dashboards against rows the runtime really wrote: a demo session is recorded with each
 * `telemetry.measurement_names` setting (telemetry_session.ts), and every panel, annotation and
 * variable query of
 * - our dashboards (examples/grafana/dashboards/*.json) must find its measurement, fields, tags
 *   and tag values in the `runtime` rows;
 * - the three dashboards anolis ships must find theirs in the `anolis` rows, and only the three
 *   panels that name no measurement find theirs in the `runtime` rows (what a migrating user sees).
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import type { MeasurementNaming } from "../../src/config/mod.ts";
import { MEASUREMENT_NAMES } from "../../src/telemetry/mod.ts";
import {
  missingData,
  type QueryNeeds,
  queryNeeds,
  type WrittenSchema,
  writtenSchema,
} from "../helpers/flux_query_needs.ts";
import { REPO } from "../helpers/sim_config.ts";
import { recordDemoSession, type Recording } from "./telemetry_session.ts";

const DASHBOARDS = `${REPO}examples/grafana/dashboards`;

const sessions = new Map<MeasurementNaming, Promise<Recording>>();
/** One recorded session per setting for the whole file (each test that needs it awaits it). */
function written(naming: MeasurementNaming): Promise<WrittenSchema> {
  if (!sessions.has(naming)) sessions.set(naming, recordDemoSession(naming));
  return sessions.get(naming)!.then((rec) => writtenSchema(rec.rows));
}

interface DashboardQuery {
  readonly where: string;
  readonly flux: string;
}

// deno-lint-ignore no-explicit-any
type Json = any;

/** Every query of a dashboard: panel targets (rows' nested panels too), annotations, variables. */
function queriesOf(file: string, dashboard: Json): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const panels = (list: Json[]): void => {
    for (const p of list ?? []) {
      for (const t of p.targets ?? []) {
        out.push({ where: `${file} panel "${p.title}"`, flux: t.query });
      }
      panels(p.panels);
    }
  };
  panels(dashboard.panels);
  for (const a of dashboard.annotations?.list ?? []) {
    if (a.query) out.push({ where: `${file} annotation "${a.name}"`, flux: a.query });
  }
  for (const v of dashboard.templating?.list ?? []) {
    if (v.type === "query") out.push({ where: `${file} variable ${v.name}`, flux: v.query });
  }
  return out;
}

function ourDashboards(): { file: string; dashboard: Json }[] {
  return [...Deno.readDirSync(DASHBOARDS)]
    .filter((e) => e.name.endsWith(".json"))
    .map((e) => e.name)
    .sort()
    .map((file) => ({
      file,
      dashboard: JSON.parse(Deno.readTextFileSync(`${DASHBOARDS}/${file}`)),
    }));
}

Deno.test("examples/grafana dashboards: every query finds its measurement, fields and tags in rows the runtime wrote", async () => {
  const schema = await written("runtime");
  const dashboards = ourDashboards();
  assert.deepEqual(dashboards.map((d) => d.file), [
    "runtime-health.json",
    "runtime-operations.json",
    "runtime-signals.json",
  ]);
  const ours = new Set(Object.values(MEASUREMENT_NAMES.runtime));
  const problems: string[] = [];
  const measurementsUsed = new Set<string>();
  for (const { file, dashboard } of dashboards) {
    for (const p of dashboard.panels) {
      if (!p.title || !p.description) {
        problems.push(`${file}: panel ${p.id} needs a title and a description`);
      }
    }
    const queries = queriesOf(file, dashboard);
    assert.ok(queries.length >= 8, `${file}: ${queries.length} queries`);
    for (const q of queries) {
      const needs = queryNeeds(q.flux);
      // A query that names no measurement counts across all of them (the anolis "Active Devices"
      // stat counts device-health rows too): ours always name one, and only our own.
      if (needs.measurements.length === 0) problems.push(`${q.where}: names no measurement`);
      for (const m of needs.measurements) {
        measurementsUsed.add(m);
        if (!ours.has(m)) problems.push(`${q.where}: ${m} is not a runtime measurement`);
      }
      if (
        /from\(bucket:|tagValues\(bucket:/.test(q.flux) && !/bucket: "\$\{bucket\}"/.test(q.flux)
      ) {
        problems.push(`${q.where}: reads a bucket other than the \${bucket} variable`);
      }
      for (const p of missingData(needs, schema)) problems.push(`${q.where}: ${p}`);
    }
  }
  assert.deepEqual(problems, []);
  assert.deepEqual([...measurementsUsed].sort(), [...ours].sort(), "every measurement is shown");
});

Deno.test("examples/grafana provisioning: an InfluxDB data source queried with Flux, and the dashboards folder", () => {
  const ds = parse(
    Deno.readTextFileSync(`${REPO}examples/grafana/provisioning/datasources/influxdb.yaml`),
  );
  assert.equal(ds.datasources.length, 1);
  assert.equal(ds.datasources[0].type, "influxdb");
  assert.equal(ds.datasources[0].jsonData.version, "Flux");
  assert.equal(ds.datasources[0].jsonData.defaultBucket, "anolis");
  const boards = parse(
    Deno.readTextFileSync(`${REPO}examples/grafana/provisioning/dashboards/runtime.yaml`),
  );
  assert.equal(boards.providers[0].type, "file");
  // Every dashboard picks its data source through the variable, so either way of setting up works.
  for (const { file, dashboard } of ourDashboards()) {
    const sources = new Set(
      JSON.stringify(dashboard).match(/"uid":"[^"]*"/g)?.filter((u) =>
        u !== `"uid":"${dashboard.uid}"`
      ),
    );
    assert.deepEqual([...sources], ['"uid":"${datasource}"'], file);
  }
});

Deno.test("the dashboard check reports a measurement, field, tag or tag value that was never written", async () => {
  const schema = await written("runtime");
  const signals = queriesOf("signals", ourDashboards()[2]!.dashboard);
  const numeric = signals.find((q) => q.where.includes("Numeric signals"))!.flux;
  assert.deepEqual(missingData(queryNeeds(numeric), schema), []);
  const broken = (from: string, to: string) =>
    missingData(queryNeeds(numeric.replace(from, to)), schema);
  assert.deepEqual(broken('"runtime_signal"', '"anolis_signal"'), ["no anolis_signal rows"]);
  assert.deepEqual(broken('"value_uint"', '"value_u64"'), [
    "no field value_u64 in runtime_signal",
  ]);
  assert.deepEqual(broken("r.device_id", "r.device"), ["no tag device in runtime_signal"]);
  const runs =
    queriesOf("ops", ourDashboards()[1]!.dashboard).find((q) => q.where.includes("Run markers"))!
      .flux;
  assert.deepEqual(missingData(queryNeeds(runs), schema), []);
  assert.deepEqual(missingData(queryNeeds(runs.replace('"annotation"', '"marker"')), schema), [
    "no category=marker in runtime_run_event",
  ]);
  assert.deepEqual(
    missingData(queryNeeds(runs.replace(/\|> pivot\([^)]*\)/, "")), schema),
    [
      "field run_id read as a column without a pivot on _field",
      "field type read as a column without a pivot on _field",
      "field payload read as a column without a pivot on _field",
    ],
  );
});

/**
 * What each panel of the three dashboards anolis ships queries (FEASTorg/anolis
 * observability/grafana/dashboards/{device-health,signal-history,system-overview}.json at
 * df95810fac2c5bbe443a6d2224f16b264b955540; the later anolishq/anolis device-health.json has the
 * same queries): the measurement, fields and tags of its Flux, bucket `anolis`.
 */
const ANOLIS_PANELS: readonly (QueryNeeds & { title: string })[] = (() => {
  const SIGNAL = "anolis_signal";
  const panel = (
    title: string,
    measurements: string[],
    fields: string[],
    columns: string[],
    more: Partial<QueryNeeds> = {},
  ) => ({
    title,
    measurements,
    fields,
    fieldPatterns: [],
    columns,
    listedTags: [],
    tagValues: [],
    pivotsFields: false,
    ...more,
  });
  const quality = (title: string, columns = ["provider_id", "device_id"]) =>
    panel(title, [SIGNAL], ["quality"], columns);
  const listed = (title: string, tag: string) => panel(title, [], [], [], { listedTags: [tag] });
  const anyValue = { fieldPatterns: [/^(?:value_.*)$/] };
  return [
    // device-health.json
    quality("Device Signal Status", ["provider_id", "device_id", "signal_id"]),
    quality("Signals OK"),
    quality("Signals STALE"),
    quality("Signals ERROR"),
    quality("Quality Distribution Over Time"),
    quality("Time Since Last Update (Staleness)", ["provider_id", "device_id", "signal_id"]),
    // signal-history.json
    panel("Signal Values (Double)", [SIGNAL], ["value_double"], [
      "provider_id",
      "device_id",
      "signal_id",
    ]),
    panel("Signal Values (Boolean)", [SIGNAL], ["value_bool"], ["provider_id", "device_id"]),
    panel("Signal Values (Integer)", [SIGNAL], ["value_int"], ["provider_id", "device_id"]),
    // system-overview.json
    listed("Active Providers", "provider_id"),
    listed("Active Devices", "device_id"),
    listed("Active Signals", "signal_id"),
    panel("Updates/sec (1m avg)", [SIGNAL], [], [], anyValue),
    panel("Update Rate by Provider", [SIGNAL], [], ["provider_id"], anyValue),
    quality("Device Status"),
    quality("Quality Distribution", []),
  ];
})();

Deno.test("anolis's three dashboards find every panel's data with measurement_names anolis, 3 of 16 with runtime", async () => {
  assert.equal(ANOLIS_PANELS.length, 16);
  const anolis = await written("anolis");
  const empty = (schema: WrittenSchema) =>
    ANOLIS_PANELS.filter((p) => missingData(p, schema).length > 0).map((p) => p.title);
  assert.deepEqual(empty(anolis), []);
  const runtime = await written("runtime");
  assert.deepEqual(
    ANOLIS_PANELS.filter((p) => missingData(p, runtime).length === 0).map((p) => p.title),
    ["Active Providers", "Active Devices", "Active Signals"],
  );
  // "Active Devices" lists device_id over the whole bucket: health rows carry it too, so it counts
  // the sim's chaos_control (no signals) as later anolis does; signal rows alone know 5 devices.
  const signalDevices = anolis.get("anolis_signal")!.tags.get("device_id")!;
  const allDevices = new Set(
    [...anolis.values()].flatMap((m) => [...(m.tags.get("device_id") ?? [])]),
  );
  assert.deepEqual([...allDevices].filter((d) => !signalDevices.has(d)), ["chaos_control"]);
});
