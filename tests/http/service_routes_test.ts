/**
 * Routes to the later issues' services (modes, parameters, e-stop, automation, telemetry, runs)
 * through the one router and envelope. The runtime is constructed but not started (no provider
 * processes): these routes do not need devices.
 */
import assert from "node:assert/strict";
import { notFound } from "../../src/common/mod.ts";
import type { EstopResult, EstopStatus } from "../../src/safety/mod.ts";
import type { RunsService, TelemetryService } from "../../src/http/mod.ts";
import type { RunRegistry } from "../../src/runs/mod.ts";
import type { TelemetryWriter } from "../../src/telemetry/mod.ts";
import {
  type FixtureResponse,
  startHttpFixture,
  withRunsFixture,
} from "../helpers/runtime_fixture.ts";

const OK = { code: "OK", message: "ok" };

function assertError(res: FixtureResponse, http: number, code: string, message: string | RegExp) {
  assert.equal(res.status, http, res.text);
  assert.deepEqual(Object.keys(res.json), ["status"]);
  assert.equal(res.json.status.code, code);
  if (typeof message === "string") assert.equal(res.json.status.message, message);
  else assert.match(res.json.status.message, message);
}

// Compile-time: the real modules satisfy the HTTP layer's service interfaces.
export const _telemetryFits = (w: TelemetryWriter): TelemetryService => w;
export const _runsFit = (r: RunRegistry): RunsService => r;

const AUTOMATION = {
  enabled: true,
  parameters: [{
    name: "temp_setpoint",
    type: "double" as const,
    default: 25,
    min: 0,
    max: 100,
    allowedValues: [],
  }],
};

Deno.test("GET/POST /v0/mode read and change the mode, validating the body", async () => {
  const fx = await startHttpFixture({ start: false, config: { automation: AUTOMATION } });
  try {
    assert.deepEqual((await fx.request("GET", "/v0/mode")).json, { status: OK, mode: "IDLE" });
    const bad: Array<[unknown, string | RegExp]> = [
      [{}, "mode: missing"],
      [{ mode: 1 }, "mode: must be a string"],
      [{ mode: "manual" }, /^mode: must be one of MANUAL, AUTO, IDLE, FAULT/],
      ["{", /^Invalid JSON: /],
    ];
    for (const [body, message] of bad) {
      assertError(await fx.request("POST", "/v0/mode", { body }), 400, "INVALID_ARGUMENT", message);
    }
    // IDLE -> AUTO is not in the transition table.
    assertError(
      await fx.request("POST", "/v0/mode", { body: { mode: "AUTO" } }),
      409,
      "FAILED_PRECONDITION",
      /IDLE -> AUTO/,
    );
    const r = await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
    assert.deepEqual(r.json, { status: OK, mode: "MANUAL", hook_failures: [] });
    assert.equal((await fx.request("GET", "/v0/runtime/status")).json.mode, "MANUAL");
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/mode AUTO is 409 while automation is disabled", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
    const r = await fx.request("POST", "/v0/mode", { body: { mode: "AUTO" } });
    assertError(r, 409, "FAILED_PRECONDITION", /automation/);
  } finally {
    await fx.close();
  }
});

Deno.test("GET/POST /v0/parameters list and set parameters with validation", async () => {
  const fx = await startHttpFixture({ start: false, config: { automation: AUTOMATION } });
  try {
    const list = await fx.request("GET", "/v0/parameters");
    assert.equal(list.status, 200);
    assert.deepEqual(list.json.parameters, [
      { name: "temp_setpoint", type: "double", value: 25, min: 0, max: 100 },
    ]);
    const set = await fx.request("POST", "/v0/parameters", {
      body: { name: "temp_setpoint", value: 30.0 },
    });
    assert.deepEqual(set.json, { status: OK, parameter: { name: "temp_setpoint", value: 30 } });
    const rows: Array<[unknown, number, string, string | RegExp]> = [
      ["{", 400, "INVALID_ARGUMENT", /^Invalid JSON: /],
      [{ value: 1 }, 400, "INVALID_ARGUMENT", "name: missing"],
      [{ name: 5, value: 1 }, 400, "INVALID_ARGUMENT", "name: must be a string"],
      [{ name: "temp_setpoint" }, 400, "INVALID_ARGUMENT", "value: missing"],
      [{ name: "nope", value: 1 }, 404, "NOT_FOUND", /nope/],
      [{ name: "temp_setpoint", value: "hot" }, 400, "INVALID_ARGUMENT", /.+/],
      [{ name: "temp_setpoint", value: 101 }, 400, "INVALID_ARGUMENT", /.+/],
    ];
    for (const [body, http, code, message] of rows) {
      assertError(await fx.request("POST", "/v0/parameters", { body }), http, code, message);
    }
    const after = await fx.request("GET", "/v0/parameters");
    assert.equal(after.json.parameters[0].value, 30); // failed sets changed nothing
  } finally {
    await fx.close();
  }
});

