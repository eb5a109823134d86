/**
 * The JSON Schema shipped for editors (schemas/runtime-config.schema.json) is the embedded one, and
 * on its own (as yaml-language-server would use it) flags the structural mistakes.
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse } from "yaml";
import { RUNTIME_CONFIG_SCHEMA } from "../../src/config/mod.ts";

const SCHEMA_FILE = new URL("../../schemas/runtime-config.schema.json", import.meta.url);

function editorValidator() {
  const schema = JSON.parse(Deno.readTextFileSync(SCHEMA_FILE));
  const ajv = new Ajv2020({ allErrors: true, strictTypes: false, allowUnionTypes: true });
  ajv.addVocabulary(["errorMessage", "deprecationMessage"]);
  return ajv.compile(schema);
}

/** instancePaths of the errors; `if` and anyOf-branch errors are summarised by their parent. */
function errorPaths(yaml: string): string[] {
  const validate = editorValidator();
  if (validate(parse(yaml))) return [];
  return [
    ...new Set(
      (validate.errors ?? []).filter((e) => e.keyword !== "if" && !e.schemaPath.includes("/anyOf/"))
        .map((e) =>
          e.keyword === "required"
            ? `${e.instancePath}/${e.params.missingProperty}`
            : e.instancePath
        ),
    ),
  ].sort();
}

const PROV = "providers: [{id: p0, command: prov}]\n";

Deno.test("RUNTIME_CONFIG_SCHEMA is identical to schemas/runtime-config.schema.json", () => {
  assert.deepEqual(JSON.parse(Deno.readTextFileSync(SCHEMA_FILE)), RUNTIME_CONFIG_SCHEMA);
});

Deno.test("runtime-config schema accepts the shipped examples", () => {
  for (const name of ["minimal.yaml", "demo.yaml", "full.yaml", "alarms.yaml"]) {
    const text = Deno.readTextFileSync(new URL(`../../examples/${name}`, import.meta.url));
    assert.deepEqual(errorPaths(text), [], name);
  }
});

Deno.test("runtime-config schema tolerates unknown keys", () => {
  assert.deepEqual(errorPaths(`${PROV}extra: 1\npolling: {foo: 2}\n`), []);
});

const INVALID: { name: string; yaml: string; paths: string[] }[] = [
  { name: "missing providers", yaml: "http: {}\n", paths: ["/providers"] },
  { name: "runtime.mode", yaml: `${PROV}runtime: {mode: AUTO}\n`, paths: ["/runtime/mode"] },
  {
    name: "restart_policy enabled without its fields",
    yaml: "providers: [{id: p0, command: prov, restart_policy: {enabled: true}}]\n",
    paths: [
      "/providers/0/restart_policy/backoff_ms",
      "/providers/0/restart_policy/max_attempts",
      "/providers/0/restart_policy/timeout_ms",
    ],
  },
  {
    name: "cors wildcard with credentials",
    yaml: `${PROV}http: {cors_allowed_origins: "*", cors_allow_credentials: true}\n`,
    paths: ["/http/cors_allowed_origins"],
  },
  {
    name: "automation enabled without a tree",
    yaml: `${PROV}automation: {enabled: true}\n`,
    paths: ["/automation/behavior_tree"],
  },
  {
    name: "safety call without a selector",
    yaml: `${PROV}safety: {safe_state: {hooks: [{device_handle: p0/d0}]}}\n`,
    paths: ["/safety/safe_state/hooks/0"],
  },
  {
    name: "bool parameter with min",
    yaml: `${PROV}automation: {parameters: [{name: a, type: bool, default: true, min: 0}]}\n`,
    paths: ["/automation/parameters/0/min"],
  },
  {
    name: "negative health_interval_ms",
    yaml: `${PROV}telemetry: {health_interval_ms: -1}\n`,
    paths: ["/telemetry/health_interval_ms"],
  },
  {
    name: "an alarm without a limit and an alarm with an unknown action",
    yaml:
      `${PROV}alarms: [{id: a, signal: p0/d/s}, {id: b, signal: p0/d/s, hi: 1, action: stop}]\n`,
    paths: ["/alarms/0", "/alarms/1/action"],
  },
  {
    // The loader's rule: a limit given as null is no limit (an empty YAML value is "not given").
    name: "an alarm whose only limit is null, and one whose four limits are",
    yaml: `${PROV}alarms: [{id: a, signal: p0/d/s, hi: null}, {id: b, signal: p0/d/s, ` +
      `hihi: null, hi: null, lo: null, lolo: null}]\n`,
    paths: ["/alarms/0", "/alarms/1"],
  },
  {
    name: "an interlock without a condition and with an empty block list",
    yaml: `${PROV}interlocks: [{id: i, block: [], message: m}]\n`,
    paths: ["/interlocks/0/block", "/interlocks/0/while"],
  },
  {
    name: "unknown telemetry.measurement_names",
    yaml: `${PROV}telemetry: {measurement_names: influx}\n`,
    paths: ["/telemetry/measurement_names"],
  },
];

for (const c of INVALID) {
  Deno.test(`runtime-config schema rejects ${c.name}`, () => {
    assert.deepEqual(errorPaths(c.yaml), c.paths);
  });
}
