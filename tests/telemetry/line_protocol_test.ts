import { deepStrictEqual as assertEquals } from "node:assert/strict";
import type { ProviderHealthView, TypedValue } from "../../src/common/mod.ts";
import {
  BACKSLASH_TEXT,
  EMPTY_ID_TEXT,
  escapeMeasurement,
  escapeStringField,
  escapeTag,
  formatRow,
  healthRows,
  MAX_STRING_FIELD_BYTES,
  MAX_TAG_VALUE_BYTES,
  MEASUREMENT_NAMES,
  rowForEvent,
  runEventRow,
  STRING_FIELD_CUT_MARKER,
  truncateUtf8,
} from "../../src/telemetry/mod.ts";
import { parseLine } from "./line_protocol_check.ts";

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

Deno.test("escapeTag and escapeStringField escape what line protocol requires, controls as anolis", () => {
  // A backslash before an ordinary character is written as is (InfluxDB reads it as itself).
  assertEquals(escapeTag("a,b=c d\\e"), "a\\,b\\=c\\ d\\e");
  assertEquals(escapeTag("x\ny\rz\tw\x01\x7fv"), "x\\ny\\rz\\tw" + "v");
  assertEquals(escapeStringField('q"b\\s\nn\x02'), 'q\\"b\\\\s\\nn');
  assertEquals(escapeStringField("a,b=c d"), "a,b=c d");
});

Deno.test("formatRow writes backslashes and special characters in every element as InfluxDB 1.x/2.x reads them back", () => {
  // [id, as written in a name or tag value (measurement: `=` not escaped), as written in a string
  // field value, what InfluxDB reads from a name or tag value]. InfluxDB's parser
  // (models/points.go) unescapes only `\,` `\=` `\ ` there and keeps any other backslash, `\\`
  // too; a backslash before the `,` or space that ends a tag escapes it (the point is refused).
  const cases: [string, string, string, string][] = [
    ["C:\\data", "C:\\data", "C:\\\\data", "C:\\data"], // lone backslash: as is
    ["C:\\", "C:%5C", "C:\\\\", "C:%5C"], // trailing: would escape the separator
    ["\\\\srv\\x", "%5C\\srv\\x", "\\\\\\\\srv\\\\x", "%5C\\srv\\x"], // `\\`: InfluxDB keeps two
    ["a\\,b", "a%5C\\,b", "a\\\\,b", "a%5C,b"], // before an escaped character
    ["a\\=b", "a%5C\\=b", "a\\\\=b", "a%5C=b"],
    ["a\\ b", "a%5C\\ b", "a\\\\ b", "a%5C b"],
    ["a,b", "a\\,b", "a,b", "a,b"],
    ["a b", "a\\ b", "a b", "a b"],
    ["a=b", "a\\=b", "a=b", "a=b"],
    ['a"b', 'a"b', 'a\\"b', 'a"b'],
    ["a\nb", "a\\nb", "a\\nb", "a\\nb"], // newline: the two characters `\n`
    ["a\\\nb", "a%5C\\nb", "a\\\\\\nb", "a%5C\\nb"],
    ["a\\\x01", "a%5C", "a\\\\", "a%5C"], // trailing once the control character is dropped
  ];
  for (const [id, name, str, read] of cases) {
    const text = formatRow({
      measurement: `m${id}`,
      tags: [[`k${id}`, "v"], ["device_id", id]],
      fields: [[`f${id}`, { kind: "int", value: 1 }], ["s", { kind: "string", value: id }]],
      timestampMs: 5,
    });
    const measurement = name.replace(/\\=/g, "="); // a measurement does not escape `=`
    assertEquals(
      text,
      `m${measurement},k${name}=v,device_id=${name} f${name}=1i,s="${str}" 5`,
      JSON.stringify(id),
    );
    const parsed = parseLine(text!);
    assertEquals(parsed.measurement, `m${read}`);
    assertEquals(parsed.tags, [[`k${read}`, "v"], ["device_id", read]]);
    assertEquals(parsed.fields, [[`f${read}`, { type: "int", value: 1n }], ["s", {
      type: "string",
      value: id.replace(/\n/g, "\\n").replaceAll("\x01", ""),
    }]]);
  }
  assertEquals(BACKSLASH_TEXT, "%5C");
});