Deno.test("/v0/parameters and /v0/automation/* answer 503 while automation is disabled", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    for (
      const [method, path] of [
        ["GET", "/v0/parameters"],
        ["POST", "/v0/parameters"],
        ["GET", "/v0/automation/tree"],
        ["GET", "/v0/automation/status"],
      ]
    ) {
      const body = method === "POST" ? { name: "x", value: 1 } : undefined;
      const r = await fx.request(method!, path!, { body });
      assertError(r, 503, "UNAVAILABLE", /automation is disabled/);
    }
  } finally {
    await fx.close();
  }
});

/** A whole e-stop status as the engine gives it (answers are checked against the document). */
const ESTOP_STATUS: EstopStatus = {
  latched: true,
  software_safe_state: "zero",
  latched_at_epoch_ms: 5,
  uncovered_actuating_functions: 0,
  cause: "api",
  cause_alarm_retired: null,
  plan: { rung: "zero", calls: [], uncovered: [] },
  unverified_devices: [],
  unverified_reasons: [],
  verification: null,
};

Deno.test("POST /v0/estop passes the optional reason and never rejects a body", async () => {
  const reasons: Array<Promise<string | undefined>> = [];
  const result: EstopResult = {
    latched: true,
    software_safe_state: "zero",
    actions: [{ device_handle: "sim0/motorctl0", function: "set_motor_duty", success: true }],
    uncovered_actuating_functions: 0,
    uncovered: [],
    fault_engaged: true,
    hook_failures: [],
    drain: { complete: true, pending_providers: [] },
    verification: { outcome: "unverifiable", elapsed_ms: 0, checks: [] },
  };
  const fx = await startHttpFixture({
    start: false,
    services: {
      estop: {
        trigger: (reason) => {
          // The route latches before the body has arrived: the reason comes as a promise.
          reasons.push(Promise.resolve(reason));
          return Promise.resolve(result);
        },
        clear: () => ({ latched: false }),
        status: () => ({ ...ESTOP_STATUS }),
      },
    },
  });
  try {
    for (
      const body of [
        { reason: "door open" },
        "{not json",
        undefined,
        { reason: 7 },
        "x".repeat(70_000),
      ]
    ) {
      const r = await fx.request("POST", "/v0/estop", { body });
      assert.equal(r.status, 200);
      assert.deepEqual(r.json, { status: OK, ...result });
    }
    assert.deepEqual(await Promise.all(reasons), [
      "door open",
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    assert.deepEqual((await fx.request("POST", "/v0/estop/clear", { body: "ignored" })).json, {
      status: OK,
      latched: false,
    });
    assert.deepEqual((await fx.request("GET", "/v0/runtime/status")).json.estop, ESTOP_STATUS);
  } finally {
    await fx.close();
  }
});

/** A whole status as the engine gives it (answers are checked against the OpenAPI document). */
const AUTOMATION_STATUS = {
  execution_status: "idle",
  execution_reason: "no_definition",
  automation_version: null,
  last_evaluation_at_epoch_ms: 0,
  engine_diagnostics: {},
  run_id: null,
  last_error: null,
  mode: "IDLE",
  not_running: { cause: "no_definition", mode: "IDLE" },
  why_not_running: "no behavior tree is configured",
  blocked_devices: [],
  device_loss_latched: [],
  device_loss_latched_providers: [],
  device_outages: [],
  refused_calls: [],
} as const;

Deno.test("GET /v0/automation/tree and status route to the automation service", async () => {
  let tree: () => Promise<string> = () => Promise.resolve("<root/>");
  const fx = await startHttpFixture({
    start: false,
    services: {
      automation: {
        treeXml: () => tree(),
        status: () => ({ ...AUTOMATION_STATUS }),
      },
    },
  });
  try {
    assert.deepEqual((await fx.request("GET", "/v0/automation/tree")).json, {
      status: OK,
      tree: "<root/>",
    });
    assert.deepEqual((await fx.request("GET", "/v0/automation/status")).json, {
      status: OK,
      ...AUTOMATION_STATUS,
    });
    tree = () => Promise.reject(notFound("No behavior tree configured"));
    assertError(
      await fx.request("GET", "/v0/automation/tree"),
      404,
      "NOT_FOUND",
      "No behavior tree configured",
    );
    tree = () => Promise.reject(new Error("EACCES: tree.xml"));
    assertError(
      await fx.request("GET", "/v0/automation/tree"),
      500,
      "INTERNAL",
      "EACCES: tree.xml",
    );
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/telemetry/status answers the writer's status while telemetry is disabled", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    assert.deepEqual((await fx.request("GET", "/v0/telemetry/status")).json, {
      status: OK,
      enabled: false,
      running: false,
      connected: false,
      total_written: 0,
      total_failed: 0,
      pending_batch: 0,
      pending_batch_bytes: 0,
      queue_depth: 0,
      dropped_events: 0,
      retry_buffer_depth: 0,
      dropped_retry: 0,
      write_failures: 0,
      dropped_rejected: 0,
      dropped_unformattable: 0,
      dropped_overflow: 0,
      omitted_values: 0,
      run_payload_errors: 0,
      last_error: null,
      last_error_at_epoch_ms: null,
      last_flush_at_epoch_ms: null,
      last_health_snapshot_at_epoch_ms: null,
    });
  } finally {
    await fx.close();
  }
});

