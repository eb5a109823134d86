/**
 * What the operator reads for each semantic rule: the exact bound of every limited key (one past
 * it is refused, naming the range and the value given), each cross-field rule naming the fix, and
 * one diagnostic per problem at the key that has it. rules_test.ts pins severities, paths and
 * lines; this pins the content, which the semantic layer owns (the schema layer's own message is
 * shown only where the semantic layer says nothing).
 */
import assert from "node:assert/strict";
import { formatDiagnostic, loadConfig, type LoadConfigResult } from "../../src/config/mod.ts";
import { load, type LoadOverrides, PROV } from "./_helpers.ts";

interface Case {
  name: string;
  yaml: string;
  o?: LoadOverrides;
  /** Every diagnostic, as `severity path` and a text its message contains. */
  expect: Array<[string, string]>;
}

/** Automation enabled without an AUTO -> FAULT hook: AUTO will be refused. */
const NO_AUTO_HOOK: [string, string] = [
  "warning automation",
  "is enabled but no mode_transition_hooks entry covers AUTO -> FAULT",
];

/** runs.max_total_bytes below one run's event file at its bound with its safety reserve. */
const RUN_OVER_TOTAL: [string, string] = [
  "warning runs.max_total_bytes",
  "is below what one run's event file may reach",
];

/** history: a ring as long as incident_before_s, the window read at its trigger. */
const SHORT_RING =
  "history:\n  memory_seconds: 10\n  incident_before_s: 10\n  incident_after_s: 0\n";

function assertDiagnostics(result: LoadConfigResult, expect: Array<[string, string]>): void {
  const got = result.diagnostics.map((d) => ({
    at: `${d.severity} ${d.path}`,
    message: d.message,
  }));
  const shown = got.map((d) => `${d.at}: ${d.message}`).join("\n");
  assert.deepEqual(got.map((d) => d.at).sort(), expect.map(([at]) => at).sort(), shown);
  const left = [...got];
  for (const [at, text] of expect) {
    const i = left.findIndex((d) => d.at === at && d.message.includes(text));
    assert.ok(i >= 0, `no '${at}' saying '${text}' in:\n${shown}`);
    left.splice(i, 1);
  }
  const hasError = expect.some(([at]) => at.startsWith("error"));
  assert.equal(result.config === null, hasError, "config is null exactly when there are errors");
}

/** One past each bound of `key` under `section` is refused with the range and the value. */
function range(section: string, key: string, min: number, max: number): Case[] {
  const path = `${section}.${key}`;
  const [head, ...rest] = section.split(".");
  const yaml = (v: number) =>
    `${PROV}\n${head}:\n${rest.map((s, i) => `${"  ".repeat(i + 1)}${s}:\n`).join("")}${
      "  ".repeat(rest.length + 1)
    }${key}: ${v}\n`;
  return [
    {
      name: `${path} ${min - 1} is below ${min}`,
      yaml: yaml(min - 1),
      expect: [[`error ${path}`, `must be between ${min} and ${max}, got ${min - 1}`]],
    },
    {
      name: `${path} ${max + 1} is above ${max}`,
      yaml: yaml(max + 1),
      expect: [[`error ${path}`, `must be between ${min} and ${max}, got ${max + 1}`]],
    },
    { name: `${path} ${min} is valid`, yaml: yaml(min), expect: [] },
    { name: `${path} ${max} is valid`, yaml: yaml(max), expect: [] },
  ];
}

/** One below the lower bound of `key` is refused naming the bound and the value. */
function atLeast(yaml: (v: number) => string, path: string, min: number): Case[] {
  return [
    {
      name: `${path} ${min - 1} is below ${min}`,
      yaml: yaml(min - 1),
      expect: [[`error ${path}`, `must be >= ${min}, got ${min - 1}`]],
    },
    { name: `${path} ${min} is valid`, yaml: yaml(min), expect: [] },
  ];
}

const RESTART = (extra: string) => `
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: true
      max_attempts: 1
      backoff_ms: [0]
      timeout_ms: 1000
${extra}`;