Deno.test("formatRow writes empty ids visibly and refuses rows without fields", () => {
  assertEquals(
    formatRow({
      measurement: "m",
      tags: [["a", ""], ["b", "1"]],
      fields: [["f", { kind: "int", value: 3 }]],
      timestampMs: 5,
    }),
    "m,a=(empty),b=1 f=3i 5",
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
  discovery_warnings: [],
  held_claims: [],
  host_check: null,
  start_error: null,
  data_faults: { type_mismatch: 0, non_finite: 0, undeclared_signal: 0 },
  timestamp_skew: { samples_total: 0, last_skew_ms: null, last_at_epoch_ms: null },
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
      // Descriptor tags are HTTP only: no field below carries them.
      descriptor_tags: { module_version: "1.0.0" },
      claims: [],
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
      type_version: "",
      descriptor_tags: {},
      claims: [],
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

Deno.test("measurement_names anolis writes anolis's measurement names with the same tags and fields", () => {
  const names = MEASUREMENT_NAMES.anolis;
  const one = (e: Parameters<typeof rowForEvent>[1]) => formatRow(rowForEvent("lab1", e, names)!);
  assertEquals(
    one({ ...sig, value: { type: "double", double: 24.5 } }),
    `anolis_signal,runtime_name=lab1,provider_id=sim0,device_id=tempctl0,signal_id=tc1_temp value_double=24.5,quality="OK" ${TS}`,
  );
  assertEquals(
    one({ kind: "mode_change", previous_mode: "MANUAL", new_mode: "AUTO", timestamp_ms: TS }),
    `mode_change previous_mode="MANUAL",new_mode="AUTO" ${TS}`,
  );
  assertEquals(
    one({
      kind: "parameter_change",
      parameter_name: "temp_setpoint",
      old_value: "25.000000",
      new_value: "30.000000",
      timestamp_ms: TS,
    }),
    `parameter_change,parameter_name=temp_setpoint old_value="25.000000",new_value="30.000000" ${TS}`,
  );
  const runtime = healthRows("lab1", [HEALTH], TS).map(formatRow);
  const anolis = healthRows("lab1", [HEALTH], TS, names).map(formatRow);
  assertEquals(
    anolis,
    runtime.map((l) => l!.replace(/^runtime_(provider|device)_health,/, "anolis_$1_health,")),
  );
  assertEquals(anolis.map((l) => l!.split(",")[0]), [
    "anolis_provider_health",
    "anolis_device_health",
    "anolis_device_health",
  ]);
  // anolis writes no run events: the measurement keeps our name.
  const run = runEventRow(
    "lab1",
    {
      run_id: "lab1-01",
      sequence: 1,
      category: "run_opened",
      type: "",
      occurred_at_epoch_ms: TS,
      payload: {},
    },
    null,
    names,
  );
  assertEquals(run.measurement, "runtime_run_event");
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

// ---- every line is valid line protocol; ids never escape to nothing ---------------------------

Deno.test("formatRow writes an id made only of control characters visibly, ordinary ids unchanged", () => {
  const ctl = line({ ...sig, device_id: "\x01\x02", signal_id: "\x7f", value: null! });
  assertEquals(
    ctl,
    `runtime_signal,runtime_name=lab1,provider_id=sim0,device_id=%01%02,signal_id=%7F quality="OK" ${TS}`,
  );
  parseLine(ctl as string);
  // Mixed ids keep anolis's rule (control characters dropped, \n \r \t visible).
  assertEquals(
    line({ ...sig, device_id: "dev\x01", signal_id: "a\nb", value: null! }),
    `runtime_signal,runtime_name=lab1,provider_id=sim0,device_id=dev,signal_id=a\\nb quality="OK" ${TS}`,
  );
  // Measurement and field keys get the same treatment; an empty id is written as EMPTY_ID_TEXT.
  assertEquals(
    formatRow({
      measurement: "\x1f",
      tags: [["\x00", "\t"], ["k", ""]],
      fields: [["\x05", { kind: "bool", value: true }]],
      timestampMs: 1,
    }),
    `%1F,%00=\\t,k=${EMPTY_ID_TEXT} %05=true 1`,
  );
  // Names never start with what line protocol reserves (`_`) or reads as a comment (`#`).
  assertEquals(
    formatRow({
      measurement: "#m",
      tags: [["_k", "_v"]],
      fields: [["_f", { kind: "bool", value: true }]],
      timestampMs: 1,
    }),
    "%23m,%5Fk=_v %5Ff=true 1",
  );
  assertEquals(escapeMeasurement("_m"), "%5Fm");
  // Ordinary ids are byte-identical to what the writer always wrote (dashboards depend on them).
  assertEquals(
    line({ ...sig, value: { type: "double", double: 1 } }),
    `${TAGS} value_double=1,quality="OK" ${TS}`,
  );
  assertEquals(escapeTag("tempctl0"), "tempctl0");
  assertEquals(escapeTag("a,b=c d\\e%01"), "a\\,b\\=c\\ d\\e%01");
});

Deno.test("formatRow drops the C1 controls (U+0080-U+009F, NEL U+0085) from names, tags and field keys as it drops C0", () => {
  // NEL ends a line in some viewers; the rest of the product counts C1 as control characters
  // (hasControlCharacter, escapeControl), so line protocol applies the C0 rule to them: dropped.
  const text = formatRow({
    measurement: "m\x85x",
    tags: [["k\x85", "dev\x85ice"], ["c1", "\x80a\x9f"]],
    fields: [["f\x85", { kind: "string", value: "v\x85w" }], ["ok", { kind: "bool", value: true }]],
    timestampMs: 1,
  });
  assertEquals(text, `mx,k=device,c1=a f="vw",ok=true 1`);
  parseLine(text as string);
  // Either side of the DEL..C1 range (0x7E, U+00A0, no-break space) is ordinary text, kept.
  assertEquals(escapeTag("\x7e\xa0"), "\x7e\xa0");
  assertEquals(escapeTag("a\x7f\x80\x9fb"), "ab");
  // An id made only of C1 controls is written visibly, as one made only of C0 controls.
  assertEquals(
    line({ ...sig, device_id: "\x85", signal_id: "\x80\x9f", value: null! }),
    `runtime_signal,runtime_name=lab1,provider_id=sim0,device_id=%85,signal_id=%80%9F quality="OK" ${TS}`,
  );
  assertEquals(escapeMeasurement("\x85"), "%85");
  assertEquals(escapeStringField("a\x85\u0080b"), "ab");
});

/** Deterministic pseudo-random numbers (mulberry32). */
function prng(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SPECIALS = [",", "=", " ", "\\", '"', "#", "_", "a", "Z", "0", "é", "🍭", "%", "'", "\\,"];
const CONTROLS = ["\x00", "\x01", "\n", "\r", "\t", "\x1b", "\x7f", "\x80", "\x85", "\x9f"];
const ADVERSARIAL = [
  "",
  "\x01",
  "\x01\x02\x03",
  "\n",
  "\r\n",
  ",",
  "=",
  " ",
  "\\",
  "a\\",
  "\\\\",
  "a\\,b",
  '"',
  '\\"',
  "#comment",
  "_internal",
  "🍭",
  "\ud800",
  "a=b,c d",
  "x\x01y",
];

function randomIds(count: number, alphabet: readonly string[], seed: number): string[] {
  const rnd = prng(seed);
  return Array.from({ length: count }, () => {
    let id = "";
    const n = Math.floor(rnd() * 8);
    for (let i = 0; i < n; i++) id += alphabet[Math.floor(rnd() * alphabet.length)];
    return id;
  });
}

/**
 * What InfluxDB stores for a name or tag value without control characters: the id, except a
 * backslash line protocol cannot carry there (before a backslash, `,` `=` space, or at the end),
 * which is written and stored as BACKSLASH_TEXT.
 */
const stored = (id: string) => id.replace(/\\(?=[\\,= ]|$)/g, BACKSLASH_TEXT);

/** What a database reads back for an id without control characters: the id itself (`stored`). */
function checkRoundTrip(id: string): void {
  const text = formatRow({
    measurement: id === "" ? "m" : `m${id}`,
    tags: [["runtime_name", "lab1"], ["device_id", id], [`k${id}`, "v"]],
    fields: [["value_string", { kind: "string", value: id }], [`f${id}`, {
      kind: "int",
      value: 1,
    }]],
    timestampMs: TS,
  });
  // Parse what goes on the wire: a lone surrogate is not UTF-8, TextEncoder sends U+FFFD.
  const wire = (t: string) => new TextDecoder().decode(new TextEncoder().encode(t));
  const parsed = parseLine(wire(text as string));
  const sent = wire(id);
  const tagText = sent === "" ? EMPTY_ID_TEXT : stored(sent);
  assertEquals(parsed.measurement, stored(`m${sent}`));
  assertEquals(parsed.tags, [["runtime_name", "lab1"], ["device_id", tagText], [
    stored(`k${sent}`),
    "v",
  ]]);
  assertEquals(parsed.fields, [
    ["value_string", { type: "string", value: sent }],
    [stored(`f${sent}`), { type: "int", value: 1n }],
  ]);
  assertEquals(parsed.timestamp, BigInt(TS));
}

Deno.test("formatRow lines are valid line protocol and read back as the ids, for any id", () => {
  const plain = [
    ...ADVERSARIAL.filter((id) => !CONTROLS.some((c) => id.includes(c))),
    ...randomIds(400, SPECIALS, 18),
  ];
  for (const id of plain) checkRoundTrip(id);
  // With control characters: always valid, never an empty name or tag value.
  for (const id of [...ADVERSARIAL, ...randomIds(400, [...SPECIALS, ...CONTROLS], 4)]) {
    for (const measurement of [id, "runtime_signal"]) {
      const text = formatRow({
        measurement,
        tags: [["device_id", id], ["signal_id", `${id}\x01`], [id, "v"]],
        fields: [["quality", { kind: "string", value: id }], [id, { kind: "bool", value: true }]],
        timestampMs: TS,
      });
      const parsed = parseLine(text as string);
      assertEquals(parsed.tags.length, 3);
      assertEquals(parsed.fields.length, 2);
      assertEquals(parsed.fields[0]![1], {
        type: "string",
        value: escapeStringField(id).replace(/\\(["\\])/g, "$1"),
      });
    }
  }
});

Deno.test("rowForEvent writes 64-bit integers exactly, as bigint or number", () => {
  const cases: [TypedValue, string][] = [
    [
      { type: "int64", int64: -(2n ** 63n) } as unknown as TypedValue,
      "value_int=-9223372036854775808i",
    ],
    [
      { type: "int64", int64: 2n ** 63n - 1n } as unknown as TypedValue,
      "value_int=9223372036854775807i",
    ],
    [
      { type: "int64", int64: 2n ** 53n + 1n } as unknown as TypedValue,
      "value_int=9007199254740993i",
    ],
    [
      { type: "uint64", uint64: 2n ** 64n - 1n } as unknown as TypedValue,
      "value_uint=18446744073709551615u",
    ],
    [{ type: "int64", int64: Number.MIN_SAFE_INTEGER }, "value_int=-9007199254740991i"],
    [{ type: "uint64", uint64: Number.MAX_SAFE_INTEGER }, "value_uint=9007199254740991u"],
    [{ type: "uint64", uint64: 0 }, "value_uint=0u"],
  ];
  for (const [value, field] of cases) {
    const row = rowForEvent("lab1", { ...sig, value });
    assertEquals(row?.omission, undefined);
    const text = formatRow(row!);
    assertEquals(text, `${TAGS} ${field},quality="OK" ${TS}`);
    parseLine(text!);
  }
});

Deno.test("rowForEvent writes a signal without a value as a row with its quality only", () => {
  // The producer side types this as `value: TypedValue | null` (a declared signal without a value).
  const row = rowForEvent("lab1", {
    ...sig,
    value: null as unknown as TypedValue,
    quality: "UNAVAILABLE",
  });
  assertEquals(row?.omission, undefined);
  assertEquals(formatRow(row!), `${TAGS} quality="UNAVAILABLE" ${TS}`);
});

Deno.test("rowForEvent leaves out and reports values line protocol cannot carry", () => {
  const cases: [TypedValue, string][] = [
    [{ type: "double", double: NaN }, "non_finite"],
    [{ type: "double", double: Infinity }, "non_finite"],
    [{ type: "double", double: -Infinity }, "non_finite"],
    [{ type: "int64", int64: 2 ** 63 }, "out_of_range"],
    [{ type: "int64", int64: 1.5 }, "out_of_range"],
    [{ type: "uint64", uint64: -1 }, "out_of_range"],
    [{ type: "uint64", uint64: 2n ** 64n } as unknown as TypedValue, "out_of_range"],
  ];
  for (const [value, reason] of cases) {
    const row = rowForEvent("lab1", { ...sig, value, quality: "FAULT" });
    assertEquals(row?.omission, { kind: "value", reason });
    // Never a row with zero fields: the quality stays.
    assertEquals(formatRow(row!), `${TAGS} quality="FAULT" ${TS}`);
  }
});

Deno.test("formatRow refuses a timestamp line protocol cannot carry", () => {
  const row = (timestampMs: number) => ({
    measurement: "m",
    tags: [],
    fields: [["f", { kind: "bool", value: true }] as const],
    timestampMs,
  });
  for (const bad of [NaN, Infinity, -Infinity, 9_223_372_036_855, -9_223_372_036_855, 1e21]) {
    assertEquals(formatRow(row(bad)), null, String(bad));
  }
  assertEquals(formatRow(row(9_223_372_036_854)), "m f=true 9223372036854");
  assertEquals(formatRow(row(-1)), "m f=true -1");
});

Deno.test("runEventRow writes the row whatever the payload, and reports what it could not write", () => {
  const event = {
    run_id: "r",
    sequence: 4,
    category: "annotation",
    type: "note",
    occurred_at_epoch_ms: TS,
  };
  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  for (
    const [payload, pattern] of [
      [{ big: 1n }, /BigInt/],
      [cyclic, /circular/i],
      [{
        toJSON: () => {
          throw new Error("no JSON here");
        },
      }, /no JSON here/],
    ] as const
  ) {
    const row = runEventRow("lab1", { ...event, payload }, null);
    assertEquals(row.omission?.kind, "payload");
    assertEquals(pattern.test(row.omission?.kind === "payload" ? row.omission.reason : ""), true);
    const parsed = parseLine(formatRow(row)!);
    assertEquals(parsed.fields.map(([k]) => k), ["run_id", "type", "sequence", "payload_error"]);
  }
  // A deep payload serialises; one longer than 4096 bytes is truncated and says so.
  let deep: Record<string, unknown> = { leaf: true };
  for (let i = 0; i < 10000; i++) deep = { a: deep };
  const row = runEventRow("lab1", { ...event, payload: deep }, null);
  assertEquals(row.omission, undefined);
  const parsed = parseLine(formatRow(row)!);
  assertEquals(parsed.fields.map(([k]) => k), [
    "run_id",
    "type",
    "sequence",
    "payload",
    "payload_truncated",
  ]);
  const payload = parsed.fields[3]![1];
  assertEquals(payload.type === "string" && payload.value.length, 4096);
  // A payload that fits is not marked.
  assertEquals(
    parseLine(formatRow(runEventRow("lab1", { ...event, payload: { a: 1 } }, null))!).fields.map((
      [k],
    ) => k),
    ["run_id", "type", "sequence", "payload"],
  );
});

Deno.test("rowForEvent cuts a string value past MAX_STRING_FIELD_BYTES on a code point boundary, with a marker", () => {
  const utf8 = (t: string) => new TextEncoder().encode(t).length;
  const stringValue = (text: string) => {
    const l = line({ ...sig, value: { type: "string", string: text } });
    if (l === null) throw new Error("no line");
    const f = parseLine(l).fields.find(([k]) => k === "value_string")?.[1];
    if (f?.type !== "string") throw new Error(`no value_string in ${l.slice(0, 120)}`);
    return f.value;
  };
  const LIMIT = 64 * 1024; // InfluxDB's limit on a string field value
  // Exactly at the limit: written whole.
  const atLimit = "a".repeat(LIMIT);
  assertEquals(stringValue(atLimit), atLimit);
  // One byte past it: cut, the marker last, the stored value exactly at the limit.
  const past = stringValue("a".repeat(LIMIT + 1));
  assertEquals(utf8(past), LIMIT);
  assertEquals(past.endsWith(STRING_FIELD_CUT_MARKER), true);
  // 3-byte characters: the cut never splits one (no U+FFFD), and stays within the limit.
  const euros = stringValue("\u20ac".repeat(30_000));
  const kept = euros.slice(0, -STRING_FIELD_CUT_MARKER.length);
  assertEquals(/^\u20ac+$/.test(kept), true);
  assertEquals(utf8(euros) <= LIMIT, true);
  assertEquals(utf8(euros) > LIMIT - 3, true);
  // Quotes, backslashes and newlines count as the database stores them (a newline as `\n`).
  const mixed = stringValue('"\\\n'.repeat(30_000));
  assertEquals(utf8(mixed), LIMIT);
  assertEquals(mixed.startsWith('"\\\\n"'), true);
  assertEquals(mixed.endsWith(STRING_FIELD_CUT_MARKER), true);
  assertEquals(MAX_STRING_FIELD_BYTES, LIMIT);
});

Deno.test("formatRow cuts a tag value past MAX_TAG_VALUE_BYTES, the same id always to the same tag, two ids to two", () => {
  const utf8 = (t: string) => new TextEncoder().encode(t).length;
  const LIMIT = 8 * 1024; // a tag value as written; four of them stay within a 65,535-byte key
  const deviceTag = (deviceId: string) => {
    const l = line({ ...sig, device_id: deviceId, value: { type: "double", double: 1 } });
    if (l === null) throw new Error("no line");
    const tag = parseLine(l).tags.find(([k]) => k === "device_id")?.[1];
    if (tag === undefined) throw new Error(`no device_id in ${l.slice(0, 120)}`);
    return { l, tag, written: l.slice(l.indexOf(",device_id=") + 11, l.indexOf(",signal_id=")) };
  };
  const CUT = /\.\.\.\[cut:[0-9a-f]{8}\]$/;
  // Exactly at the limit: written whole.
  const atLimit = "d".repeat(LIMIT);
  assertEquals(deviceTag(atLimit).tag, atLimit);
  // One byte past it: cut, the marker (with a hash of the whole id) last, at most the limit.
  const past = deviceTag("d".repeat(LIMIT + 1));
  assertEquals(utf8(past.written) <= LIMIT, true);
  assertEquals(utf8(past.written) > LIMIT - 20, true);
  assertEquals(CUT.test(past.tag), true);
  assertEquals(past.tag.startsWith("d".repeat(LIMIT - 20)), true);
  // Point identity: the same long id always gives the same tag; two ids that differ only past
  // the cut give two (their series are not merged).
  const a = "sensor/".repeat(20_000);
  assertEquals(deviceTag(a).l, deviceTag(a).l);
  assertEquals(deviceTag(a + "1").tag === deviceTag(a + "2").tag, false);
  // Escapes count as written and are never split: a cut value stays valid line protocol.
  for (
    const odd of [
      ",".repeat(LIMIT),
      "a" + ",".repeat(LIMIT),
      "\\".repeat(LIMIT),
      "\n".repeat(LIMIT),
    ]
  ) {
    const t = deviceTag(odd);
    assertEquals(utf8(t.written) <= LIMIT, true);
    assertEquals(CUT.test(t.tag), true);
    // Read back, the kept part is the id's start (no half escape left at the cut).
    const kept = t.tag.replace(CUT, "");
    assertEquals(stored(odd.replace(/\n/g, "\\n")).startsWith(kept), true);
  }
  // 3-byte characters: never split.
  const euros = deviceTag("\u20ac".repeat(LIMIT)).tag;
  assertEquals(/^\u20ac+\.\.\.\[cut:/.test(euros), true);
  // Every tag of a row long: its series key (measurement and tags) within InfluxDB's 65,535 bytes.
  const long = "x".repeat(100_000);
  const row = line({
    ...sig,
    provider_id: long,
    device_id: long,
    signal_id: long,
    value: { type: "double", double: 1 },
  });
  if (row === null) throw new Error("no line");
  assertEquals(utf8(row.slice(0, row.indexOf(" "))) <= 65_535, true);
  assertEquals(MAX_TAG_VALUE_BYTES, LIMIT);
});
