/**
 * The response schemas of the later anolis OpenAPI document, restated: the `required` lists,
 * types and enums of anolishq/anolis schemas/http/runtime-http.openapi.v0.yaml (commit
 * 073ac2cfffd81e145cb0cfe3e52f093da86d92b4). What
 * anolis closes with `additionalProperties: false` is left open here: the members we add are
 * deliberate and listed in docs/migrating-from-anolis.md. Used by
 * tests/http/anolis_openapi_test.ts (the demo's answers) and tests/http/openapi_test.ts (our
 * document keeps every name and required member).
 */
const str = { type: "string" };
const int = { type: "integer" };
const bool = { type: "boolean" };
const nullable = (s: object) => ({ oneOf: [s, { type: "null" }] });
const obj = (required: string[], properties: Record<string, unknown>) => ({
  type: "object",
  required,
  properties,
});
const arr = (items: unknown) => ({ type: "array", items });
const ref = (name: string) => ({ $ref: `#/$defs/${name}` });
const strMap = { type: "object", additionalProperties: { type: "string" } };
const QUALITY = { enum: ["OK", "STALE", "UNAVAILABLE", "FAULT"] };
const VALUE_TYPE = { enum: ["double", "int64", "uint64", "bool", "string", "bytes"] };
const RUNG = { enum: ["none", "hooks", "setpoints", "zero"] };

