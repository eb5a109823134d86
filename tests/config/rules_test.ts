/**
 * One case per validation rule (every key's type and bounds as examples/full.yaml states them, and
 * the cross-field rules), valid and invalid. Each asserts the exact list of diagnostics as
 * severity, key path and line, so a rule reported twice (schema and semantic layer) or not at all
 * fails the case.
 */
import assert from "node:assert/strict";
import { load, type LoadOverrides, PROV, summary } from "./_helpers.ts";

interface Case {
  name: string;
  yaml: string;
  o?: LoadOverrides;
  /** `severity path @line`; empty = valid without warnings. */
  expect: string[];
}

const CASES: Case[] = [
  // --- parsing -----------------------------------------------------------------------------
  { name: "minimal config is valid", yaml: PROV, expect: [] },
  {
    name: "YAML syntax error is reported with its line",
    yaml: `
runtime:
  name: [unclosed
${PROV}
`,
    expect: ["error  @3"],
  },
  {
    name: "duplicate key is an error at the repeated key",
    yaml: `
providers:
  - id: p0
    command: prov
    command: prov
`,
    expect: ["error providers[0].command @4"],
  },
  {
    name: "duplicate top-level section is an error",
    yaml: `
${PROV}
polling: {interval_ms: 500}
polling: {interval_ms: 600}
`,
    expect: ["error polling @3"],
  },
  { name: "sequence root is an error", yaml: "- a\n- b\n", expect: ["error  @1"] },
  { name: "scalar root is an error", yaml: "hello\n", expect: ["error  @1"] },
  { name: "empty file is an error", yaml: "# nothing\n", expect: ["error  @1"] },
  {
    name: "section of the wrong kind is an error",
    yaml: `
${PROV}
http: [1, 2]
`,
    expect: ["error http @2"],
  },
  {
    name: "empty section is accepted",
    yaml: `
${PROV}
http:
telemetry:
`,
    expect: [],
  },

  // --- runtime -------------------------------------------------------------------------------
  {
    name: "runtime.mode is forbidden",
    yaml: `
runtime:
  mode: AUTO
${PROV}
`,
    expect: ["error runtime.mode @2"],
  },
  {
    name: "runtime.shutdown_timeout_ms below 500 is an error",
    yaml: `
runtime:
  shutdown_timeout_ms: 499
${PROV}
`,
    expect: ["error runtime.shutdown_timeout_ms @2"],
  },
  {
    name: "runtime.shutdown_timeout_ms above 30000 is an error",
    yaml: `
runtime:
  shutdown_timeout_ms: 30001
${PROV}
`,
    expect: ["error runtime.shutdown_timeout_ms @2"],
  },
  {
    name: "runtime timeouts at their bounds are valid",
    yaml: `
runtime:
  shutdown_timeout_ms: 500
  startup_timeout_ms: 300000
${PROV}
`,
    expect: [],
  },
  {
    name: "runtime.startup_timeout_ms below 5000 is an error",
    yaml: `
runtime:
  startup_timeout_ms: 4999
${PROV}
`,
    expect: ["error runtime.startup_timeout_ms @2"],
  },
  {
    name: "a string where an integer is expected is an error",
    yaml: `
runtime:
  startup_timeout_ms: abc
${PROV}
`,
    expect: ["error runtime.startup_timeout_ms @2"],
  },

  // --- http ----------------------------------------------------------------------------------
  {
    name: "http.port 0 is an error when http is enabled",
    yaml: `
http:
  port: 0
${PROV}
`,
    expect: ["error http.port @2"],
  },
  {
    name: "http.port 65536 is an error when http is enabled",
    yaml: `
http:
  port: 65536
${PROV}
`,
    expect: ["error http.port @2"],
  },
  {
    name: "http.port and thread_pool_size are not bounded when http is disabled",
    yaml: `
http:
  enabled: false
  port: 0
  thread_pool_size: 0
${PROV}
`,
    expect: [],
  },
  {
    name: "http.console_enabled that is not a boolean is an error at its line",
    yaml: `
http:
  port: 8080
  console_enabled: "yes"
${PROV}
`,
    expect: ["error http.console_enabled @3"],
  },
  {
    name: "http.metrics_enabled that is not a boolean is an error at its line",
    yaml: `
http:
  port: 8080
  metrics_enabled: 1
${PROV}
`,
    expect: ["error http.metrics_enabled @3"],
  },
  {
    name: "http.console_enabled false is valid",
    yaml: `
http:
  console_enabled: false
${PROV}
`,
    expect: [],
  },
  {
    name: "http.thread_pool_size 0 is an error when http is enabled",
    yaml: `
http:
  thread_pool_size: 0
${PROV}
`,
    expect: ["error http.thread_pool_size @2"],
  },
  {
    name: "http.cors_allowed_origins empty list is valid (no CORS grant)",
    yaml: `
http:
  cors_allowed_origins: []
${PROV}
`,
    expect: [],
  },
  {
    name: "http.cors_allowed_origins empty string is an error",
    yaml: `
http:
  cors_allowed_origins: ""
${PROV}
`,
    expect: ["error http.cors_allowed_origins @2"],
  },
  {
    name: "http.cors_allowed_origins as a mapping is an error",
    yaml: `
http:
  cors_allowed_origins: {a: b}
${PROV}
`,
    expect: ["error http.cors_allowed_origins @2"],
  },
  {
    name: "http.cors_allowed_origins as one string is valid",
    yaml: `
http:
  cors_allowed_origins: http://localhost:3000
${PROV}
`,
    expect: [],
  },
  {
    name: "`*` origin with cors_allow_credentials is an error",
    yaml: `
http:
  cors_allowed_origins: ["http://a", "*"]
  cors_allow_credentials: true
${PROV}
`,
    expect: ["error http.cors_allowed_origins @2"],
  },
  {
    name: "explicit origins with cors_allow_credentials are valid",
    yaml: `
http:
  cors_allowed_origins: ["http://a"]
  cors_allow_credentials: true
${PROV}
`,
    expect: [],
  },
  {
    name: "auth enabled without a token is a warning in check mode",
    yaml: `
http:
  auth_enabled: true
${PROV}
`,
    expect: ["warning http.auth_enabled @2"],
  },
  {
    name: "auth enabled without a token is an error at start-up",
    yaml: `
http:
  auth_enabled: true
${PROV}
`,
    o: { mode: "start" },
    expect: ["error http.auth_enabled @2"],
  },
  {
    name: "auth enabled with RUNTIME_API_TOKEN starts",
    yaml: `
http:
  auth_enabled: true
${PROV}
`,
    o: { mode: "start", env: { RUNTIME_API_TOKEN: "s3cret" } },
    expect: [],
  },
  {
    name: "auth enabled with http.auth_token starts",
    yaml: `
http:
  auth_enabled: true
  auth_token: s3cret
${PROV}
`,
    o: { mode: "start" },
    expect: [],
  },
  {
    name: "non-loopback bind without auth is an error (safety gate)",
    yaml: `
http:
  bind: 0.0.0.0
${PROV}
`,
    expect: ["error http.bind @2"],
  },
  {
    name: "non-loopback bind without auth is allowed with allow_insecure_bind",
    yaml: `
http:
  bind: 192.168.1.20
  allow_insecure_bind: true
${PROV}
`,
    expect: [],
  },
  {
    name: "127.0.0.0/8, ::1 and localhost are loopback",
    yaml: `
http:
  bind: 127.1.2.3
${PROV}
`,
    expect: [],
  },
  {
    name: "non-loopback bind is not gated when http is disabled",
    yaml: `
http:
  enabled: false
  bind: 0.0.0.0
${PROV}
`,
    expect: [],
  },
  {
    name: "auth on a non-loopback bind without TLS is a plaintext-token warning",
    yaml: `
http:
  bind: 0.0.0.0
  auth_enabled: true
  auth_token: s3cret
${PROV}
`,
    expect: ["warning http.bind @2"],
  },
  {
    name: "auth on a non-loopback bind with TLS is valid",
    yaml: `
http:
  bind: 0.0.0.0
  auth_enabled: true
  auth_token: s3cret
  tls_cert_path: tls/cert.pem
  tls_key_path: tls/key.pem
${PROV}
`,
    expect: [],
  },
  {
    name: "tls_cert_path without tls_key_path is an error",
    yaml: `
http:
  tls_cert_path: tls/cert.pem
${PROV}
`,
    expect: ["error http.tls_cert_path @2"],
  },
  {
    name: "tls_key_path without tls_cert_path is an error",
    yaml: `
http:
  tls_cert_path: ""
  tls_key_path: tls/key.pem
${PROV}
`,
    expect: ["error http.tls_key_path @3"],
  },
  {
    name: "missing TLS files are a warning in check mode",
    yaml: `
http:
  tls_cert_path: tls/cert.pem
  tls_key_path: tls/key.pem
${PROV}
`,
    o: { files: [] },
    expect: ["warning http.tls_cert_path @2", "warning http.tls_key_path @3"],
  },
  {
    name: "missing TLS files are an error at start-up",
    yaml: `
http:
  tls_cert_path: tls/cert.pem
  tls_key_path: tls/key.pem
${PROV}
`,
    o: { files: [], mode: "start" },
    expect: ["error http.tls_cert_path @2", "error http.tls_key_path @3"],
  },
  {
    // As sparkplug.tls with sparkplug off: a start with no HTTP server reads no TLS file, and a
    // reload turning the server off neither reads nor judges them (docs/deployment.md).
    name: "missing TLS files of a disabled HTTP server are no diagnostic at start-up",
    yaml: `
http:
  enabled: false
  tls_cert_path: tls/cert.pem
  tls_key_path: tls/key.pem
${PROV}
`,
    o: { files: [], mode: "start" },
    expect: [],
  },
  {
    name:
      "missing TLS files of a disabled HTTP server are no diagnostic under --check-config --strict",
    yaml: `
http:
  enabled: false
  tls_cert_path: tls/cert.pem
  tls_key_path: tls/key.pem
${PROV}
`,
    o: { files: [], strict: true },
    expect: [],
  },
  {
    name: "a disabled HTTP server's TLS keys still need both or neither",
    yaml: `
http:
  enabled: false
  tls_cert_path: tls/cert.pem
${PROV}
`,
    o: { files: [], mode: "start" },
    expect: ["error http.tls_cert_path @3"],
  },

  // --- providers -----------------------------------------------------------------------------
  {
    name: "missing providers is an error",
    yaml: "polling: {interval_ms: 500}\n",
    expect: ["error providers @1"],
  },
  { name: "empty providers is an error", yaml: "providers: []\n", expect: ["error providers @1"] },
  {
    name: "providers as a mapping is an error",
    yaml: "providers: {id: p0}\n",
    expect: ["error providers @1"],
  },
  {
    name: "provider without id is an error",
    yaml: `
providers:
  - command: prov
`,
    expect: ["error providers[0].id @2"],
  },
  {
    name: "provider with an empty id is an error",
    yaml: `
providers:
  - id: ""
    command: prov
`,
    expect: ["error providers[0].id @2"],
  },
  {
    name: "a provider id containing '/' is an error (a device handle is provider/device)",
    yaml: `
providers:
  - id: line/a
    command: prov
`,
    expect: ["error providers[0].id @2"],
  },
  {
    name: "a provider id '.' or '..' is an error (a URL path segment a client normalizes away)",
    yaml: `
providers:
  - id: "."
    command: prov
  - id: ".."
    command: prov
`,
    expect: ["error providers[0].id @2", "error providers[1].id @4"],
  },
  {
    name: "duplicate provider ids are an error at the second id",
    yaml: `
providers:
  - id: dup0
    command: prov
  - id: dup0
    command: prov
`,
    expect: ["error providers[1].id @4"],
  },
  {
    name: "provider without command is an error",
    yaml: `
providers:
  - id: p0
`,
    expect: ["error providers[0].command @2"],
  },
  {
    name: "provider with an empty command is an error",
    yaml: `
providers:
  - id: p0
    command: ""
`,
    expect: ["error providers[0].command @3"],
  },
  {
    name: "provider command not on PATH is a warning",
    yaml: `
providers:
  - id: p0
    command: not-installed
`,
    expect: ["warning providers[0].command @3"],
  },
  {
    name: "provider command path that does not exist is a warning",
    yaml: `
providers:
  - id: p0
    command: ./bin/p0
`,
    expect: ["warning providers[0].command @3"],
  },
  {
    name: "provider args must be strings",
    yaml: `
providers:
  - id: p0
    command: prov
    args: [--port, 5]
`,
    expect: ["error providers[0].args[1] @4"],
  },
  {
    name: "provider timeout lower bounds",
    yaml: `
providers:
  - id: p0
    command: prov
    timeout_ms: 99
    hello_timeout_ms: 99
    ready_timeout_ms: 999
`,
    expect: [
      "error providers[0].hello_timeout_ms @5",
      "error providers[0].ready_timeout_ms @6",
      "error providers[0].timeout_ms @4",
    ],
  },
  {
    name: "provider timeouts at their lower bounds are valid",
    yaml: `
providers:
  - id: p0
    command: prov
    timeout_ms: 100
    hello_timeout_ms: 100
    ready_timeout_ms: 1000
`,
    expect: [],
  },
  {
    name: "restart_policy enabled requires max_attempts, backoff_ms and timeout_ms",
    yaml: `
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: true
`,
    expect: [
      "error providers[0].restart_policy.backoff_ms @4",
      "error providers[0].restart_policy.max_attempts @4",
      "error providers[0].restart_policy.timeout_ms @4",
    ],
  },
  {
    name: "restart_policy backoff_ms length must equal max_attempts",
    yaml: `
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: true
      max_attempts: 3
      backoff_ms: [100, 1000]
      timeout_ms: 30000
`,
    expect: ["error providers[0].restart_policy.backoff_ms @7"],
  },
  {
    name: "restart_policy max_attempts 0 is an error",
    yaml: `
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: true
      max_attempts: 0
      backoff_ms: [100]
      timeout_ms: 30000
`,
    expect: ["error providers[0].restart_policy.max_attempts @6"],
  },
  {
    name: "restart_policy empty backoff_ms is an error",
    yaml: `
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: true
      max_attempts: 1
      backoff_ms: []
      timeout_ms: 30000
`,
    expect: ["error providers[0].restart_policy.backoff_ms @7"],
  },
  {
    name: "restart_policy negative backoff is an error at the entry",
    yaml: `
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: true
      max_attempts: 2
      backoff_ms:
        - 100
        - -1
      timeout_ms: 30000
`,
    expect: ["error providers[0].restart_policy.backoff_ms[1] @9"],
  },
  {
    name: "restart_policy timeout_ms and success_reset_ms bounds",
    yaml: `
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: true
      max_attempts: 1
      backoff_ms: [0]
      timeout_ms: 999
      success_reset_ms: -1
`,
    expect: [
      "error providers[0].restart_policy.success_reset_ms @9",
      "error providers[0].restart_policy.timeout_ms @8",
    ],
  },
  {
    name: "restart_policy disabled is not bounded",
    yaml: `
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: false
      max_attempts: 0
      backoff_ms: [1, 2]
      timeout_ms: 10
`,
    expect: [],
  },
  {
    name: "restart_policy enabled and complete is valid",
    yaml: `
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: true
      max_attempts: 3
      backoff_ms: [100, 1000, 5000]
      timeout_ms: 30000
`,
    expect: [],
  },

  // --- polling, health, telemetry, logging ---------------------------------------------------
  {
    name: "polling.interval_ms below 100 is an error",
    yaml: `
polling:
  interval_ms: 99
${PROV}
`,
    expect: ["error polling.interval_ms @2"],
  },
  {
    name: "audit bounds are errors with their line",
    yaml: `
audit:
  max_file_bytes: 100
  max_files: 1
${PROV}
`,
    expect: ["error audit.max_file_bytes @2", "error audit.max_files @3"],
  },
  {
    name: "health.staleness negative values are errors",
    yaml: `
health:
  staleness:
    warn_after_ms: -1
    stale_after_ms: -1
${PROV}
`,
    expect: ["error health.staleness.stale_after_ms @4", "error health.staleness.warn_after_ms @3"],
  },
  {
    name: "health.staleness stale_after_ms must exceed warn_after_ms when both are positive",
    yaml: `
health:
  staleness:
    warn_after_ms: 5000
    stale_after_ms: 5000
${PROV}
`,
    expect: ["error health.staleness.stale_after_ms @4"],
  },
  {
    name: "health.staleness with one value derived is valid",
    yaml: `
health:
  staleness:
    warn_after_ms: 5000
    stale_after_ms: 0
${PROV}
`,
    expect: [],
  },
  {
    name: "health.staleness.stale_after_ms equal to polling.interval_ms is a warning",
    yaml: `
polling:
  interval_ms: 1000
health:
  staleness:
    stale_after_ms: 1000
${PROV}
`,
    expect: ["warning health.staleness.stale_after_ms @5"],
  },
  {
    name: "health.staleness.stale_after_ms below the default polling interval is a warning",
    yaml: `
health:
  staleness: {warn_after_ms: 100, stale_after_ms: 300}
${PROV}
`,
    expect: ["warning health.staleness.stale_after_ms @2"],
  },
  {
    name: "health.staleness.stale_after_ms longer than polling.interval_ms is valid",
    yaml: `
polling:
  interval_ms: 1000
health:
  staleness:
    warn_after_ms: 1001
    stale_after_ms: 1002
${PROV}
`,
    expect: [],
  },
  {
    name:
      "health.staleness.stale_after_ms between one and two polling intervals with warn_after_ms 0 (no WARNING stage) is a warning",
    yaml: `
polling:
  interval_ms: 1000
health:
  staleness:
    warn_after_ms: 0
    stale_after_ms: 1500
${PROV}
`,
    expect: ["warning health.staleness.stale_after_ms @6"],
  },
  {
    name:
      "health.staleness.stale_after_ms at the least derived warn bound with warn_after_ms left out is a warning",
    yaml: `
polling:
  interval_ms: 500
health:
  staleness:
    stale_after_ms: 2000
${PROV}
`,
    expect: ["warning health.staleness.stale_after_ms @5"],
  },
  {
    name:
      "health.staleness.stale_after_ms above the least derived warn bound with warn_after_ms 0 is valid",
    yaml: `
polling:
  interval_ms: 500
health:
  staleness:
    stale_after_ms: 2001
${PROV}
`,
    expect: [],
  },
  {
    name: "health.staleness.stale_after_ms that is an error is not also warned about",
    yaml: `
health:
  staleness:
    warn_after_ms: 400
    stale_after_ms: 400
${PROV}
`,
    expect: ["error health.staleness.stale_after_ms @4"],
  },
  {
    name: "health.staleness.stale_after_ms is not compared with a polling.interval_ms in error",
    yaml: `
polling:
  interval_ms: 99
health:
  staleness:
    stale_after_ms: 50
${PROV}
`,
    expect: ["error polling.interval_ms @2"],
  },
  {
    name: "health.staleness.warn_after_ms equal to polling.interval_ms is a warning",
    yaml: `
polling:
  interval_ms: 1000
health:
  staleness:
    warn_after_ms: 1000
    stale_after_ms: 5000
${PROV}
`,
    expect: ["warning health.staleness.warn_after_ms @5"],
  },
  {
    name:
      "health.staleness.warn_after_ms below the default polling interval with a derived stale bound is a warning",
    yaml: `
health:
  staleness: {warn_after_ms: 1}
${PROV}
`,
    expect: ["warning health.staleness.warn_after_ms @2"],
  },
  {
    name: "health.staleness.warn_after_ms longer than polling.interval_ms is valid",
    yaml: `
polling:
  interval_ms: 1000
health:
  staleness:
    warn_after_ms: 1001
${PROV}
`,
    expect: [],
  },
  {
    name: "health.staleness.warn_after_ms is not compared with a polling.interval_ms in error",
    yaml: `
polling:
  interval_ms: 99
health:
  staleness:
    warn_after_ms: 50
${PROV}
`,
    expect: ["error polling.interval_ms @2"],
  },
  {
    name: "telemetry.health_interval_ms negative is an error",
    yaml: `
telemetry:
  health_interval_ms: -1
${PROV}
`,
    expect: ["error telemetry.health_interval_ms @2"],
  },
  {
    name: "telemetry.health_interval_ms 0 disables health rows",
    yaml: `
telemetry:
  health_interval_ms: 0
${PROV}
`,
    expect: [],
  },
  {
    name: "telemetry.measurement_names runtime and anolis are valid",
    yaml: `
telemetry:
  measurement_names: anolis
${PROV}
`,
    expect: [],
  },
  {
    name: "telemetry.measurement_names other than runtime or anolis is an error even when disabled",
    yaml: `
telemetry:
  enabled: false
  measurement_names: influx
${PROV}
`,
    expect: ["error telemetry.measurement_names @3"],
  },
  {
    name: "telemetry.measurement_names is case-sensitive and not a sequence",
    yaml: `
telemetry:
  measurement_names: [ANOLIS]
${PROV}
`,
    expect: ["error telemetry.measurement_names @2"],
  },
  {
    name: "telemetry enabled with a bad URL is an error",
    yaml: `
telemetry:
  enabled: true
  influxdb:
    url: localhost:8086
    token: t
${PROV}
`,
    expect: ["error telemetry.influxdb.url @4"],
  },
  {
    name: "telemetry enabled without any token is a warning",
    yaml: `
telemetry:
  enabled: true
  influxdb:
    url: http://db:8086
${PROV}
`,
    expect: ["warning telemetry.influxdb.token @3"],
  },
  {
    name: "telemetry enabled with INFLUXDB_TOKEN is valid",
    yaml: `
telemetry:
  enabled: true
${PROV}
`,
    o: { env: { INFLUXDB_TOKEN: "t" } },
    expect: [],
  },
  {
    name: "flat telemetry aliases are warned as deprecated",
    yaml: `
telemetry:
  influx_url: http://db:8086
  influx_org: o
  influx_bucket: b
  influx_token: t
  batch_size: 10
  flush_interval_ms: 500
${PROV}
`,
    expect: [
      "warning telemetry.batch_size @6",
      "warning telemetry.flush_interval_ms @7",
      "warning telemetry.influx_bucket @4",
      "warning telemetry.influx_org @3",
      "warning telemetry.influx_token @5",
      "warning telemetry.influx_url @2",
    ],
  },
  {
    name: "flat telemetry alias values are bound-checked",
    yaml: `
telemetry:
  batch_size: 0
${PROV}
`,
    expect: ["error telemetry.batch_size @2", "warning telemetry.batch_size @2"],
  },
  {
    name: "logging.level outside debug|info|warn|error is an error",
    yaml: `
logging:
  level: verbose
${PROV}
`,
    expect: ["error logging.level @2"],
  },

  // --- automation ----------------------------------------------------------------------------
  {
    name: "automation enabled without behavior_tree is an error",
    yaml: `
automation:
  enabled: true
${PROV}
`,
    expect: [
      // automation enabled without an AUTO -> FAULT hook: AUTO would be refused
      "warning automation @1",
      "error automation.behavior_tree @1",
    ],
  },
  {
    name: "automation enabled with an empty behavior_tree is an error",
    yaml: `
automation:
  enabled: true
  behavior_tree: ""
${PROV}
`,
    expect: [
      // automation enabled without an AUTO -> FAULT hook: AUTO would be refused
      "warning automation @1",
      "error automation.behavior_tree @3",
    ],
  },
  {
    name: "automation enabled with a missing behavior-tree file is an error at start",
    yaml: `
automation:
  enabled: true
  behavior_tree: nowhere.xml
${PROV}
`,
    o: { mode: "start" },
    expect: [
      // automation enabled without an AUTO -> FAULT hook: AUTO would be refused
      "warning automation @1",
      "error automation.behavior_tree @3",
    ],
  },
  {
    name: "automation enabled with a missing behavior-tree file is a warning under --check-config",
    yaml: `
automation:
  enabled: true
  behavior_tree: nowhere.xml
${PROV}
`,
    expect: ["warning automation @1", "warning automation.behavior_tree @3"],
  },
  {
    name: "automation enabled with an existing behavior tree is valid",
    yaml: `
automation:
  enabled: true
  behavior_tree: bt.xml
${PROV}
`,
    expect: [
      // automation enabled without an AUTO -> FAULT hook: AUTO would be refused
      "warning automation @1",
    ],
  },
  {
    name: "behavior_tree_path alias is accepted with a deprecation warning",
    yaml: `
automation:
  enabled: true
  behavior_tree_path: bt.xml
${PROV}
`,
    expect: [
      // automation enabled without an AUTO -> FAULT hook: AUTO would be refused
      "warning automation @1",
      "warning automation.behavior_tree_path @3",
    ],
  },
  {
    name: "behavior_tree_path alias is ignored with a warning when behavior_tree is set",
    yaml: `
automation:
  enabled: true
  behavior_tree: bt.xml
  behavior_tree_path: other.xml
${PROV}
`,
    expect: [
      // automation enabled without an AUTO -> FAULT hook: AUTO would be refused
      "warning automation @1",
      "warning automation.behavior_tree_path @4",
    ],
  },
  {
    name: "automation disabled does not need a behavior tree",
    yaml: `
automation:
  enabled: false
  behavior_tree: nowhere.xml
  tick_rate_hz: 0
${PROV}
`,
    expect: [],
  },
  {
    name: "automation.tick_rate_hz 0 is an error when enabled",
    yaml: `
automation:
  enabled: true
  behavior_tree: bt.xml
  tick_rate_hz: 0
${PROV}
`,
    expect: ["error automation.tick_rate_hz @4", "warning automation @1"],
  },
  {
    name: "automation.tick_rate_hz 1001 is an error when enabled",
    yaml: `
automation:
  enabled: true
  behavior_tree: bt.xml
  tick_rate_hz: 1001
${PROV}
`,
    expect: ["error automation.tick_rate_hz @4", "warning automation @1"],
  },
  {
    name: "automation.manual_gating_policy must be BLOCK or OVERRIDE even when disabled",
    yaml: `
automation:
  manual_gating_policy: ALLOW
${PROV}
`,
    expect: ["error automation.manual_gating_policy @2"],
  },

  // --- parameters ----------------------------------------------------------------------------
  {
    name: "parameters of every type are valid",
    yaml: `
automation:
  parameters:
    - {name: a, type: double, default: 40, min: 0, max: 120}
    - {name: b, type: int64, default: 3, min: 1, max: 5}
    - {name: c, type: bool, default: true}
    - {name: d, type: string, default: x, allowed_values: [x, y]}
${PROV}
`,
    expect: [],
  },
  {
    name: "parameter name, type and default are required",
    yaml: `
automation:
  parameters:
    - {min: 0}
${PROV}
`,
    expect: [
      "error automation.parameters[0].default @3",
      "error automation.parameters[0].name @3",
      "error automation.parameters[0].type @3",
    ],
  },
  {
    name: "parameter type outside double|int64|bool|string is an error",
    yaml: `
automation:
  parameters:
    - name: a
      type: float
      default: 1.5
${PROV}
`,
    expect: ["error automation.parameters[0].type @4"],
  },
  {
    name: "parameter default of the wrong type is an error",
    yaml: `
automation:
  parameters:
    - {name: a, type: int64, default: 2.5}
    - {name: b, type: double, default: "x"}
    - {name: c, type: bool, default: 1}
    - {name: d, type: string, default: 5}
${PROV}
`,
    expect: [
      "error automation.parameters[0].default @3",
      "error automation.parameters[1].default @4",
      "error automation.parameters[2].default @5",
      "error automation.parameters[3].default @6",
    ],
  },
  {
    name: "parameter min/max are refused on bool and string",
    yaml: `
automation:
  parameters:
    - name: a
      type: bool
      default: false
      min: 0
    - name: b
      type: string
      default: x
      max: 1
${PROV}
`,
    expect: ["error automation.parameters[0].min @6", "error automation.parameters[1].max @10"],
  },
  {
    name: "parameter allowed_values is refused on numbers",
    yaml: `
automation:
  parameters:
    - name: a
      type: double
      default: 1
      allowed_values: ["1"]
${PROV}
`,
    expect: ["error automation.parameters[0].allowed_values @6"],
  },
  {
    name: "parameter min greater than max is an error",
    yaml: `
automation:
  parameters:
    - name: a
      type: double
      default: 1
      min: 5
      max: 0
${PROV}
`,
    expect: ["error automation.parameters[0].min @6"],
  },
  {
    name: "parameter default outside min/max is an error",
    yaml: `
automation:
  parameters:
    - name: a
      type: int64
      default: 10
      min: 0
      max: 5
${PROV}
`,
    expect: ["error automation.parameters[0].default @5"],
  },
  {
    name: "parameter default not in allowed_values is an error",
    yaml: `
automation:
  parameters:
    - name: a
      type: string
      default: z
      allowed_values: [x, y]
${PROV}
`,
    expect: ["error automation.parameters[0].default @5"],
  },
  {
    name: "duplicate parameter names are an error",
    yaml: `
automation:
  parameters:
    - {name: a, type: bool, default: true}
    - {name: a, type: bool, default: false}
${PROV}
`,
    expect: ["error automation.parameters[1].name @4"],
  },

  // --- hooks and calls -----------------------------------------------------------------------
  {
    name: "hooks by name and by id with from/to are valid",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - from: IDLE
        to: MANUAL
        calls:
          - {device_handle: p0/d0, function_name: open}
    after_transition:
      - from: ""
        to: FAULT
        fail_on_error: false
        calls:
          - {device_handle: p0/d0, function_id: 3, args: {v: "12.5"}}
`,
    expect: [],
  },
  {
    name: "hook without calls is an error",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - from: IDLE
`,
    expect: ["error automation.mode_transition_hooks.before_transition[0].calls @5"],
  },
  {
    name: "hook with empty calls is an error",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    after_transition:
      - calls: []
`,
    expect: ["error automation.mode_transition_hooks.after_transition[0].calls @5"],
  },
  {
    name: "hook from/to outside the modes and * is an error",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - from: STARTUP
        to: auto
        calls: [{device_handle: p0/d0, function_name: f}]
`,
    expect: [
      "error automation.mode_transition_hooks.before_transition[0].from @5",
      "error automation.mode_transition_hooks.before_transition[0].to @6",
    ],
  },
  {
    name: "call without device_handle is an error",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - calls:
          - function_name: f
`,
    expect: [
      "error automation.mode_transition_hooks.before_transition[0].calls[0].device_handle @6",
    ],
  },
  {
    name: "call device_handle must be provider/device",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - calls:
          - device_handle: p0
            function_name: f
`,
    expect: [
      "error automation.mode_transition_hooks.before_transition[0].calls[0].device_handle @6",
    ],
  },
  {
    name: "call device_handle naming an undeclared provider is a warning",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - calls:
          - device_handle: nope/d0
            function_name: f
`,
    expect: [
      "warning automation.mode_transition_hooks.before_transition[0].calls[0].device_handle @6",
    ],
  },
  {
    name: "call with function_id 0 and no function_name is an error",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - calls:
          - device_handle: p0/d0
            function_id: 0
`,
    expect: ["error automation.mode_transition_hooks.before_transition[0].calls[0] @6"],
  },
  {
    name: "call with a negative function_id is an error",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - calls:
          - device_handle: p0/d0
            function_id: -1
            function_name: f
`,
    expect: ["error automation.mode_transition_hooks.before_transition[0].calls[0].function_id @7"],
  },
  {
    name: "call function_id up to the uint32 maximum is valid",
    yaml: `
${PROV}
safety:
  safe_state:
    hooks: [{device_handle: p0/d0, function_id: 4294967295}]
`,
    expect: [],
  },
  {
    name: "call function_id above the uint32 maximum is an error",
    yaml: `
${PROV}
safety:
  safe_state:
    hooks:
      - device_handle: p0/d0
        function_id: 4294967296
`,
    expect: ["error safety.safe_state.hooks[0].function_id @6"],
  },
  {
    name: "call args must be scalars",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - calls:
          - device_handle: p0/d0
            function_name: f
            args:
              list: [1, 2]
              map: {a: 1}
              empty:
`,
    expect: [
      "error automation.mode_transition_hooks.before_transition[0].calls[0].args.empty @11",
      "error automation.mode_transition_hooks.before_transition[0].calls[0].args.list @9",
      "error automation.mode_transition_hooks.before_transition[0].calls[0].args.map @10",
    ],
  },
  {
    name: "call integer arg out of range is an error",
    yaml: `
${PROV}
automation:
  mode_transition_hooks:
    before_transition:
      - calls:
          - device_handle: p0/d0
            function_name: f
            args: {big: 99999999999999999999, huge: "1.0e999"}
`,
    expect: [
      "error automation.mode_transition_hooks.before_transition[0].calls[0].args.big @8",
      "error automation.mode_transition_hooks.before_transition[0].calls[0].args.huge @8",
    ],
  },
  {
    name: "hook rules apply when automation is disabled",
    yaml: `
${PROV}
automation:
  enabled: false
  mode_transition_hooks:
    before_transition:
      - calls:
          - device_handle: p0/d0
`,
    expect: ["error automation.mode_transition_hooks.before_transition[0].calls[0] @7"],
  },
  {
    name: "safety calls follow the call rules",
    yaml: `
${PROV}
safety:
  safe_state:
    hooks:
      - device_handle: p0/d0
        function_id: 0
    setpoints:
      - function_name: f
`,
    expect: [
      "error safety.safe_state.hooks[0] @5",
      "error safety.safe_state.setpoints[0].device_handle @8",
    ],
  },
  {
    name: "safety with hooks, setpoints and zero_is_safe is valid",
    yaml: `
${PROV}
safety:
  safe_state:
    hooks: [{device_handle: p0/d0, function_name: stop}]
    setpoints: [{device_handle: p0/d0, function_id: 2, args: {value: 0.0}}]
    zero_is_safe: false
`,
    expect: [],
  },

  // --- unknown keys --------------------------------------------------------------------------
  {
    name: "unknown keys are warned about at every level",
    yaml: `
${PROV}
extra: 1
runtime: {nmae: x}
polling: {interval: 5}
logging: {lvl: info}
health: {staleness: {warn: 1}}
automation:
  mode_transition_hooks:
    before_transition:
      - calls: [{device_handle: p0/d0, function_name: f, timeout: 5}]
        when: now
`,
    expect: [
      "warning automation.mode_transition_hooks.before_transition[0].calls[0].timeout @10",
      "warning automation.mode_transition_hooks.before_transition[0].when @11",
      "warning extra @2",
      "warning health.staleness.warn @6",
      "warning logging.lvl @5",
      "warning polling.interval @4",
      "warning runtime.nmae @3",
    ],
  },
  {
    name: "unknown provider and restart_policy keys are warned about",
    yaml: `
providers:
  - id: p0
    command: prov
    env: {A: 1}
    restart_policy: {enable: true}
`,
    expect: [
      "warning providers[0].env @4",
      "warning providers[0].restart_policy.enable @5",
    ],
  },
];

for (const c of CASES) {
  Deno.test(`loadConfig ${c.name}`, () => {
    const result = load(c.yaml, c.o);
    assert.deepEqual(summary(result), [...c.expect].sort());
    const hasError = c.expect.some((e) => e.startsWith("error"));
    assert.equal(result.config === null, hasError, "config is null exactly when there are errors");
  });
}
