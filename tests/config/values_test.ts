/**
 * Every configured value reaches the Config: each key set to something other than its default
 * (and at its bound where it has one) must come back as written, converted where the loader
 * converts (paths resolved, host names lower-cased, flat aliases applied).
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { load, PROV } from "./_helpers.ts";

function valid(yaml: string): Config {
  const { config, diagnostics } = load(yaml);
  assert.deepEqual(diagnostics, []);
  assert.ok(config);
  return config;
}

Deno.test("loadConfig reads every key, none left at its default", () => {
  const config = valid(`
runtime:
  name: rig-7
  shutdown_timeout_ms: 30000
  startup_timeout_ms: 5000
  data_dir: /srv/rig
http:
  enabled: true
  bind: 10.0.0.5
  port: 65535
  cors_allowed_origins: [http://a.example, "http://*.lab.local"]
  cors_allow_credentials: true
  allowed_hosts: [Rig.Local, "panel.local:9000", h, "[FE80::1]:8080"]
  thread_pool_size: 7
  auth_enabled: true
  auth_token: tok
  auth_exempt_loopback: false
  allow_insecure_bind: true
  tls_cert_path: tls/cert.pem
  tls_key_path: tls/key.pem
  tls_allow_expired_cert: true
  max_connections: 100000
  request_header_timeout_ms: 120000
  keep_alive_timeout_ms: 600000
  console_enabled: false
  metrics_enabled: false
providers:
  - id: p0
    command: prov
    args: [--port, "7"]
    timeout_ms: 100
    hello_timeout_ms: 101
    ready_timeout_ms: 1000
    restart_policy:
      enabled: true
      max_attempts: 2
      backoff_ms: [0, 50]
      timeout_ms: 1000
      success_reset_ms: 0
polling:
  interval_ms: 100
telemetry:
  enabled: true
  health_interval_ms: 0
  measurement_names: anolis
  influxdb:
    url: https://influx.example:8086
    org: o
    bucket: b
    token: t
    batch_size: 1
    flush_interval_ms: 10
    max_retry_buffer_size: 0
    queue_size: 1
logging:
  level: debug
automation:
  enabled: true
  behavior_tree: bt.xml
  tick_rate_hz: 1000
  manual_gating_policy: OVERRIDE
  mode_transition_hooks:
    before_transition:
      - {from: AUTO, to: FAULT, calls: [{device_handle: p0/m0, function_name: stop}]}
safety:
  safe_state:
    zero_is_safe: true
health:
  staleness: {warn_after_ms: 101, stale_after_ms: 102}
audit:
  max_file_bytes: 4096
  max_files: 1000
runs:
  max_run_bytes: 65536
  max_runs: 1
  max_total_bytes: 1114112
`);
  assert.deepEqual(config.runtime, {
    name: "rig-7",
    shutdownTimeoutMs: 30000,
    startupTimeoutMs: 5000,
    dataDir: "/srv/rig",
  });
  assert.deepEqual(config.http, {
    enabled: true,
    bind: "10.0.0.5",
    port: 65535,
    corsAllowedOrigins: ["http://a.example", "http://*.lab.local"],
    corsAllowCredentials: true,
    allowedHosts: ["rig.local", "panel.local:9000", "h", "[fe80::1]:8080"],
    threadPoolSize: 7,
    authEnabled: true,
    authToken: "tok",
    authExemptLoopback: false,
    tokens: [],
    allowInsecureBind: true,
    tlsCertPath: "/etc/rig/tls/cert.pem",
    tlsKeyPath: "/etc/rig/tls/key.pem",
    tlsAllowExpiredCert: true,
    maxConnections: 100000,
    requestHeaderTimeoutMs: 120000,
    keepAliveTimeoutMs: 600000,
    consoleEnabled: false,
    metricsEnabled: false,
  });
  assert.deepEqual(config.providers, [{
    id: "p0",
    command: "prov",
    args: ["--port", "7"],
    timeoutMs: 100,
    helloTimeoutMs: 101,
    readyTimeoutMs: 1000,
    restartPolicy: {
      enabled: true,
      maxAttempts: 2,
      backoffMs: [0, 50],
      timeoutMs: 1000,
      successResetMs: 0,
    },
  }]);
  assert.deepEqual(config.polling, { intervalMs: 100 });
  assert.deepEqual(config.telemetry, {
    enabled: true,
    healthIntervalMs: 0,
    measurementNames: "anolis",
    influxdb: {
      url: "https://influx.example:8086",
      org: "o",
      bucket: "b",
      token: "t",
      batchSize: 1,
      flushIntervalMs: 10,
      maxRetryBufferSize: 0,
      queueSize: 1,
    },
  });
  assert.deepEqual(config.logging, { level: "debug" });
  assert.equal(config.automation.enabled, true);
  assert.equal(config.automation.behaviorTree, "/etc/rig/bt.xml");
  assert.equal(config.automation.tickRateHz, 1000);
  assert.equal(config.automation.manualGatingPolicy, "OVERRIDE");
  assert.equal(config.safety.safeState.zeroIsSafe, true);
  assert.deepEqual(config.health, { staleness: { warnAfterMs: 101, staleAfterMs: 102 } });
  assert.deepEqual(config.audit, { maxFileBytes: 4096, maxFiles: 1000 });
  assert.deepEqual(config.runs, { maxRunBytes: 65536, maxRuns: 1, maxTotalBytes: 1114112 });
});

Deno.test("loadConfig applies every flat telemetry alias when the nested key is absent", () => {
  const { config, diagnostics } = load(`
${PROV}
telemetry:
  influx_url: http://flat:8086
  influx_org: flat-org
  influx_bucket: flat-bucket
  influx_token: flat-token
  batch_size: 7
  flush_interval_ms: 12
`);
  assert.ok(config);
  assert.deepEqual(config.telemetry.influxdb, {
    url: "http://flat:8086",
    org: "flat-org",
    bucket: "flat-bucket",
    token: "flat-token",
    batchSize: 7,
    flushIntervalMs: 12,
    maxRetryBufferSize: 1000,
    queueSize: 10000,
  });
  assert.deepEqual(
    diagnostics.map((d) => `${d.severity} ${d.path}: ${d.message}`).sort(),
    [
      ["batch_size", "batch_size"],
      ["flush_interval_ms", "flush_interval_ms"],
      ["influx_bucket", "bucket"],
      ["influx_org", "org"],
      ["influx_token", "token"],
      ["influx_url", "url"],
    ].map(([alias, nested]) =>
      `warning telemetry.${alias}: is deprecated; use telemetry.influxdb.${nested} (value applied)`
    ),
  );
});

Deno.test("loadConfig reads cors_allowed_origins as one string, a list, or the default: no origin", () => {
  const origins = (value: string, enabled = true) =>
    valid(`${PROV}\nhttp:\n  enabled: ${enabled}\n  cors_allowed_origins: ${value}\n`).http
      .corsAllowedOrigins;
  assert.deepEqual(origins("http://ui.example"), ["http://ui.example"]);
  assert.deepEqual(origins("[http://a.example, http://b.example]"), [
    "http://a.example",
    "http://b.example",
  ]);
  assert.deepEqual(origins('"*"'), ["*"]);
  // No CORS grant unless asked for (the default used to be `*`).
  assert.deepEqual(origins(""), []); // an empty YAML value: not given
  assert.deepEqual(origins("[]"), []);
  assert.deepEqual(valid(PROV).http.corsAllowedOrigins, []);
  // With the API off, an empty string is no error either.
  assert.deepEqual(origins('""', false), []);
});

Deno.test("loadConfig reads http.allowed_hosts as one string or a list, lower-cased", () => {
  const hosts = (value: string) =>
    valid(`${PROV}\nhttp:\n  allowed_hosts: ${value}\n`).http.allowedHosts;
  assert.deepEqual(hosts("Rig.Local:8080"), ["rig.local:8080"]);
  assert.deepEqual(hosts('[Rig.Local, x, rig_1.lab-2.local, 10.0.0.5:80, "[::1]"]'), [
    "rig.local",
    "x",
    "rig_1.lab-2.local",
    "10.0.0.5:80",
    "[::1]",
  ]);
  assert.deepEqual(hosts(""), []);
  assert.deepEqual(hosts("[]"), []);
});
