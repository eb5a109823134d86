import assert from "node:assert/strict";
import {
  type CallArgValue,
  type Config,
  loadConfig,
  MAX_YAML_DEPTH,
} from "../../src/config/mod.ts";
import { load, PROV } from "./_helpers.ts";

function valid(yaml: string): Config {
  const { config, diagnostics } = load(yaml);
  assert.deepEqual(diagnostics, []);
  assert.ok(config);
  return config;
}

Deno.test("loadConfig merges every default into a minimal config", () => {
  const config = valid(PROV);
  assert.equal(config.configPath, "/etc/rig/runtime.yaml");
  assert.equal(config.configDir, "/etc/rig");
  assert.deepEqual(config.runtime, {
    name: "",
    shutdownTimeoutMs: 2000,
    startupTimeoutMs: 30000,
    dataDir: "/var/lib/rig/anolis-data",
  });
  assert.deepEqual(config.http, {
    enabled: true,
    bind: "127.0.0.1",
    port: 8080,
    corsAllowedOrigins: [],
    corsAllowCredentials: false,
    allowedHosts: [],
    threadPoolSize: 40,
    authEnabled: false,
    authToken: "",
    authExemptLoopback: true,
    tokens: [],
    allowInsecureBind: false,
    tlsCertPath: null,
    tlsKeyPath: null,
    tlsAllowExpiredCert: false,
    maxConnections: 128,
    requestHeaderTimeoutMs: 10000,
    keepAliveTimeoutMs: 30000,
    consoleEnabled: true,
    metricsEnabled: true,
  });
  assert.deepEqual(config.providers, [{
    id: "p0",
    command: "prov",
    args: [],
    timeoutMs: 5000,
    helloTimeoutMs: 5000,
    readyTimeoutMs: 60000,
    restartPolicy: {
      enabled: false,
      maxAttempts: 3,
      backoffMs: [100, 1000, 5000],
      timeoutMs: 30000,
      successResetMs: 1000,
    },
  }]);
  assert.deepEqual(config.polling, { intervalMs: 500 });
  assert.deepEqual(config.telemetry, {
    enabled: false,
    healthIntervalMs: 15000,
    measurementNames: "runtime",
    influxdb: {
      url: "http://localhost:8086",
      org: "anolis",
      bucket: "anolis",
      token: "",
      batchSize: 100,
      flushIntervalMs: 1000,
      maxRetryBufferSize: 1000,
      queueSize: 10000,
    },
  });
  assert.deepEqual(config.logging, { level: "info" });
  assert.deepEqual(config.automation, {
    enabled: false,
    behaviorTree: null,
    tickRateHz: 10,
    manualGatingPolicy: "BLOCK",
    parameters: [],
    modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
  });
  assert.deepEqual(config.safety, {
    present: false,
    safeState: { hooks: [], setpoints: [], zeroIsSafe: false, expect: [], verifyTimeoutMs: 2000 },
  });
  assert.deepEqual(config.health, { staleness: { warnAfterMs: 0, staleAfterMs: 0 } });
});

Deno.test("loadConfig returns a deeply frozen Config", () => {
  const config = valid(`
${PROV}
automation:
  parameters: [{name: a, type: double, default: 1}]
`);
  assert.ok(Object.isFrozen(config));
  assert.ok(Object.isFrozen(config.providers));
  assert.ok(Object.isFrozen(config.providers[0]!.restartPolicy.backoffMs));
  assert.ok(Object.isFrozen(config.automation.parameters[0]));
  assert.throws(() => {
    (config.http as { port: number }).port = 1;
  }, TypeError);
});

Deno.test("loadConfig resolves relative paths against the config file's folder", () => {
  const { config, diagnostics } = load(
    `
runtime:
  data_dir: data
http:
  tls_cert_path: tls/cert.pem
  tls_key_path: /abs/key.pem
providers:
  - {id: a, command: ./bin/prov-a}
  - {id: b, command: /opt/prov-b}
  - {id: c, command: prov}
automation:
  enabled: true
  behavior_tree: ../trees/main.xml
  mode_transition_hooks:
    before_transition: [{from: AUTO, to: FAULT, calls: [{device_handle: a/d, function_name: stop}]}]
`,
    {
      files: [
        "/etc/rig/tls/cert.pem",
        "/abs/key.pem",
        "/etc/rig/bin/prov-a",
        "/opt/prov-b",
        "/etc/trees/main.xml",
      ],
    },
  );
  assert.deepEqual(diagnostics, []);
  assert.ok(config);
  assert.equal(config.runtime.dataDir, "/etc/rig/data");
  assert.equal(config.http.tlsCertPath, "/etc/rig/tls/cert.pem");
  assert.equal(config.http.tlsKeyPath, "/abs/key.pem");
  assert.deepEqual(config.providers.map((p) => p.command), [
    "/etc/rig/bin/prov-a",
    "/opt/prov-b",
    "prov", // bare names are looked up on PATH by the runtime
  ]);
  assert.equal(config.automation.behaviorTree, "/etc/trees/main.xml");
});

