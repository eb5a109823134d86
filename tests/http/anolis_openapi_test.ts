/**
 * Every JSON answer of the demo (examples/demo.yaml through src/main.ts, a real child process)
 * carries every member the later anolis OpenAPI document requires, with its type and enum (every
 * response schema of that document, walked against our answers). The schemas
 * (tests/helpers/anolis_schemas.ts) restate the `required` lists, types and enums of
 * anolishq/anolis schemas/http/runtime-http.openapi.v0.yaml. What anolis closes with
 * `additionalProperties: false` is left open there: the members we add are deliberate and listed in
 * docs/migrating-from-anolis.md. Every answer is also checked against our own document (apiFetch,
 * GET /v0/openapi.json).
 */
import assert from "node:assert/strict";
import { Ajv2020 } from "ajv/dist/2020.js";
import {
  type RuntimeChild,
  startRuntimeInMirror,
  withCheckoutMirror,
} from "../helpers/runtime_process.ts";
import { waitFor } from "../helpers/kernel.ts";
import { ANOLIS_DEFS as DEFS } from "../helpers/anolis_schemas.ts";
import { apiFetch } from "../helpers/openapi_check.ts";

const REPO = new URL("../../", import.meta.url).pathname;

const ajv = new Ajv2020({ allErrors: true, strict: false });
ajv.addSchema({ $id: "anolis", $defs: DEFS });

/** Validates `body` against the anolis schema `name`; the problems, one per line. */
function problems(name: keyof typeof DEFS, body: unknown): string {
  const validate = ajv.getSchema(`anolis#/$defs/${name}`)!;
  if (validate(body)) return "";
  return (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message}`).join("\n");
}

async function request(
  rt: RuntimeChild,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: unknown }> {
  const r = await apiFetch(`${rt.base}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  return { status: r.status, json: await r.json() };
}

Deno.test("every demo answer carries what the later anolis OpenAPI document requires", async () => {
  const demo = await Deno.readTextFile(`${REPO}examples/demo.yaml`);
  await withCheckoutMirror(demo, async (dir) => {
    const rt = await startRuntimeInMirror(dir);
    try {
      // The demo answers GetHealth: wait for its first report (devices carry `reported`).
      await waitFor("provider health reported", async () => {
        const h = await request(rt, "GET", "/v0/providers/health");
        // deno-lint-ignore no-explicit-any
        return (h.json as any).providers[0].reported !== null;
      }, 20000);
      const call = {
        provider_id: "sim0",
        device_id: "motorctl0",
        function_id: 10,
        args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.2 } },
      };
      const steps: [string, string, unknown, number, keyof typeof DEFS][] = [
        ["GET", "/v0/runtime/status", undefined, 200, "RuntimeStatusResponse"],
        ["GET", "/v0/providers/health", undefined, 200, "ProvidersHealthResponse"],
        ["GET", "/v0/telemetry/status", undefined, 200, "TelemetryStatusResponse"],
        ["GET", "/v0/devices", undefined, 200, "DevicesResponse"],
        [
          "GET",
          "/v0/devices/sim0/motorctl0/capabilities",
          undefined,
          200,
          "DeviceCapabilitiesResponse",
        ],
        ["GET", "/v0/state", undefined, 200, "StateCollectionResponse"],
        ["GET", "/v0/state/sim0/tempctl0", undefined, 200, "DeviceStateResponse"],
        ["GET", "/v0/mode", undefined, 200, "ModeResponse"],
        ["POST", "/v0/call", call, 409, "ErrorResponse"], // IDLE refuses actuating calls
        ["POST", "/v0/mode", { mode: "MANUAL" }, 200, "ModeResponse"],
        ["POST", "/v0/call", call, 200, "CallResponse"],
        ["GET", "/v0/parameters", undefined, 200, "ParametersResponse"],
        ["POST", "/v0/parameters", { name: "motor_duty", value: 0.3 }, 200, "SetParameterResponse"],
        ["GET", "/v0/automation/tree", undefined, 200, "AutomationTreeResponse"],
        ["GET", "/v0/automation/status", undefined, 200, "AutomationStatusResponse"],
        ["POST", "/v0/runs", { experiment_label: "walk" }, 200, "RunResponse"],
        ["GET", "/v0/runs", undefined, 200, "RunsListResponse"],
        ["GET", "/v0/devices/sim0/nope/capabilities", undefined, 404, "ErrorResponse"],
        ["GET", "/v0/nope", undefined, 404, "ErrorResponse"],
        ["POST", "/v0/estop", undefined, 200, "EstopResponse"],
        ["GET", "/v0/runtime/status", undefined, 200, "RuntimeStatusResponse"],
        ["POST", "/v0/estop/clear", undefined, 200, "EstopClearResponse"],
      ];
      const found: string[] = [];
      let runId = "";
      for (const [method, path, body, status, schema] of steps) {
        const r = await request(rt, method, path, body);
        const p = r.status === status ? problems(schema, r.json) : `status ${r.status}`;
        if (p !== "") found.push(`${method} ${path} (${schema}):\n${p}\n${JSON.stringify(r.json)}`);
        // deno-lint-ignore no-explicit-any
        if (path === "/v0/runs" && method === "POST") runId = (r.json as any).run.run_id;
      }
      const runSteps: [string, string, unknown, keyof typeof DEFS][] = [
        ["GET", `/v0/runs/${runId}`, undefined, "RunResponse"],
        [
          "POST",
          `/v0/runs/${runId}/events`,
          { type: "feed", payload: { g: 2 } },
          "RunEventResponse",
        ],
        ["GET", `/v0/runs/${runId}/events`, undefined, "RunEventsListResponse"],
        ["POST", `/v0/runs/${runId}/close`, { close_reason: "completed" }, "RunResponse"],
      ];
      for (const [method, path, body, schema] of runSteps) {
        const r = await request(rt, method, path, body);
        let json = r.json;
        if (schema === "RunEventsListResponse" && r.status === 200) {
          // A documented addition (docs/migrating-from-anolis.md, audit trail): the calls made
          // during the run (here the e-stop ladder's) are events of category `call`, which the
          // anolis enum does not list; so is the e-stop's incident record (category
          // `incident`, docs/history.md) and the e-stop itself (category `estop`, its trigger).
          // Everything else is validated as anolis requires it.
          // deno-lint-ignore no-explicit-any
          const events = (json as any).events as { category: string }[];
          if (!events.some((e) => e.category === "call")) found.push(`${path}: no call events`);
          if (!events.some((e) => e.category === "incident")) found.push(`${path}: no incident`);
          if (!events.some((e) => e.category === "estop")) found.push(`${path}: no estop`);
          const added = ["call", "incident", "estop"];
          json = {
            ...(json as object),
            events: events.filter((e) => !added.includes(e.category)),
          };
        }
        const p = r.status === 200 ? problems(schema, json) : `status ${r.status}`;
        if (p !== "") found.push(`${method} ${path} (${schema}):\n${p}\n${JSON.stringify(r.json)}`);
      }
      assert.deepEqual(found, []);
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
    }
  });
});