const CASES: Case[] = [
  // --- bounds --------------------------------------------------------------------------------
  ...range("runtime", "shutdown_timeout_ms", 500, 30000),
  ...range("runtime", "startup_timeout_ms", 5000, 300000),
  ...range("http", "port", 1, 65535),
  ...range("http", "max_connections", 8, 100000).map((c) => ({
    ...c,
    yaml: c.yaml.replace("http:\n", "http:\n  thread_pool_size: 1\n"),
  })),
  ...range("http", "request_header_timeout_ms", 1000, 120000),
  ...range("http", "keep_alive_timeout_ms", 1000, 600000),
  ...atLeast((v) => `${PROV}\nhttp:\n  thread_pool_size: ${v}\n`, "http.thread_pool_size", 1),
  ...atLeast((v) => `${PROV}\npolling:\n  interval_ms: ${v}\n`, "polling.interval_ms", 100),
  ...atLeast(
    (v) => `providers: [{id: p0, command: prov, timeout_ms: ${v}}]`,
    "providers[0].timeout_ms",
    100,
  ),
  ...atLeast(
    (v) => `providers: [{id: p0, command: prov, hello_timeout_ms: ${v}}]`,
    "providers[0].hello_timeout_ms",
    100,
  ),
  ...atLeast(
    (v) => `providers: [{id: p0, command: prov, ready_timeout_ms: ${v}}]`,
    "providers[0].ready_timeout_ms",
    1000,
  ),
  ...atLeast(
    (v) => RESTART(`      success_reset_ms: ${v}\n`),
    "providers[0].restart_policy.success_reset_ms",
    0,
  ),
  {
    name: "an int64 parameter's default beyond \u00b1(2^53-1) is named as out of that range",
    yaml:
      `${PROV}\nautomation:\n  parameters:\n    - {name: n, type: int64, default: 9007199254740992}\n`,
    expect: [[
      "error automation.parameters[0].default",
      "must be an integer within \u00b1(2^53-1) for an int64 parameter, got",
    ]],
  },
  {
    name: "restart_policy bounds of max_attempts, backoff_ms entries and timeout_ms",
    yaml: `
providers:
  - id: p0
    command: prov
    restart_policy: {enabled: true, max_attempts: 0, backoff_ms: [-1], timeout_ms: 999}
`,
    expect: [
      ["error providers[0].restart_policy.max_attempts", "must be >= 1, got 0"],
      ["error providers[0].restart_policy.backoff_ms[0]", "must be >= 0, got -1"],
      ["error providers[0].restart_policy.timeout_ms", "must be >= 1000, got 999"],
    ],
  },
  ...atLeast(
    (v) => `${PROV}\ntelemetry:\n  health_interval_ms: ${v}\n`,
    "telemetry.health_interval_ms",
    0,
  ),
  ...(["batch_size", "queue_size"] as const).flatMap((key) =>
    atLeast(
      (v) => `${PROV}\ntelemetry:\n  influxdb:\n    ${key}: ${v}\n`,
      `telemetry.influxdb.${key}`,
      1,
    )
  ),
  // The writer flushes no more often than every 10 ms: a shorter cadence is refused, not raised
  // silently.
  ...atLeast(
    (v) => `${PROV}\ntelemetry:\n  influxdb:\n    flush_interval_ms: ${v}\n`,
    "telemetry.influxdb.flush_interval_ms",
    10,
  ),
  ...atLeast(
    (v) => `${PROV}\ntelemetry:\n  influxdb:\n    max_retry_buffer_size: ${v}\n`,
    "telemetry.influxdb.max_retry_buffer_size",
    0,
  ),
  ...atLeast(
    (v) => `${PROV}\ntelemetry:\n  influx_bucket: b\n  batch_size: ${v}\n`,
    "telemetry.batch_size",
    1,
  ).map((c) => ({
    ...c,
    expect: [
      ...c.expect,
      ["warning telemetry.batch_size", "use telemetry.influxdb.batch_size"] as [string, string],
      ["warning telemetry.influx_bucket", "use telemetry.influxdb.bucket"] as [string, string],
    ],
  })),
  ...range("automation", "tick_rate_hz", 1, 1000).map((c) => ({
    ...c,
    yaml: c.yaml.replace(
      "automation:\n",
      "automation:\n  enabled: true\n  behavior_tree: bt.xml\n",
    ),
    expect: [...c.expect, NO_AUTO_HOOK],
  })),
  ...range("audit", "max_file_bytes", 4096, 1073741824),
  ...range("audit", "max_files", 2, 1000),
  // A valid bound whose one run (max_run_bytes + its safety reserve) outgrows max_total_bytes
  // (default 4 GiB) or falls below max_run_bytes (default 256 MiB) is warned about.
  ...range("runs", "max_run_bytes", 65536, 1099511627776).map((c) =>
    c.name.endsWith("1099511627776 is valid") ? { ...c, expect: [RUN_OVER_TOTAL] } : c
  ),
  ...range("runs", "max_runs", 1, 1000000),
  ...range("runs", "max_total_bytes", 65536, 1099511627776).map((c) =>
    c.name.endsWith(" 65536 is valid") ? { ...c, expect: [RUN_OVER_TOTAL] } : c
  ),
  {
    name: "runs.max_total_bytes below one run's event file with its safety reserve is warned about",
    yaml: `${PROV}
runs:
  max_run_bytes: 1048576
  max_total_bytes: 2097151
`,
    expect: [[
      "warning runs.max_total_bytes",
      "2097151 is below what one run's event file may reach (runs.max_run_bytes 1048576 + " +
      "1048576 bytes of safety reserve): each close removes every older closed run",
    ]],
  },
  {
    name: "runs.max_total_bytes holding one run's event file with its safety reserve is valid",
    yaml: `${PROV}
runs:
  max_run_bytes: 1048576
  max_total_bytes: 2097152
`,
    expect: [],
  },
  ...(["warn_after_ms", "stale_after_ms"] as const).flatMap((key) =>
    atLeast(
      (v) => `${PROV}\nhealth:\n  staleness:\n    ${key}: ${v}\n`,
      `health.staleness.${key}`,
      0,
    )
  ),

  {
    name: "telemetry.measurement_names names both settings and the value given",
    yaml: `${PROV}\ntelemetry:\n  measurement_names: Anolis\n`,
    expect: [[
      "error telemetry.measurement_names",
      'must be one of runtime, anolis, got "Anolis"',
    ]],
  },

  // --- cross-field rules -------------------------------------------------------------------
  {
    name: "runtime.mode names the way to change modes",
    yaml: `${PROV}\nruntime:\n  mode: AUTO\n`,
    expect: [["error runtime.mode", "always starts in IDLE (use POST /v0/mode)"]],
  },
  {
    name: "`*` with cors_allow_credentials names the fix",
    yaml:
      `${PROV}\nhttp:\n  cors_allow_credentials: true\n  cors_allowed_origins: [http://x.example, "*"]\n`,
    expect: [[
      "error http.cors_allowed_origins",
      "`*` is not allowed with cors_allow_credentials: true (list the origins explicitly)",
    ]],
  },
  {
    name: "an empty http.bind is one error",
    yaml: `${PROV}\nhttp:\n  bind: ""\n`,
    expect: [["error http.bind", "must not be empty"]],
  },
  {
    name: "max_connections equal to thread_pool_size is warned about",
    yaml: `${PROV}\nhttp:\n  max_connections: 40\n  thread_pool_size: 40\n`,
    expect: [[
      "warning http.max_connections",
      "40 leaves 20 connection(s) for requests once event streams hold theirs (20, at most half), " +
      "not above thread_pool_size (40): when every one has a request in flight, a new one " +
      "(an e-stop too) is refused",
    ]],
  },
  {
    name:
      "max_connections above thread_pool_size by less than the event streams take is warned about",
    yaml: `${PROV}\nhttp:\n  max_connections: 72\n  thread_pool_size: 40\n`,
    expect: [[
      "warning http.max_connections",
      "72 leaves 40 connection(s) for requests once event streams hold theirs (32, at most half), " +
      "not above thread_pool_size (40): when every one has a request in flight, a new one " +
      "(an e-stop too) is refused",
    ]],
  },
  {
    name: "max_connections leaving thread_pool_size + 1 beside the event streams is valid",
    yaml: `${PROV}\nhttp:\n  max_connections: 73\n  thread_pool_size: 40\n`,
    expect: [],
  },
  {
    name: "max_connections is not compared when http is disabled",
    yaml: `${PROV}\nhttp:\n  enabled: false\n  max_connections: 8\n  thread_pool_size: 40\n`,
    expect: [],
  },
  {
    name: "auth without a token says where a token may come from (check)",
    yaml: `${PROV}\nhttp:\n  auth_enabled: true\n`,
    expect: [["warning http.auth_enabled", "the token may come from RUNTIME_API_TOKEN"]],
  },
  {
    name: "auth without a token names both places to set one (start)",
    yaml: `${PROV}\nhttp:\n  auth_enabled: true\n`,
    o: { mode: "start" },
    expect: [["error http.auth_enabled", "set RUNTIME_API_TOKEN or http.auth_token"]],
  },
  {
    name: "auth without a token names both places to set one (check --strict)",
    yaml: `${PROV}\nhttp:\n  auth_enabled: true\n`,
    o: { strict: true },
    expect: [["error http.auth_enabled", "set RUNTIME_API_TOKEN or http.auth_token"]],
  },
  {
    name: "a non-loopback bind without auth names the risk and the fixes",
    yaml: `${PROV}\nhttp:\n  bind: 0.0.0.0\n`,
    expect: [[
      "error http.bind",
      '"0.0.0.0" is not a loopback address and auth_enabled is false: anyone on the network ' +
      "could operate the machine (enable auth, or set allow_insecure_bind: true)",
    ]],
  },
  {
    name: "auth on a non-loopback bind without TLS names the fixes",
    yaml: `${PROV}\nhttp:\n  bind: 0.0.0.0\n  auth_enabled: true\n  auth_token: t\n`,
    expect: [[
      "warning http.bind",
      '"0.0.0.0" is not a loopback address and TLS is off: the bearer token travels in ' +
      "plaintext (set tls_cert_path and tls_key_path, or terminate TLS in a reverse proxy)",
    ]],
  },
  ...(["tls_cert_path", "tls_key_path"] as const).map((key): Case => {
    const other = key === "tls_cert_path" ? "tls_key_path" : "tls_cert_path";
    return {
      name: `only ${key} on a non-loopback bind is half a TLS setup: TLS is off`,
      yaml: `${PROV}\nhttp:\n  bind: 0.0.0.0\n  auth_enabled: true\n  auth_token: t\n` +
        `  ${key}: tls/${key === "tls_cert_path" ? "cert" : "key"}.pem\n`,
      expect: [
        [`error http.${key}`, `is set but ${other} is not: TLS needs both or neither`],
        ["warning http.bind", "TLS is off"],
      ],
    };
  }),
  {
    name: "cors_allowed_origins empty string names the way to grant nothing",
    yaml: `${PROV}\nhttp:\n  cors_allowed_origins: ""\n`,
    expect: [[
      "error http.cors_allowed_origins",
      "must not be empty (leave the key out, or write [], for no CORS grant)",
    ]],
  },
  {
    name: "cors_allowed_origins empty list is valid: no CORS grant, as when the key is absent",
    yaml: `${PROV}\nhttp:\n  cors_allowed_origins: []\n`,
    expect: [],
  },
  {
    name: "cors_allowed_origins of the wrong kind",
    yaml: `${PROV}\nhttp:\n  cors_allowed_origins: 5\n`,
    expect: [["error http.cors_allowed_origins", "must be a string or a sequence of strings"]],
  },
  {
    name: "cors_allowed_origins entries that are not text, or empty",
    yaml: `${PROV}\nhttp:\n  cors_allowed_origins: [5, "", http://ok.example]\n`,
    expect: [
      ["error http.cors_allowed_origins[0]", "must be a string"],
      ["error http.cors_allowed_origins[1]", "must not be empty"],
    ],
  },
  {
    // A browser's Origin is `scheme://host[:port]` in lower case, without a path and without the
    // scheme's default port: an entry written otherwise never matches, and the page is told to
    // list in http.cors_allowed_origins the origin that is listed there.
    name: "cors_allowed_origins entries no browser sends as its Origin name the form that matches",
    yaml: `${PROV}\nhttp:\n  cors_allowed_origins:\n` +
      "    - http://localhost:3000/\n    - http://Console.Lab:8080\n" +
      "    - https://panel.lab:443\n    - localhost:3000\n    - http://localhost:*/\n" +
      "    - http://localhost:3001\n    - http://*.lab.local\n    - http://localhost:*\n" +
      '    - "null"\n    - "*"\n',
    expect: [
      [
        "warning http.cors_allowed_origins[0]",
        '"http://localhost:3000/" never matches: a browser sends its Origin as ' +
        '"http://localhost:3000" (scheme://host[:port], lower case, no path, no default port)',
      ],
      [
        "warning http.cors_allowed_origins[1]",
        '"http://Console.Lab:8080" never matches: a browser sends its Origin as ' +
        '"http://console.lab:8080" (scheme://host[:port], lower case, no path, no default port)',
      ],
      [
        "warning http.cors_allowed_origins[2]",
        '"https://panel.lab:443" never matches: a browser sends its Origin as "https://panel.lab"',
      ],
      [
        "warning http.cors_allowed_origins[3]",
        '"localhost:3000" never matches: a browser sends its Origin as scheme://host[:port]',
      ],
      [
        "warning http.cors_allowed_origins[4]",
        '"http://localhost:*/" never matches: a browser sends its Origin as scheme://host[:port]',
      ],
    ],
  },
  {
    name: "allowed_hosts as one string must be a host name",
    yaml: `${PROV}\nhttp:\n  allowed_hosts: "*.lab"\n`,
    expect: [[
      "error http.allowed_hosts",
      '"*.lab" is not a host name: write `name` or `name:port`',
    ]],
  },
  {
    name: "allowed_hosts of the wrong kind",
    yaml: `${PROV}\nhttp:\n  allowed_hosts: 5\n`,
    expect: [["error http.allowed_hosts", "must be a sequence, got 5"]],
  },
  {
    name: "allowed_hosts entries that are not host[:port]",
    yaml: `${PROV}\nhttp:\n  allowed_hosts: ["*.lab", "http://rig.local", 5, "rig.local/x", ` +
      `"rig.local:123456", "rig.local:8o", "[fe80::zz]", "-rig", "rig.local.", "[::1]x"]\n`,
    expect: [
      ...[0, 1, 3, 4, 5, 6, 7, 8, 9].map((i): [string, string] => [
        `error http.allowed_hosts[${i}]`,
        "is not a host name: write `name` or `name:port` (no scheme, path or wildcard)",
      ]),
      ["error http.allowed_hosts[2]", "must be a string"],
    ],
  },

  // --- providers -----------------------------------------------------------------------------
  {
    name: "no providers key asks for one",
    yaml: "polling: {interval_ms: 500}\n",
    expect: [["error providers", "is required: declare at least one provider"]],
  },
  {
    name: "an empty providers list asks for one",
    yaml: "providers: []\n",
    expect: [["error providers", "must have at least one provider"]],
  },
  {
    name: "a provider entry that is not a mapping",
    yaml: "providers: [5, {id: p0, command: prov}]\n",
    expect: [["error providers[0]", "must be a mapping, got 5"]],
  },
  {
    name: "an empty provider entry",
    yaml: "providers:\n  -\n  - {id: p0, command: prov}\n",
    expect: [["error providers[0]", "must be a mapping, got an empty value"]],
  },
  {
    name: "two providers without an id are not duplicates of each other",
    yaml: "providers: [{command: prov}, {command: prov}]\n",
    expect: [["error providers[0].id", "is required"], ["error providers[1].id", "is required"]],
  },
  {
    name: "a duplicate provider id names the first",
    yaml:
      "providers: [{id: p0, command: prov}, {id: p1, command: prov}, {id: p0, command: prov}]\n",
    expect: [["error providers[2].id", 'duplicate provider id "p0" (first at providers[0])']],
  },
  {
    name: "a provider without a command is one error",
    yaml: "providers: [{id: p0}]\n",
    expect: [["error providers[0].command", "is required"]],
  },
  ...([["check", "warning"], ["strict", "error"], ["start", "warning"]] as const).map((
    [mode, severity],
  ): Case => ({
    name: `a missing provider command is named, as a bare name or a path (${mode}: ${severity})`,
    yaml: "providers: [{id: p0, command: nope}, {id: p1, command: bin/prov}]\n",
    o: mode === "strict" ? { strict: true } : { mode },
    expect: [
      [`${severity} providers[0].command`, '"nope" not found on PATH'],
      [`${severity} providers[1].command`, "file not found: /etc/rig/bin/prov"],
    ],
  })),
  {
    name: "provider args must be quoted when they look like numbers or booleans",
    yaml: "providers: [{id: p0, command: prov, args: [5, ok, true]}]\n",
    expect: [
      ["error providers[0].args[0]", "must be a string (quote numbers and booleans)"],
      ["error providers[0].args[2]", "must be a string (quote numbers and booleans)"],
    ],
  },
  {
    name: "provider args of the wrong kind",
    yaml: "providers: [{id: p0, command: prov, args: run}]\n",
    expect: [["error providers[0].args", "must be a sequence"]],
  },
  {
    name: "an enabled restart_policy names each required key",
    yaml: "providers: [{id: p0, command: prov, restart_policy: {enabled: true}}]\n",
    expect: ["max_attempts", "backoff_ms", "timeout_ms"].map((k) => [
      `error providers[0].restart_policy.${k}`,
      "is required when restart_policy.enabled is true",
    ]),
  },
  {
    name: "an enabled restart_policy with an empty backoff_ms",
    yaml: RESTART("").replace("backoff_ms: [0]", "backoff_ms: []"),
    expect: [["error providers[0].restart_policy.backoff_ms", "must have at least 1 item"]],
  },
  {
    name: "backoff_ms shorter than max_attempts counts its entry",
    yaml: RESTART("").replace("max_attempts: 1", "max_attempts: 2"),
    expect: [["error providers[0].restart_policy.backoff_ms", "has 1 entry, max_attempts is 2"]],
  },
  {
    name: "backoff_ms longer than max_attempts counts its entries",
    yaml: RESTART("").replace("backoff_ms: [0]", "backoff_ms: [0, 1]"),
    expect: [[
      "error providers[0].restart_policy.backoff_ms",
      "has 2 entries, max_attempts is 1",
    ]],
  },

  // --- telemetry -----------------------------------------------------------------------------
  {
    name: "unknown telemetry and influxdb keys are warned about",
    yaml: `${PROV}\ntelemetry:\n  bucket: x\n  influxdb:\n    urls: http://x\n`,
    expect: [
      ["warning telemetry.bucket", "unknown key 'bucket' will be ignored"],
      ["warning telemetry.influxdb.urls", "unknown key 'urls' will be ignored"],
    ],
  },
  {
    name: "an ignored flat alias is still type-checked",
    yaml: `${PROV}\ntelemetry:\n  influx_org: 5\n  influxdb:\n    org: o\n`,
    expect: [
      ["error telemetry.influx_org", "must be a string, got 5"],
      ["warning telemetry.influx_org", "ignored here: telemetry.influxdb.org is also set"],
    ],
  },
  {
    name: "a bad InfluxDB URL given by the flat alias is reported at the alias",
    yaml: `${PROV}\ntelemetry:\n  enabled: true\n  influx_url: ftp://db\n  influx_token: t\n`,
    expect: [
      [
        "error telemetry.influx_url",
        '"ftp://db" is not an http(s) URL (fetch cannot write to ftp:)',
      ],
      ["warning telemetry.influx_url", "use telemetry.influxdb.url"],
      ["warning telemetry.influx_token", "use telemetry.influxdb.token"],
    ],
  },
  {
    name: "an InfluxDB URL that is not a URL",
    yaml: `${PROV}\ntelemetry:\n  enabled: true\n  influxdb: {url: "not a url", token: t}\n`,
    expect: [["error telemetry.influxdb.url", '"not a url" is not a URL']],
  },
  {
    name: "telemetry without a token names INFLUXDB_TOKEN",
    yaml: `${PROV}\ntelemetry:\n  enabled: true\n`,
    expect: [[
      "warning telemetry.influxdb.token",
      "is empty and INFLUXDB_TOKEN is not set here; InfluxDB will reject writes without a token",
    ]],
  },
  {
    name: "telemetry without a token by the flat alias is reported at the alias",
    yaml: `${PROV}\ntelemetry:\n  enabled: true\n  influx_token: ""\n`,
    expect: [
      ["warning telemetry.influx_token", "INFLUXDB_TOKEN is not set here"],
      ["warning telemetry.influx_token", "use telemetry.influxdb.token"],
    ],
  },

  // --- automation ----------------------------------------------------------------------------
  {
    name: "unknown automation keys are warned about",
    yaml: `${PROV}\nautomation:\n  tick_rate: 5\n`,
    expect: [["warning automation.tick_rate", "unknown key 'tick_rate' will be ignored"]],
  },
  {
    name: "automation enabled without a tree says it is required",
    yaml: `${PROV}\nautomation:\n  enabled: true\n`,
    expect: [
      ["error automation.behavior_tree", "is required when automation is enabled"],
      NO_AUTO_HOOK,
    ],
  },
  ...([["check", "warning"], ["strict", "error"], ["start", "error"]] as const).map((
    [mode, severity],
  ): Case => ({
    name: `automation enabled with a missing tree names the file (${mode}: ${severity})`,
    yaml: `${PROV}\nautomation:\n  enabled: true\n  behavior_tree: trees/nope.xml\n`,
    o: mode === "strict" ? { strict: true } : { mode },
    expect: [
      [`${severity} automation.behavior_tree`, "file not found: /etc/rig/trees/nope.xml"],
      NO_AUTO_HOOK,
    ],
  })),
  {
    name: "an ignored behavior_tree_path is still type-checked",
    yaml: `${PROV}\nautomation:\n  behavior_tree: bt.xml\n  behavior_tree_path: 5\n`,
    expect: [
      ["error automation.behavior_tree_path", "must be a string, got 5"],
      [
        "warning automation.behavior_tree_path",
        "is a deprecated alias and is ignored: behavior_tree is also set",
      ],
    ],
  },

  // --- a key of the wrong type is that one error, not also "missing" -----------------------
  {
    name: "a TLS certificate path of the wrong type does not make its key file 'set alone'",
    yaml: `${PROV}\nhttp:\n  tls_cert_path: 5\n  tls_key_path: tls/key.pem\n`,
    expect: [["error http.tls_cert_path", "must be a string, got 5"]],
  },
  {
    name: "a Sparkplug broker_url of the wrong type is not also 'required'",
    yaml: `${PROV}\nsparkplug:\n  enabled: true\n  broker_url: 1883\n  group_id: g\n` +
      "  edge_node_id: n\n",
    expect: [["error sparkplug.broker_url", "must be a string, got 1883"]],
  },
  {
    name: "a Sparkplug cert_file of the wrong type does not make key_file 'set alone'",
    yaml: `${PROV}\nsparkplug:\n  broker_url: mqtts://broker\n` +
      "  tls: {cert_file: 5, key_file: tls/key.pem}\n",
    expect: [["error sparkplug.tls.cert_file", "must be a string, got 5"]],
  },

  // --- sections of the wrong kind, unknown keys ------------------------------------------
  ...["polling", "logging", "health", "safety"].map((section): Case => ({
    name: `${section} of the wrong kind is one error at ${section}`,
    yaml: `${PROV}\n${section}: 5\n`,
    expect: [[`error ${section}`, "must be a mapping, got 5"]],
  })),
  // The interval read then is the default (500), not the file's: no staleness warning judged
  // against it (not longer than the interval, no WARNING stage).
  ...["{stale_after_ms: 400}", "{warn_after_ms: 400}", "{stale_after_ms: 800}"].map((
    staleness,
  ): Case => ({
    name: `polling of the wrong kind is one error at polling, not also a warning of staleness ` +
      `${staleness} judged against the default interval`,
    yaml: `${PROV}\npolling: 5\nhealth:\n  staleness: ${staleness}\n`,
    expect: [["error polling", "must be a mapping, got 5"]],
  })),
  // A ring just as long as incident_before_s: any device-loss delay leaves part of the loss's
  // window outside it (a warning at polling.interval_ms, naming the delay) -- but not a delay
  // judged from the default interval (500) when polling or its interval_ms is in error.
  {
    name:
      "a device-loss delay past the ring is warned about at polling.interval_ms, with its figure",
    yaml: `${PROV}\npolling:\n  interval_ms: 100\n${SHORT_RING}`,
    expect: [[
      "warning polling.interval_ms",
      "a device that drops out is found down 0.5 s after its first failed read",
    ]],
  },
  ...([
    ["polling: 5", "error polling", "must be a mapping, got 5"],
    ["polling:\n  interval_ms: 99", "error polling.interval_ms", "99"],
    ["polling:\n  interval_ms: fast", "error polling.interval_ms", "must be an integer"],
  ] as const).map(([polling, at, text]): Case => ({
    name: `${polling.replace("\n ", "")} is only its error, not also a warning of a device-loss ` +
      "delay past the ring judged against the default interval",
    yaml: `${PROV}\n${polling}\n${SHORT_RING}`,
    expect: [[at, text]],
  })),
  // Nor one judged from a history default: each file below, with the key in error read at its
  // default (history.memory_seconds 120, incident_before_s 10, incident_after_s 5, enabled true),
  // gave a device-loss delay warning the file's own figures do not (an interval of 40 s: 10 + 120
  // > 120; incident_after_s 601 would have the loss found inside its window).
  ...([
    [
      "polling:\n  interval_ms: 40000\nhistory:\n  memory_seconds: 5\n",
      "error history.memory_seconds",
      "must be between 10 and 3600, got 5",
    ],
    [
      "polling:\n  interval_ms: 2000\nhistory:\n  memory_seconds: 10\n  incident_before_s: 5\n" +
      "  incident_after_s: 601\n",
      "error history.incident_after_s",
      "must be between 0 and 600, got 601",
    ],
    [
      "polling:\n  interval_ms: 100\nhistory:\n  memory_seconds: 10\n  incident_before_s: -1\n" +
      "  incident_after_s: 0\n",
      "error history.incident_before_s",
      "must be between 0 and 3600, got -1",
    ],
    ["polling:\n  interval_ms: 40000\nhistory: 5\n", "error history", "must be a mapping, got 5"],
    [
      "polling:\n  interval_ms: 40000\nhistory:\n  enabled: maybe\n",
      "error history.enabled",
      'must be a boolean (true or false), got "maybe"',
    ],
  ] as const).map(([yaml, at, text]): Case => ({
    name: `${at.slice("error ".length)} in error is only its error, not also a warning of a ` +
      "device-loss delay past the ring judged against its default",
    yaml: `${PROV}\n${yaml}`,
    expect: [[at, text]],
  })),
  // Nor the ring's own rule on the incident window (incident_before_s at most memory_seconds, and
  // with incident_after_s within it) judged against a default: 200 > 5 and 100 + 30 > 5 would
  // read "> 120", 10 + "fast" would read "10 + 5 > 10".
  ...([
    [
      "memory_seconds: 5\n  incident_before_s: 200",
      "error history.memory_seconds",
      "must be between 10 and 3600, got 5",
    ],
    [
      "memory_seconds: 5\n  incident_before_s: 100\n  incident_after_s: 30",
      "error history.memory_seconds",
      "must be between 10 and 3600, got 5",
    ],
    [
      "memory_seconds: 10\n  incident_before_s: 10\n  incident_after_s: fast",
      "error history.incident_after_s",
      'must be an integer, got "fast"',
    ],
  ] as const).map(([keys, at, text]): Case => ({
    name: `history ${keys.replaceAll("\n ", ",")} is only the error at ` +
      `${at.slice("error ".length)}, not also the incident window judged against its default`,
    yaml: `${PROV}\nhistory:\n  ${keys}\n`,
    expect: [[at, text]],
  })),
  {
    name: "unknown safety and health keys are warned about at their place",
    yaml: `${PROV}\nsafety:\n  zero_is_safe: true\nhealth:\n  stale_after_ms: 5\n`,
    expect: [
      ["warning safety.zero_is_safe", "unknown key 'zero_is_safe' will be ignored"],
      ["warning health.stale_after_ms", "unknown key 'stale_after_ms' will be ignored"],
    ],
  },
  {
    name: "stale_after_ms equal to warn_after_ms names both values",
    yaml: `${PROV}\nhealth:\n  staleness: {warn_after_ms: 100, stale_after_ms: 100}\n`,
    expect: [[
      "error health.staleness.stale_after_ms",
      "must be greater than warn_after_ms (100 <= 100)",
    ]],
  },
  {
    name: "stale_after_ms not longer than polling.interval_ms names both figures and the fix",
    yaml: `${PROV}\npolling:\n  interval_ms: 500\nhealth:\n  staleness: {stale_after_ms: 500}\n`,
    expect: [[
      "warning health.staleness.stale_after_ms",
      "is not longer than polling.interval_ms (500 <= 500), the shortest period a device is " +
      "polled at: a sample is about that old just before its next poll, so every device, and " +
      "every signal whose provider declares no longer stale_after_ms, goes STALE between polls " +
      "even when its reads succeed (interlocks on them engage and release every poll, alarms " +
      "with on_bad_quality: alarm raise); set it above the interval (twice it, 1000, leaves " +
      "each poll's own time a margin) or to 0 to derive it",
    ]],
  },
  {
    name: "warn_after_ms not longer than polling.interval_ms names both figures and the fix",
    yaml: `${PROV}\npolling:\n  interval_ms: 500\nhealth:\n  staleness: {warn_after_ms: 1}\n`,
    expect: [[
      "warning health.staleness.warn_after_ms",
      "is not longer than polling.interval_ms (1 <= 500), the shortest period a device is polled " +
      "at: its last answered poll is about that old just before its next, so every device's " +
      "health reads WARNING between polls even when its reads succeed; set it above the " +
      "interval (twice it, 1000, leaves each poll's own time a margin) or to 0 to derive it",
    ]],
  },
  {
    name: "warn_after_ms not longer than polling.interval_ms under a stale bound twice it would " +
      "pass names that bound, not twice the interval",
    yaml: `${PROV}
polling:
  interval_ms: 1000
health:
` +
      `  staleness: {warn_after_ms: 1000, stale_after_ms: 1500}
`,
    expect: [[
      "warning health.staleness.warn_after_ms",
      "is not longer than polling.interval_ms (1000 <= 1000), the shortest period a device is " +
      "polled at: its last answered poll is about that old just before its next, so every " +
      "device's health reads WARNING between polls even when its reads succeed; set it above " +
      "the interval and below stale_after_ms (1500) or to 0 to derive it",
    ]],
  },
  {
    name: "stale_after_ms with warn_after_ms 0 leaving no WARNING stage names the derived bound " +
      "and a warn_after_ms that keeps one",
    yaml: `${PROV}\npolling:\n  interval_ms: 500\nhealth:\n  staleness: {stale_after_ms: 800}\n`,
    expect: [[
      "warning health.staleness.stale_after_ms",
      "leaves devices no WARNING stage: warn_after_ms is 0, derived as max(3 x " +
      "polling.interval_ms x the provider's devices, 2000), at least 2000 here, and never above " +
      "stale_after_ms (800), so every device's health goes from OK to STALE without WARNING; " +
      "set warn_after_ms above polling.interval_ms and below stale_after_ms (650, say) to keep one",
    ]],
  },
  {
    name: "stale_after_ms with warn_after_ms 0 leaving no WARNING stage and no room below it " +
      "says to raise it",
    yaml: `${PROV}\npolling:\n  interval_ms: 500\nhealth:\n  staleness: {stale_after_ms: 501}\n`,
    expect: [[
      "warning health.staleness.stale_after_ms",
      "leaves devices no WARNING stage: warn_after_ms is 0, derived as max(3 x " +
      "polling.interval_ms x the provider's devices, 2000), at least 2000 here, and never above " +
      "stale_after_ms (501), so every device's health goes from OK to STALE without WARNING; " +
      "raise stale_after_ms and set warn_after_ms between polling.interval_ms and it to keep one",
    ]],
  },
];