Deno.test("loadConfig applies the behavior_tree_path alias", () => {
  const { config, diagnostics } = load(`
${PROV}
automation:
  enabled: true
  behavior_tree_path: bt.xml
  mode_transition_hooks:
    after_transition: [{from: "*", to: FAULT, calls: [{device_handle: p0/d, function_name: stop}]}]
`);
  assert.equal(diagnostics.length, 1);
  assert.equal(diagnostics[0]!.severity, "warning");
  assert.match(diagnostics[0]!.message, /deprecated/);
  assert.equal(config?.automation.behaviorTree, "/etc/rig/bt.xml");
});

Deno.test("loadConfig applies flat telemetry aliases and lets nested keys win", () => {
  const { config, diagnostics } = load(`
${PROV}
telemetry:
  influx_url: http://flat:8086
  influx_bucket: flat
  batch_size: 7
  influxdb:
    bucket: nested
`);
  assert.ok(config);
  assert.equal(config.telemetry.influxdb.url, "http://flat:8086");
  assert.equal(config.telemetry.influxdb.batchSize, 7);
  assert.equal(config.telemetry.influxdb.bucket, "nested");
  const bucket = diagnostics.find((d) => d.path === "telemetry.influx_bucket");
  assert.equal(bucket?.severity, "warning");
  assert.match(bucket?.message ?? "", /ignored.*telemetry\.influxdb\.bucket/);
  assert.deepEqual(diagnostics.map((d) => d.severity), ["warning", "warning", "warning"]);
});

Deno.test("loadConfig converts hook and safety args per scalar text, quotes not significant", () => {
  const config = valid(`
${PROV}
safety:
  safe_state:
    hooks:
      - device_handle: p0/d0
        function_id: 1
        args:
          a: "120"
          b: 120
          c: "0015"
          d: "+42"
          e: "12.5"
          f: 1.5e3
          g: "1e3"
          h: 1e3
          i: "true"
          j: True
          k: open_loop
          l: -7
`);
  const args = config.safety.safeState.hooks[0]!.args;
  const expected: Record<string, CallArgValue> = {
    a: { type: "int64", int64: 120 },
    b: { type: "int64", int64: 120 },
    c: { type: "int64", int64: 15 },
    d: { type: "int64", int64: 42 },
    e: { type: "double", double: 12.5 },
    f: { type: "double", double: 1500 },
    g: { type: "string", string: "1e3" },
    h: { type: "string", string: "1e3" },
    i: { type: "bool", bool: true },
    j: { type: "string", string: "True" },
    k: { type: "string", string: "open_loop" },
    l: { type: "int64", int64: -7 },
  };
  assert.deepEqual(args, expected);
  assert.equal(config.safety.present, true);
  assert.equal(config.safety.safeState.hooks[0]!.path, "safety.safe_state.hooks[0]");
});

Deno.test("loadConfig normalises empty hook from/to to * and defaults fail_on_error to true", () => {
  const config = valid(`
${PROV}
automation:
  mode_transition_hooks:
    after_transition:
      - from:
        to: ""
        calls: [{device_handle: p0/d0, function_name: f}]
      - from: AUTO
        to: FAULT
        fail_on_error: false
        calls: [{device_handle: p0/d0, function_id: 4}]
`);
  const [any, fault] = config.automation.modeTransitionHooks.afterTransition;
  assert.equal(any!.from, "*");
  assert.equal(any!.to, "*");
  assert.equal(any!.failOnError, true);
  assert.equal(any!.calls[0]!.functionId, 0);
  assert.equal(any!.calls[0]!.functionName, "f");
  assert.equal(fault!.from, "AUTO");
  assert.equal(fault!.to, "FAULT");
  assert.equal(fault!.failOnError, false);
  assert.equal(fault!.path, "automation.mode_transition_hooks.after_transition[1]");
});

Deno.test("loadConfig reads parameters with their bounds", () => {
  const config = valid(`
${PROV}
automation:
  parameters:
    - {name: t, type: double, default: 40, min: 0, max: 120}
    - {name: r, type: string, default: a, allowed_values: [a, b]}
`);
  assert.deepEqual(config.automation.parameters, [
    { name: "t", type: "double", default: 40, min: 0, max: 120, allowedValues: [] },
    { name: "r", type: "string", default: "a", allowedValues: ["a", "b"] },
  ]);
});