const TELEMETRY_STATUS = {
  enabled: true,
  running: true,
  connected: true,
  total_written: 3,
  total_failed: 0,
  pending_batch: 0,
  pending_batch_bytes: 0,
  queue_depth: 0,
  dropped_events: 0,
  retry_buffer_depth: 0,
  dropped_retry: 0,
  write_failures: 1,
  dropped_rejected: 0,
  dropped_unformattable: 0,
  dropped_overflow: 0,
  omitted_values: 0,
  run_payload_errors: 0,
  last_error: "telemetry write failed: HTTP 503",
  last_error_at_epoch_ms: 1_760_000_000_000,
  last_flush_at_epoch_ms: 1_760_000_001_000,
  last_health_snapshot_at_epoch_ms: null,
  backend: { url: "http://db:8086", org: "lab", bucket: "telemetry" },
};

Deno.test("GET /v0/telemetry/status returns the telemetry service's status", async () => {
  const fx = await startHttpFixture({
    start: false,
    services: { telemetry: { status: () => ({ ...TELEMETRY_STATUS }) } },
  });
  try {
    assert.deepEqual((await fx.request("GET", "/v0/telemetry/status")).json, {
      status: OK,
      ...TELEMETRY_STATUS,
    });
  } finally {
    await fx.close();
  }
});

