/**
 * GET /v0/openapi.json marks as `required` every member the runtime's answers always carry: a
 * client generated from the document need not treat them as maybe missing. A runtime with the
 * simulated provider (a child process), automation, an alarm and an interlock answers the status
 * routes, a device's capabilities, an e-stop and the alarm lists; every member of those answers that the document lists
 * but does not require must be one the document says is there only sometimes (CONDITIONAL).
 */
import assert from "node:assert/strict";
import { openApiDocument } from "../../src/http/openapi.ts";
import { ROUTES } from "../../src/http/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

/**
 * Members the document keeps optional because an answer carries them only sometimes (each says
 * when in its description): `<schema>.<member>`, `*` for every member of a schema whose members
 * are alternatives.
 */
const CONDITIONAL = new Set([
  "AutomationStatusResponse.execution_reason", // absent while the tree runs
  "EstopResponse.warning", // only when the rung leaves a function untouched
  "EstopResponse.hooks_pending", // only when true
  "EstopResponse.actions[].error", // only for a failed action
  "EstopStatus.plan_failed", // only when the plan could not be made
  // Only when the provider declares them.
  "DeviceCapabilitiesResponse.capabilities.signals[].unit",
  "DeviceCapabilitiesResponse.capabilities.functions[].args.*.description",
  "DeviceCapabilitiesResponse.capabilities.functions[].args.*.unit",
  "DeviceCapabilitiesResponse.capabilities.functions[].args.*.min",
  "DeviceCapabilitiesResponse.capabilities.functions[].args.*.max",
  "DeviceCapabilitiesResponse.capabilities.functions[].args.*.allowed_values",
  "ModeResponse.hook_failures", // POST only
  "ModeResponse.hooks_pending",
  "ModeResponse.superseded_by",
  "ModeResponse.superseded_reason",
  "ProviderDeviceHealth.poll_period_ms", // absent for devices only the provider reports
  "Verification.checks[].reason",
  "Verification.checks[].device_available", // status only
  "Verification.checks[].device_unavailable_reason",
  "TypedValue.*", // one value member, by type
]);

const doc: Json = openApiDocument(ROUTES);

/**
 * The members of `value` its schema lists but does not require, as `<schema>.<path>` (the name of
 * the nearest named schema), walked through objects, arrays and `oneOf` / null alternatives.
 */
function optionalMembers(
  value: Json,
  schema: Json,
  at: string,
  out: Set<string>,
  seen: Set<string>,
): void {
  if (schema?.$ref !== undefined) {
    const name = String(schema.$ref).split("/").at(-1)!;
    seen.add(name);
    optionalMembers(value, doc.components.schemas[name], name, out, seen);
    return;
  }
  if (value === null || typeof value !== "object" || schema === undefined) return;
  if (Array.isArray(schema.oneOf)) {
    for (const s of schema.oneOf) if (s.type !== "null") optionalMembers(value, s, at, out, seen);
    return;
  }
  if (Array.isArray(value)) {
    for (const v of value) optionalMembers(v, schema.items, `${at}[]`, out, seen);
    return;
  }
  if (schema.properties === undefined) {
    // A map (`args`: name -> spec): each value by the one schema.
    const each = schema.additionalProperties;
    if (typeof each !== "object") return;
    for (const v of Object.values(value)) optionalMembers(v, each, `${at}.*`, out, seen);
    return;
  }
  const required = new Set(schema.required ?? []);
  for (const [k, v] of Object.entries(value)) {
    const s = schema.properties[k];
    if (s === undefined) continue;
    if (!required.has(k)) out.add(`${at}.${k}`);
    optionalMembers(v, s, `${at}.${k}`, out, seen);
  }
}

Deno.test("the document requires every member the status, capabilities, e-stop and alarm answers always carry", async () => {
  const fx = await startHttpFixture({
    config: {
      providers: [simProvider("sim0", { yaml: SIM_INERT_YAML })],
      automation: { enabled: true },
      ...alarmsConfig(`
alarms:
  - { id: duty_high, signal: sim0/motorctl0/motor1_duty, hi: 0.5, message: Motor 1 fast }
interlocks:
  - { id: hot, while: "sim0/motorctl0/motor1_duty > 0.9", block: [sim0/motorctl0/set_motor_duty], message: Duty too high }
`),
    },
  });
  try {
    await waitFor("the provider's devices", async () => {
      const r = await fx.request("GET", "/v0/runtime/status");
      return r.json.device_count > 0;
    });
    const asks: [string, string, unknown, string][] = [
      ["GET", "/v0/runtime/status", undefined, "RuntimeStatusResponse"],
      ["GET", "/v0/providers/health", undefined, "ProvidersHealthResponse"],
      ["GET", "/v0/automation/status", undefined, "AutomationStatusResponse"],
      ["GET", "/v0/alarms", undefined, "AlarmsResponse"],
      [
        "GET",
        "/v0/devices/sim0/motorctl0/capabilities",
        undefined,
        "DeviceCapabilitiesResponse",
      ],
      ["GET", "/v0/interlocks", undefined, "InterlocksResponse"],
      ["POST", "/v0/mode", { mode: "MANUAL" }, "ModeResponse"],
      ["POST", "/v0/estop", undefined, "EstopResponse"],
      ["GET", "/v0/runtime/status", undefined, "RuntimeStatusResponse"], // latched
    ];
    const optional = new Set<string>();
    const seen = new Set<string>();
    for (const [method, path, body, schema] of asks) {
      const r = await fx.request(method, path, body === undefined ? {} : { body });
      assert.equal(r.status, 200, `${method} ${path}: ${r.text}`);
      optionalMembers(r.json, { $ref: `#/components/schemas/${schema}` }, schema, optional, seen);
    }
    const unexplained = [...optional].filter((m) =>
      !CONDITIONAL.has(m) && !CONDITIONAL.has(`${m.split(".")[0]}.*`)
    ).sort();
    assert.deepEqual(unexplained, [], "answered, listed, but neither required nor conditional");
    // The walk reached the schemas nested in those answers.
    const nested = ["EstopStatus", "ProviderHealth", "ProviderDeviceHealth", "AuditStatus"];
    for (const name of [...nested, "HistoryDiskStatus", "Alarm", "Interlock", "Verification"]) {
      assert.ok(seen.has(name), `${name} not reached: ${[...seen].sort()}`);
    }
  } finally {
    await fx.close();
  }
});