Deno.test("loadConfig reports every diagnostic in file order with line and column", () => {
  const { config, diagnostics } = load(`
runtime:
  shutdown_timeout_ms: 1
polling:
  interval_ms: 1
providers:
  - id: p0
    command: prov
    restart_policy:
      enabled: true
      max_attempts: 3
      backoff_ms: [1, 2]
      timeout_ms: 30000
`);
  assert.equal(config, null);
  assert.deepEqual(
    diagnostics.map((d) => [d.severity, d.path, d.line, d.column]),
    [
      ["error", "runtime.shutdown_timeout_ms", 2, 3],
      ["error", "polling.interval_ms", 4, 3],
      ["error", "providers[0].restart_policy.backoff_ms", 11, 7],
    ],
  );
  assert.equal(diagnostics[2]!.message, "has 2 entries, max_attempts is 3");
  assert.equal(diagnostics[0]!.file, "/etc/rig/runtime.yaml");
});

Deno.test("loadConfig names the first definition of a duplicate key", () => {
  const { diagnostics } = load(`
${PROV}
logging:
  level: info
  level: debug
`);
  assert.equal(diagnostics.length, 1);
  assert.deepEqual([diagnostics[0]!.path, diagnostics[0]!.line, diagnostics[0]!.column], [
    "logging.level",
    4,
    3,
  ]);
  assert.equal(
    diagnostics[0]!.message,
    "duplicate key (first defined on line 3, column 3): this later copy is the one read",
  );
});

Deno.test("loadConfig suggests the closest known key for a misspelt one", () => {
  const { diagnostics } = load(`
${PROV}
polling:
  intervl_ms: 500
`);
  assert.equal(diagnostics[0]!.severity, "warning");
  assert.match(diagnostics[0]!.message, /unknown key 'intervl_ms' will be ignored.*interval_ms/);
});

Deno.test("loadConfig reports a YAML syntax error with its position and no config", () => {
  const { config, diagnostics } = load(`${PROV}\nhttp:\n  port: "8080\n`);
  assert.equal(config, null);
  assert.equal(diagnostics.length, 1);
  assert.equal(diagnostics[0]!.severity, "error");
  assert.match(diagnostics[0]!.message, /^YAML syntax error/);
  assert.ok(diagnostics[0]!.line >= 3);
});

Deno.test("loadConfig reports collections nested too deeply as a diagnostic at the level past MAX_YAML_DEPTH, not a thrown RangeError", () => {
  // 100 KB of `- - - ...`: 50,000 sequences, one inside the other, on one line. The parse stops
  // at the first level past the limit (tests/config/yaml_depth_test.ts), before any recursive walk.
  const { config, diagnostics } = load(`x:\n  ${"- ".repeat(50_000)}1\n${PROV}\n`);
  assert.equal(config, null);
  // Level 1 is the root mapping: the sequence of level MAX_YAML_DEPTH + 1 is the
  // MAX_YAML_DEPTH-th `- `, at column 3 + 2 x (MAX_YAML_DEPTH - 1).
  assert.deepEqual(
    diagnostics.map((d) => [d.severity, d.path, d.line, d.column, d.message]),
    [[
      "error",
      "",
      2,
      3 + 2 * (MAX_YAML_DEPTH - 1),
      `YAML error: sequences and mappings are nested more than ${MAX_YAML_DEPTH} levels deep`,
    ]],
  );
});

Deno.test("loadConfig accepts the shipped example configurations", async () => {
  const dir = new URL("../../examples/", import.meta.url).pathname;
  const exists = (p: string) => {
    try {
      return Deno.statSync(p).isFile;
    } catch {
      return false;
    }
  };
  for (const name of ["minimal.yaml", "demo.yaml", "full.yaml", "alarms.yaml"]) {
    const path = `${dir}${name}`;
    const { config, diagnostics } = loadConfig(await Deno.readTextFile(path), {
      path,
      mode: "check",
      env: {},
      fileExists: exists,
      commandExists: (c) => c === "deno",
      cwd: dir,
    });
    assert.deepEqual(diagnostics.filter((d) => d.severity === "error"), [], name);
    assert.ok(config, name);
    if (name === "full.yaml") {
      // Its second provider is deliberately absent on a build machine.
      assert.deepEqual(diagnostics.map((d) => d.path), ["providers[1].command"]);
    } else {
      assert.deepEqual(diagnostics, [], name);
    }
  }
});