for (const c of CASES) {
  Deno.test(`loadConfig message: ${c.name}`, () => {
    assertDiagnostics(load(c.yaml, c.o), c.expect);
  });
}

Deno.test("loadConfig tells a TLS path that is missing from one that is not a file", () => {
  const result = (mode: "check" | "start", strict = false) =>
    loadConfig(`${PROV}\nhttp:\n  tls_cert_path: tls\n  tls_key_path: tls/key.pem\n`, {
      path: "/etc/rig/runtime.yaml",
      mode,
      strict,
      env: {},
      fileExists: () => false,
      pathKind: (p) => p === "/etc/rig/tls" ? "a directory" : null,
      commandExists: () => true,
      cwd: "/var/lib/rig",
    });
  assertDiagnostics(result("check"), [
    ["warning http.tls_cert_path", "is not a regular file: /etc/rig/tls is a directory"],
    ["warning http.tls_key_path", "file not found: /etc/rig/tls/key.pem"],
  ]);
  for (const r of [result("start"), result("check", true)]) {
    assertDiagnostics(r, [
      ["error http.tls_cert_path", "is not a regular file: /etc/rig/tls is a directory"],
      ["error http.tls_key_path", "file not found: /etc/rig/tls/key.pem"],
    ]);
  }
});

Deno.test("loadConfig warns at health.staleness.stale_after_ms's line and column when warn_after_ms 0 leaves no WARNING stage", () => {
  const yaml = `${PROV}
polling:
  interval_ms: 1000
health:
  staleness:
    warn_after_ms: 0
    stale_after_ms: 1500
`;
  for (const mode of ["check", "start"] as const) {
    const result = load(yaml, { mode });
    assert.notEqual(result.config, null, `${mode}: a warning, not an error`);
    assert.deepEqual(
      result.diagnostics.map((d) => formatDiagnostic(d).replace(/: leaves devices.*/, "")),
      ["/etc/rig/runtime.yaml:7:5: warning: health.staleness.stale_after_ms"],
      mode,
    );
    assert.match(result.diagnostics[0]!.message, /\(1250, say\) to keep one$/);
  }
});

Deno.test("loadConfig warns at health.staleness.stale_after_ms's line and column when it is not longer than polling.interval_ms", () => {
  const yaml = `${PROV}
polling:
  interval_ms: 2000
health:
  staleness:
    warn_after_ms: 500
    stale_after_ms: 1500
`;
  for (const mode of ["check", "start"] as const) {
    const result = load(yaml, { mode });
    assert.notEqual(result.config, null, `${mode}: a warning, not an error`);
    assert.deepEqual(
      result.diagnostics.map((d) => formatDiagnostic(d).replace(/: is not longer.*/, "")),
      ["/etc/rig/runtime.yaml:7:5: warning: health.staleness.stale_after_ms"],
      mode,
    );
    assert.match(result.diagnostics[0]!.message, /\(1500 <= 2000\)/);
  }
});
