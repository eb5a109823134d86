import { deepEqual as assertEquals } from "node:assert/strict";
import type { ProviderHealthView } from "../../src/common/mod.ts";
import {
  escapeStringField,
  escapeTag,
  formatRow,
  healthRows,
  rowForEvent,
  runEventRow,
  truncateUtf8,
} from "../../src/telemetry/mod.ts";

const TS = 1760000000123;

function line(event: Parameters<typeof rowForEvent>[1]): string | null {
  const row = rowForEvent("lab1", event);
  return row === null ? null : formatRow(row);
}

const sig = {
  kind: "state_update" as const,
  provider_id: "sim0",
  device_id: "tempctl0",
  signal_id: "tc1_temp",
  quality: "OK" as const,
  timestamp_ms: TS,
};
const TAGS =
  "runtime_signal,runtime_name=lab1,provider_id=sim0,device_id=tempctl0,signal_id=tc1_temp";

Deno.test("rowForEvent formats every signal value type with its typed field and quality", () => {
  assertEquals(
    line({ ...sig, value: { type: "double", double: 24.5 } }),
    `${TAGS} value_double=24.5,quality="OK" ${TS}`,
  );
  assertEquals(
    line({ ...sig, value: { type: "int64", int64: -42 } }),
    `${TAGS} value_int=-42i,quality="OK" ${TS}`,
  );
  assertEquals(
    line({ ...sig, value: { type: "uint64", uint64: 7 } }),
    `${TAGS} value_uint=7u,quality="OK" ${TS}`,
  );
  assertEquals(
    line({ ...sig, value: { type: "bool", bool: true }, quality: "STALE" }),
    `${TAGS} value_bool=true,quality="STALE" ${TS}`,
  );
  assertEquals(
    line({ ...sig, value: { type: "string", string: 'say "hi"\\' } }),
    `${TAGS} value_string="say \\"hi\\"\\\\",quality="OK" ${TS}`,
  );
  assertEquals(
    line({ ...sig, value: { type: "bytes", base64: "AAEC/w==" } }),
    `${TAGS} value_string="AAEC/w==",quality="OK" ${TS}`,
  );
});

Deno.test("rowForEvent prints doubles with full precision and omits NaN and infinities", () => {
  assertEquals(
    line({ ...sig, value: { type: "double", double: 23.456789012345 } }),
    `${TAGS} value_double=23.456789012345,quality="OK" ${TS}`,
  );
  assertEquals(
    line({ ...sig, value: { type: "double", double: 0.1 + 0.2 } }),
    `${TAGS} value_double=0.30000000000000004,quality="OK" ${TS}`,
  );
  for (const bad of [NaN, Infinity, -Infinity]) {
    assertEquals(
      line({ ...sig, value: { type: "double", double: bad }, quality: "FAULT" }),
      `${TAGS} quality="FAULT" ${TS}`,
    );
  }
});

Deno.test("rowForEvent writes mode and parameter changes and ignores other events", () => {
  assertEquals(
    line({ kind: "mode_change", previous_mode: "MANUAL", new_mode: "AUTO", timestamp_ms: TS }),
    `runtime_mode_change previous_mode="MANUAL",new_mode="AUTO" ${TS}`,
  );
  assertEquals(
    line({
      kind: "parameter_change",
      parameter_name: "temp setpoint",
      old_value: "25.000000",
      new_value: "30.000000",
      timestamp_ms: TS,
    }),
    `runtime_parameter_change,parameter_name=temp\\ setpoint old_value="25.000000",new_value="30.000000" ${TS}`,
  );
  assertEquals(
    line({ kind: "bt_error", node: "n", error: "e", timestamp_ms: TS }),
    null,
  );
  assertEquals(
    line({
      kind: "quality_change",
      provider_id: "p",
      device_id: "d",
      signal_id: "s",
      old_quality: "OK",
      new_quality: "STALE",
      timestamp_ms: TS,
    }),
    null,
  );
});

Deno.test("escapeTag and escapeStringField follow the contract's escaping rules", () => {
  assertEquals(escapeTag("a,b=c d\\e"), "a\\,b\\=c\\ d\\\\e");
  assertEquals(escapeTag("x\ny\rz\tw\x01\x7fv"), "x\\ny\\rz\\tw" + "v");
  assertEquals(escapeStringField('q"b\\s\nn\x02'), 'q\\"b\\\\s\\nn');
  assertEquals(escapeStringField("a,b=c d"), "a,b=c d");
});