Deno.test("/v0/runs* route to the run registry: open, list, get, markers, close", async () => {
  await withRunsFixture({ prefix: "http-runs-", runtimeName: "lab1" }, async ({ fx }) => {
    const open = await fx.request("POST", "/v0/runs", { body: { experiment_label: "trial-3" } });
    assert.equal(open.status, 200, open.text);
    const run = open.json.run;
    assert.match(run.run_id, /^lab1-[0-9A-Z]{26}$/);
    assert.equal(run.experiment_label, "trial-3");
    assertError(await fx.request("POST", "/v0/runs"), 409, "FAILED_PRECONDITION", /already open/);
    assertError(
      await fx.request("POST", "/v0/runs", { body: "{" }),
      400,
      "INVALID_ARGUMENT",
      /^Invalid JSON/,
    );

    const list = await fx.request("GET", "/v0/runs?limit=10");
    assert.equal(list.json.count, 1);
    assert.equal(list.json.runs[0].run_id, run.run_id);
    assert.equal((await fx.request("GET", `/v0/runs/${run.run_id}`)).json.run.run_id, run.run_id);
    assertError(await fx.request("GET", "/v0/runs/nope"), 404, "NOT_FOUND", /nope/);

    const marker = await fx.request("POST", `/v0/runs/${run.run_id}/events`, {
      body: { type: "valve_opened", payload: { n: 1 } },
    });
    assert.equal(marker.status, 200, marker.text);
    assert.equal(marker.json.event.category, "annotation");
    assertError(
      await fx.request("POST", `/v0/runs/${run.run_id}/events`, { body: {} }),
      400,
      "INVALID_ARGUMENT",
      /type/,
    );
    const events = await fx.request("GET", `/v0/runs/${run.run_id}/events`);
    assert.deepEqual(events.json.events.map((e: { category: string }) => e.category), [
      "run_opened",
      "annotation",
    ]);
    assert.equal(events.json.count, 2);

    assertError(
      await fx.request("POST", `/v0/runs/${run.run_id}/close`, { body: { close_reason: "bored" } }),
      400,
      "INVALID_ARGUMENT",
      /close_reason/,
    );
    const closed = await fx.request("POST", `/v0/runs/${run.run_id}/close`);
    assert.equal(closed.json.run.state, "closed");
    assert.equal(closed.json.run.close_reason, "operator_stop");
  });
});

Deno.test("HttpApi answers 500 INTERNAL with the message when a handler throws", async () => {
  const fx = await startHttpFixture({
    start: false,
    services: {
      automation: {
        treeXml: () => Promise.resolve(""),
        status: () => {
          throw new TypeError("kaput");
        },
      },
    },
  });
  try {
    const r = await fx.request("GET", "/v0/automation/status");
    assert.equal(r.status, 500);
    assert.deepEqual(r.json, { status: { code: "INTERNAL", message: "kaput" } });
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/runs?before=<run_id> pages newest first without repeating a run when one opens between pages; offset still counts from the newest", async () => {
  await withRunsFixture(
    { prefix: "http-runs-cursor-", runtimeName: "lab1" },
    async ({ fx, runs }) => {
      const ids = async (path: string) => {
        const r = await fx.request("GET", path);
        assert.equal(r.status, 200, r.text);
        return (r.json.runs as { run_id: string }[]).map((x) => x.run_id);
      };
      const opened: string[] = [];
      const openClose = async () => {
        const { run } = await runs.open({});
        await runs.close(run.run_id, {});
        opened.push(run.run_id);
      };
      for (let i = 0; i < 4; i++) await openClose();
      const [r1, r2, r3, r4] = opened;
      const first = await ids("/v0/runs?limit=2");
      assert.deepEqual(first, [r4, r3]);
      await openClose(); // r5 opens between the pages
      // Offset counts from the newest: the page repeats r3 (documented).
      assert.deepEqual(await ids("/v0/runs?limit=2&offset=2"), [r3, r2]);
      // The cursor does not.
      assert.deepEqual(await ids(`/v0/runs?limit=2&before=${first.at(-1)}`), [r2, r1]);
      assert.deepEqual(await ids(`/v0/runs?limit=2&before=${r2}&offset=1`), []);
      assert.deepEqual(await ids(`/v0/runs?before=${r1}`), []);
      // A cursor naming no kept run (retention removed it): the runs opened before it, by id.
      assert.deepEqual(await ids(`/v0/runs?before=lab1-00000000000000000000000000`), []);
      assert.deepEqual(await ids(`/v0/runs?limit=1&before=lab1-ZZZZZZZZZZZZZZZZZZZZZZZZZZ`), [
        opened[4]!,
      ]);
      assertError(
        await fx.request("GET", "/v0/runs?before=nope"),
        400,
        "INVALID_ARGUMENT",
        /^before: must be a run id/,
      );
      // The client's text quoted and cut (before: echoed whole, a line break and all).
      const long = `x\n${"y".repeat(500)}`;
      assertError(
        await fx.request("GET", `/v0/runs?before=${encodeURIComponent(long)}`),
        400,
        "INVALID_ARGUMENT",
        new RegExp(`^before: must be a run id \\(ending with a ULID\\), got "x\\\\ny{78}\u2026"$`),
      );
    },
  );
});