export const ANOLIS_DEFS = {
  Status: obj(["code", "message"], { code: str, message: str }),
  ErrorResponse: obj(["status"], { status: ref("Status") }),
  RuntimeMode: { enum: ["MANUAL", "AUTO", "IDLE", "FAULT"] },
  EstopStatus: obj(
    ["latched", "software_safe_state", "latched_at_epoch_ms", "uncovered_actuating_functions"],
    {
      latched: bool,
      software_safe_state: RUNG,
      latched_at_epoch_ms: { type: ["integer", "null"] },
      uncovered_actuating_functions: int,
    },
  ),
  RuntimeStatusResponse: obj(
    ["status", "version", "mode", "uptime_seconds", "polling_interval_ms", "providers"],
    {
      status: ref("Status"),
      version: str,
      mode: ref("RuntimeMode"),
      uptime_seconds: int,
      polling_interval_ms: int,
      providers: arr(obj(["provider_id", "state", "device_count"], {
        provider_id: str,
        state: { enum: ["AVAILABLE", "UNAVAILABLE"] },
        device_count: int,
      })),
      device_count: int,
      estop: ref("EstopStatus"),
    },
  ),
  ProviderDeviceHealth: obj(
    [
      "device_id",
      "health",
      "last_poll_ms",
      "staleness_ms",
      "registered",
      "stale_signal_count",
      "fault_signal_count",
      "type_version",
      "descriptor_tags",
      "reported",
    ],
    {
      device_id: str,
      health: { enum: ["OK", "WARNING", "STALE", "FAULT", "UNAVAILABLE", "UNKNOWN"] },
      last_poll_ms: int,
      staleness_ms: int,
      registered: bool,
      stale_signal_count: { type: "integer", minimum: 0 },
      fault_signal_count: { type: "integer", minimum: 0 },
      type_version: { type: "string" },
      descriptor_tags: {
        type: "object",
        maxProperties: 32,
        propertyNames: { maxLength: 128 },
        additionalProperties: { type: "string", maxLength: 128 },
      },
      reported: nullable(
        obj(["state", "message", "metrics", "last_seen_epoch_ms"], {
          state: {
            enum: [
              "STATE_UNSPECIFIED",
              "STATE_OK",
              "STATE_STALE",
              "STATE_UNREACHABLE",
              "STATE_FAULT",
            ],
          },
          message: str,
          metrics: strMap,
          last_seen_epoch_ms: nullable(int),
        }),
      ),
    },
  ),
  ProvidersHealthResponse: obj(["status", "providers"], {
    status: ref("Status"),
    providers: arr(obj(
      [
        "provider_id",
        "state",
        "lifecycle_state",
        "last_seen_ago_ms",
        "uptime_seconds",
        "device_count",
        "degraded",
        "failed_device_count",
        "reported",
        "supervision",
        "devices",
      ],
      {
        provider_id: str,
        state: { enum: ["AVAILABLE", "UNAVAILABLE"] },
        lifecycle_state: { enum: ["RUNNING", "RECOVERING", "RESTARTING", "CIRCUIT_OPEN", "DOWN"] },
        last_seen_ago_ms: nullable(int),
        uptime_seconds: int,
        device_count: int,
        degraded: bool,
        failed_device_count: int,
        reported: nullable(obj(["state", "message", "metrics"], {
          state: { enum: ["STATE_UNSPECIFIED", "STATE_OK", "STATE_DEGRADED", "STATE_FAULT"] },
          message: str,
          metrics: strMap,
        })),
        supervision: obj(
          [
            "enabled",
            "attempt_count",
            "max_attempts",
            "crash_detected",
            "circuit_open",
            "next_restart_in_ms",
          ],
          {
            enabled: bool,
            attempt_count: int,
            max_attempts: int,
            crash_detected: bool,
            circuit_open: bool,
            next_restart_in_ms: nullable(int),
          },
        ),
        devices: arr(ref("ProviderDeviceHealth")),
      },
    )),
  }),
  TelemetryStatusResponse: obj(
    [
      "status",
      "enabled",
      "running",
      "connected",
      "total_written",
      "total_failed",
      "pending_batch",
      "queue_depth",
      "dropped_events",
    ],
    {
      status: ref("Status"),
      enabled: bool,
      running: bool,
      connected: bool,
      total_written: int,
      total_failed: int,
      pending_batch: int,
      queue_depth: int,
      dropped_events: int,
      backend: obj(["url", "org", "bucket"], { url: str, org: str, bucket: str }),
    },
  ),
  DevicesResponse: obj(["status", "devices"], {
    status: ref("Status"),
    devices: arr(obj(["provider_id", "device_id", "display_name", "type"], {
      provider_id: str,
      device_id: str,
      display_name: str,
      type: str,
    })),
  }),
  DeviceCapabilitiesResponse: obj(["status", "provider_id", "device_id", "capabilities"], {
    status: ref("Status"),
    provider_id: str,
    device_id: str,
    capabilities: obj(["signals", "functions"], {
      signals: arr(obj(["signal_id", "value_type", "label"], {
        signal_id: str,
        value_type: VALUE_TYPE,
        label: str,
      })),
      functions: arr(obj(["function_id", "name", "label", "args", "category", "actuating"], {
        function_id: int,
        name: str,
        label: str,
        args: {
          type: "object",
          additionalProperties: obj(["type", "required"], {
            type: VALUE_TYPE,
            required: bool,
            description: str,
            unit: str,
            min: { type: "number" },
            max: { type: "number" },
          }),
        },
        category: { enum: ["UNSPECIFIED", "READ", "CONFIG", "ACTUATE"] },
        actuating: bool,
      })),
    }),
  }),
  TypedValue: obj(["type"], {
    type: VALUE_TYPE,
    double: { type: "number" },
    int64: int,
    uint64: { type: "integer", minimum: 0 },
    bool,
    string: str,
    base64: str,
  }),
  SignalValue: obj(["signal_id", "value", "timestamp_epoch_ms", "quality", "age_ms"], {
    signal_id: str,
    value: ref("TypedValue"),
    timestamp_epoch_ms: int,
    quality: QUALITY,
    age_ms: int,
  }),
  StateCollectionResponse: obj(["status", "generated_at_epoch_ms", "devices"], {
    status: ref("Status"),
    generated_at_epoch_ms: int,
    devices: arr(obj(["provider_id", "device_id", "quality", "values"], {
      provider_id: str,
      device_id: str,
      quality: QUALITY,
      values: arr(ref("SignalValue")),
    })),
  }),
  DeviceStateResponse: obj(
    ["status", "generated_at_epoch_ms", "provider_id", "device_id", "quality", "values"],
    {
      status: ref("Status"),
      generated_at_epoch_ms: int,
      provider_id: str,
      device_id: str,
      quality: QUALITY,
      values: arr(ref("SignalValue")),
    },
  ),
  CallResponse: obj(
    ["status", "provider_id", "device_id", "function_id", "post_call_poll_triggered"],
    {
      status: ref("Status"),
      provider_id: str,
      device_id: str,
      function_id: int,
      post_call_poll_triggered: bool,
    },
  ),
  ModeResponse: obj(["status", "mode"], { status: ref("Status"), mode: ref("RuntimeMode") }),
  ParametersResponse: obj(["status", "parameters"], {
    status: ref("Status"),
    parameters: arr(obj(["name", "type", "value"], {
      name: str,
      type: { enum: ["double", "int64", "bool", "string"] },
      value: { type: ["number", "integer", "boolean", "string"] },
      min: { type: "number" },
      max: { type: "number" },
      allowed_values: arr(str),
    })),
  }),
  SetParameterResponse: obj(["status", "parameter"], {
    status: ref("Status"),
    parameter: obj(["name", "value"], {
      name: str,
      value: { type: ["number", "integer", "boolean", "string"] },
    }),
  }),
  AutomationTreeResponse: obj(["status", "tree"], { status: ref("Status"), tree: str }),
  AutomationVersion: obj(["engine_kind", "id", "digest", "digest_scope"], {
    engine_kind: str,
    id: str,
    digest: str,
    digest_scope: { enum: ["include_closure", "top_level_file"] },
  }),
  AutomationStatusResponse: obj(
    [
      "status",
      "execution_status",
      "automation_version",
      "last_evaluation_at_epoch_ms",
      "engine_diagnostics",
      "run_id",
    ],
    {
      status: ref("Status"),
      execution_status: { enum: ["idle", "running", "blocked", "failed", "completed", "unknown"] },
      execution_reason: {
        enum: [
          "mode_gate",
          "waiting",
          "terminal_failure",
          "engine_fault",
          "no_definition",
          "stopped",
        ],
      },
      automation_version: nullable(ref("AutomationVersion")),
      last_evaluation_at_epoch_ms: int,
      engine_diagnostics: { type: "object" },
      run_id: nullable(str),
      last_error: nullable(str),
    },
  ),
  Run: obj(
    [
      "schema_version",
      "run_id",
      "state",
      "close_reason",
      "started_at_epoch_ms",
      "ended_at_epoch_ms",
      "automation_version",
      "runtime_version",
      "polling_interval_ms",
      "params",
      "tag_scope",
      "experiment_label",
    ],
    {
      schema_version: int,
      run_id: str,
      state: { enum: ["open", "closed"] },
      close_reason: nullable({
        enum: ["operator_stop", "completed", "failed", "superseded", "abandoned"],
      }),
      started_at_epoch_ms: int,
      ended_at_epoch_ms: nullable(int),
      automation_version: nullable(ref("AutomationVersion")),
      runtime_version: str,
      polling_interval_ms: int,
      params: { type: "object" },
      tag_scope: obj(["provider_ids", "device_ids", "signal_ids"], {
        provider_ids: arr(str),
        device_ids: arr(str),
        signal_ids: arr(str),
      }),
      experiment_label: nullable(str),
    },
  ),
  RunResponse: obj(["status", "run"], { status: ref("Status"), run: ref("Run") }),
  RunsListResponse: obj(["status", "runs", "count"], {
    status: ref("Status"),
    runs: arr(ref("Run")),
    count: int,
  }),
  RunEvent: obj(
    [
      "schema_version",
      "run_id",
      "sequence",
      "category",
      "type",
      "occurred_at_epoch_ms",
      "recorded_at_epoch_ms",
      "payload",
    ],
    {
      schema_version: int,
      run_id: str,
      sequence: int,
      category: {
        enum: [
          "run_opened",
          "run_closed",
          "mode_change",
          "parameter_change",
          "automation_fault",
          "annotation",
        ],
      },
      type: str,
      occurred_at_epoch_ms: int,
      recorded_at_epoch_ms: int,
      payload: { type: "object" },
    },
  ),
  RunEventResponse: obj(["status", "event"], { status: ref("Status"), event: ref("RunEvent") }),
  RunEventsListResponse: obj(["status", "events", "count"], {
    status: ref("Status"),
    events: arr(ref("RunEvent")),
    count: int,
  }),
  EstopResponse: obj(["status", "latched", "software_safe_state", "actions"], {
    status: ref("Status"),
    latched: bool,
    software_safe_state: RUNG,
    actions: arr(obj(["device_handle", "function", "success"], {
      device_handle: str,
      function: str,
      success: bool,
      error: str,
    })),
    warning: str,
    fault_engaged: bool,
  }),
  EstopClearResponse: obj(["status", "latched"], { status: ref("Status"), latched: bool }),
};