Deno.test("formatRow leaves out empty tag values and refuses rows without fields", () => {
  assertEquals(
    formatRow({
      measurement: "m",
      tags: [["a", ""], ["b", "1"]],
      fields: [["f", { kind: "int", value: 3 }]],
      timestampMs: 5,
    }),
    "m,b=1 f=3i 5",
  );
  assertEquals(
    formatRow({
      measurement: "m",
      tags: [],
      fields: [["f", { kind: "double", value: NaN }]],
      timestampMs: 5,
    }),
    null,
  );
  // uint must not be negative; int must fit int64 — otherwise the field is left out.
  assertEquals(
    formatRow({
      measurement: "m",
      tags: [],
      fields: [["u", { kind: "uint", value: -1 }], ["i", { kind: "int", value: 2n ** 63n }], [
        "ok",
        { kind: "bool", value: false },
      ]],
      timestampMs: 5,
    }),
    "m ok=false 5",
  );
});

Deno.test("truncateUtf8 never splits a code point", () => {
  assertEquals(truncateUtf8("abc", 128), "abc");
  assertEquals(truncateUtf8("aé", 2), "a");
  assertEquals(truncateUtf8("€€", 5), "€");
});

const HEALTH: ProviderHealthView = {
  provider_id: "sim0",
  state: "AVAILABLE",
  lifecycle_state: "RUNNING",
  last_seen_ago_ms: 80,
  uptime_seconds: 600,
  device_count: 2,
  degraded: false,
  failed_device_count: 0,
  reported: {
    state: "STATE_OK",
    message: "",
    metrics: { startup_configured_devices: "2", startup_failed_devices: "x1", other: "9" },
  },
  supervision: {
    enabled: true,
    attempt_count: 1,
    max_attempts: 3,
    crash_detected: false,
    circuit_open: false,
    next_restart_in_ms: null,
  },
  devices: [
    {
      device_id: "tempctl0",
      health: "OK",
      last_poll_ms: TS - 120,
      staleness_ms: 120,
      registered: true,
      stale_signal_count: 0,
      fault_signal_count: 1,
      type_version: "1.2",
      reported: {
        state: "STATE_OK",
        message: "",
        last_seen_epoch_ms: null,
        metrics: {
          io_ok: "17",
          io_failed: "-1",
          watchdog_armed: "true",
          missing: "yes",
          firmware_version: "fw 2",
          startup_firmware: "",
        },
      },
    },
    {
      device_id: "motor0",
      health: "UNKNOWN",
      last_poll_ms: 0,
      staleness_ms: 0,
      registered: false,
      stale_signal_count: 0,
      fault_signal_count: 0,
      reported: null,
    },
  ],
};

Deno.test("healthRows writes provider and device rows with conditional fields in contract order", () => {
  const lines = healthRows("lab1", [HEALTH], TS).map(formatRow);
  assertEquals(lines, [
    "runtime_provider_health,runtime_name=lab1,provider_id=sim0 " +
    'state="AVAILABLE",lifecycle_state="RUNNING",degraded=false,failed_device_count=0i,' +
    "device_count=2i,uptime_seconds=600i,supervision_enabled=true,crash_detected=false," +
    `circuit_open=false,attempt_count=1i,startup_configured_devices=2i ${TS}`,
    "runtime_device_health,runtime_name=lab1,provider_id=sim0,device_id=tempctl0 " +
    'health="OK",registered=true,staleness_ms=120i,stale_signal_count=0i,fault_signal_count=1i,' +
    `type_version="1.2",io_ok=17i,watchdog_armed=true,firmware_version="fw 2" ${TS}`,
    "runtime_device_health,runtime_name=lab1,provider_id=sim0,device_id=motor0 " +
    `health="UNKNOWN",registered=false ${TS}`,
  ]);
});

Deno.test("runEventRow keeps run_id a field and tags only runtime_name and category", () => {
  const row = runEventRow("lab1", {
    run_id: "lab1-01JB0Z8Q6M5S2K7T9V3W4X5Y6Z",
    sequence: 1,
    category: "run_opened",
    type: "",
    occurred_at_epoch_ms: TS,
    payload: {},
  }, "trial 3");
  assertEquals(
    formatRow(row),
    'runtime_run_event,runtime_name=lab1,category=run_opened run_id="lab1-01JB0Z8Q6M5S2K7T9V3W4X5Y6Z",' +
      `type="",sequence=1i,experiment_label="trial 3" ${TS}`,
  );
  const marker = runEventRow("lab1", {
    run_id: "r",
    sequence: 4,
    category: "annotation",
    type: "valve_open",
    occurred_at_epoch_ms: TS,
    payload: { note: 'a "b"' },
  }, null);
  assertEquals(
    formatRow(marker),
    'runtime_run_event,runtime_name=lab1,category=annotation run_id="r",type="valve_open",' +
      `sequence=4i,payload="{\\"note\\":\\"a \\\\\\"b\\\\\\"\\"}" ${TS}`,
  );
});
