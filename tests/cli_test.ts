/** The `runtime` command line, run as a real child process (`deno run -A src/main.ts ...`). */
import assert from "node:assert/strict";
import { runCli, runCliOnFreePort, safetySection, withFiles } from "./helpers/cli.ts";
import { freePort, startRuntimeChildOnFreePort } from "./helpers/runtime_process.ts";
import { EXIT_CODE_DESCRIPTIONS } from "../src/app/exit_codes.ts";
import {
  ADPP_PROTOCOL_VERSION,
  ADPP_SCHEMA_VERSION,
  HTTP_CONTRACT_VERSION,
  RUNTIME_VERSION,
} from "../src/common/mod.ts";
import { apiFetch } from "./helpers/openapi_check.ts";

const VALID = `providers: [{id: p0, command: deno}]\n${safetySection()}`;
const INVALID = `runtime:
  mode: AUTO
polling:
  interval_ms: 5
  speed: 3
providers: [{id: p0, command: deno}]
`;
const AUTH_NO_TOKEN = `http:
  auth_enabled: true
providers: [{id: p0, command: /nonexistent/provider}]
`;

Deno.test("runtime --check-config exits 0 on a valid file and prints the summary", async () => {
  await withFiles({ "ok.yaml": VALID }, async (dir) => {
    const r = await runCli(["--check-config", "ok.yaml"], { cwd: dir });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, "ok.yaml: 0 errors, 0 warnings\n");
  });
});

Deno.test("runtime --check-config exits 1 and prints every diagnostic as FILE:LINE:COL", async () => {
  await withFiles({ "bad.yaml": INVALID }, async (dir) => {
    const r = await runCli(["--check-config", "bad.yaml"], { cwd: dir });
    assert.equal(r.code, 1);
    const lines = r.stdout.trimEnd().split("\n");
    assert.deepEqual(lines.map((l) => l.split(": ").slice(0, 3).join(": ")), [
      "bad.yaml:2:3: error: runtime.mode",
      "bad.yaml:4:3: error: polling.interval_ms",
      "bad.yaml:5:3: warning: polling.speed",
      "bad.yaml: 2 errors, 1 warning",
    ]);
  });
});

Deno.test("runtime --check-config --format json prints one JSON document", async () => {
  await withFiles({ "bad.yaml": INVALID }, async (dir) => {
    const r = await runCli(["--check-config", "bad.yaml", "--format", "json"], { cwd: dir });
    assert.equal(r.code, 1);
    const doc = JSON.parse(r.stdout);
    assert.equal(doc.file, "bad.yaml");
    assert.equal(doc.valid, false);
    assert.equal(doc.errors, 2);
    assert.equal(doc.warnings, 1);
    assert.deepEqual(doc.diagnostics[0], {
      severity: "error",
      path: "runtime.mode",
      line: 2,
      column: 3,
      message: "is not configurable; the runtime always starts in IDLE (use POST /v0/mode)",
      file: "bad.yaml",
    });
  });
});

Deno.test("runtime --check-config --format=json reports a valid file as valid", async () => {
  await withFiles({ "ok.yaml": VALID }, async (dir) => {
    const r = await runCli(["--check-config=ok.yaml", "--format=json"], { cwd: dir });
    assert.equal(r.code, 0);
    assert.deepEqual(JSON.parse(r.stdout), {
      file: "ok.yaml",
      valid: true,
      errors: 0,
      warnings: 0,
      diagnostics: [],
    });
  });
});

Deno.test("runtime --check-config accepts telemetry.measurement_names anolis and points at an unknown one", async () => {
  const names = (v: string) => `telemetry:\n  enabled: false\n  measurement_names: ${v}\n${VALID}`;
  await withFiles({ "anolis.yaml": names("anolis"), "bad.yaml": names("influx") }, async (dir) => {
    const ok = await runCli(["--check-config", "anolis.yaml"], { cwd: dir });
    assert.equal(ok.code, 0, ok.stdout);
    assert.equal(ok.stdout, "anolis.yaml: 0 errors, 0 warnings\n");
    const bad = await runCli(["--check-config", "bad.yaml"], { cwd: dir });
    assert.equal(bad.code, 1);
    assert.equal(
      bad.stdout,
      'bad.yaml:3:3: error: telemetry.measurement_names: must be one of runtime, anolis, got "influx"\n' +
        "bad.yaml: 1 error, 0 warnings\n",
    );
  });
});

Deno.test("runtime --check-config exits 2 when the file cannot be read", async () => {
  await withFiles({}, async (dir) => {
    const r = await runCli(["--check-config", "missing.yaml"], { cwd: dir });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /cannot read config file missing\.yaml/);
    assert.equal(r.stdout, "");
  });
});

Deno.test("runtime --check-config warns about a missing token, start-up refuses it", async () => {
  await withFiles({ "auth.yaml": AUTH_NO_TOKEN }, async (dir) => {
    const check = await runCli(["--check-config", "auth.yaml"], { cwd: dir });
    assert.equal(check.code, 0);
    assert.match(check.stdout, /auth\.yaml:2:3: warning: http\.auth_enabled: .*RUNTIME_API_TOKEN/);
    const start = await runCli(["--config", "auth.yaml"], { cwd: dir });
    assert.equal(start.code, 1);
    assert.match(start.stderr, /auth\.yaml:2:3: error: http\.auth_enabled/);
    const withEnv = await runCliOnFreePort(["--config", "auth.yaml"], {
      cwd: dir,
      env: { RUNTIME_API_TOKEN: "s3cret" },
    });
    // Validation passes with the token from the environment; the service then fails to start
    // because the provider does not exist (exit 3 = start-up failure, not a config error).
    assert.equal(withEnv.code, 3, withEnv.stderr);
    assert.match(withEnv.stderr, /start-up failed: .*p0: cannot start provider/);
    assert.ok(!(withEnv.stdout + withEnv.stderr).includes("s3cret"), "the token is never printed");
  });
});

Deno.test("runtime --check-config reads http.tokens[].token_env from the environment and reports problems as FILE:LINE:COL", async () => {
  const yaml = `http:
  auth_enabled: true
  tokens:
    - {name: dash, role: viewer, token_env: RUNTIME_TOKEN_TEST_DASH}
    - {name: dash, role: operator, token: operator-token-8b21e0d4a9c6}
providers: [{id: p0, command: /nonexistent/provider}]
`;
  await withFiles({ "tokens.yaml": yaml }, async (dir) => {
    const unset = await runCli(["--check-config", "tokens.yaml"], { cwd: dir });
    assert.equal(unset.code, 1);
    assert.match(
      unset.stdout,
      /tokens\.yaml:4:34: warning: http\.tokens\[0\]\.token_env: environment variable RUNTIME_TOKEN_TEST_DASH is not set/,
    );
    assert.match(
      unset.stdout,
      /tokens\.yaml:5:8: error: http\.tokens\[1\]\.name: duplicate token name 'dash'/,
    );
    const set = await runCli(["--check-config", "tokens.yaml"], {
      cwd: dir,
      env: { RUNTIME_TOKEN_TEST_DASH: "short" },
    });
    assert.match(
      set.stdout,
      /tokens\.yaml:4:34: warning: http\.tokens\[0\]\.token_env: token 'dash' is shorter than 16/,
    );
    assert.doesNotMatch(set.stdout, /is not set/);
  });
});

Deno.test("runtime --config exits 1 with the diagnostics on stderr", async () => {
  await withFiles({ "bad.yaml": INVALID }, async (dir) => {
    const r = await runCli(["--config", "bad.yaml"], { cwd: dir });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /bad\.yaml:2:3: error: runtime\.mode/);
    assert.match(r.stderr, /refusing to start: bad\.yaml: 2 errors, 1 warning/);
  });
});

Deno.test("runtime --version prints the runtime, HTTP contract and ADPP versions", async () => {
  const r = await runCli(["--version"]);
  assert.equal(r.code, 0);
  assert.equal(
    r.stdout,
    `runtime ${RUNTIME_VERSION}\nHTTP contract ${HTTP_CONTRACT_VERSION}\n` +
      `ADPP protocol ${ADPP_PROTOCOL_VERSION} (schema ${ADPP_SCHEMA_VERSION})\n`,
  );
  // The versions followed, pinned: a bump is deliberate and goes with docs/migrating-from-anolis.md.
  assert.match(r.stdout, /^HTTP contract 0\.1\.41$/m);
  assert.match(r.stdout, /^ADPP protocol v1 \(schema 1\.8\.0\)$/m);
  // What docs/deployment.md shows `--version` printing is what it prints (after the binary name).
  const deployment = await Deno.readTextFile(new URL("../docs/deployment.md", import.meta.url));
  const shown = deployment.match(/\$ dist\/runtime --version\n([^`]*)```/);
  assert.ok(shown, "docs/deployment.md shows `dist/runtime --version`");
  assert.equal(shown[1], r.stdout);
});

Deno.test("runtime --help prints the usage on stdout", async () => {
  const r = await runCli(["--help"]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^Usage:/);
  assert.match(r.stdout, /--check-config FILE/);
  assert.match(r.stdout, /--port PORT/);
  assert.match(r.stdout, /RUNTIME_HTTP_PORT/);
});

Deno.test("runtime --help lists every exit code with its meaning", async () => {
  const r = await runCli(["--help"]);
  assert.equal(r.code, 0);
  const codes = Object.entries(EXIT_CODE_DESCRIPTIONS);
  assert.equal(codes.length, 5);
  for (const [code, text] of codes) {
    assert.ok(r.stdout.includes(`\n  ${code}  ${text.split("\n")[0]}`), `exit code ${code} listed`);
  }
});

const PORT_CONFIG = (port: number) =>
  `http:\n  port: ${port}\nproviders:\n  - id: sim0\n    command: deno\n    args: [run, --quiet, ` +
  `--allow-read, --allow-env, ${
    new URL("../examples/providers/sim/main.ts", import.meta.url).pathname
  }, --config, ${new URL("../examples/providers/sim/sim-inert.yaml", import.meta.url).pathname}]\n`;

Deno.test("runtime --port serves the API on that port instead of http.port, and wins over RUNTIME_HTTP_PORT", async () => {
  await withFiles({}, async (dir) => {
    // The port asserted is --port's: a start whose port a stranger took is tried again with
    // another --port (and another file and variable port, written for that start).
    let [file, env] = [0, 0];
    const rt = await startRuntimeChildOnFreePort(async (flag) => {
      [file, env] = [freePort(), freePort()];
      await Deno.writeTextFile(`${dir}/port.yaml`, PORT_CONFIG(file));
      return {
        config: `${dir}/port.yaml`,
        port: flag,
        args: ["--port", String(flag)],
        env: { RUNTIME_HTTP_PORT: String(env) },
        cwd: dir,
      };
    });
    const flag = rt.port;
    try {
      const r = await apiFetch(`${rt.base}/v0/mode`);
      assert.equal((await r.json()).mode, "IDLE");
      for (const other of [file, env]) {
        await assert.rejects(fetch(`http://127.0.0.1:${other}/v0/mode`), `nothing on ${other}`);
      }
      assert.match(rt.stderr(), new RegExp(`http\\.port ${flag} \\(from --port\\)`));
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
    }
  });
});

Deno.test("runtime takes the API port from RUNTIME_HTTP_PORT with the compiled binary's permissions", async () => {
  await withFiles({}, async (dir) => {
    // The port asserted is RUNTIME_HTTP_PORT's: a start whose port a stranger took is tried again
    // with another one (and another file port, written for that start).
    let file = 0;
    // The single binary reads only the variables of the compile task's --allow-env list.
    const rt = await startRuntimeChildOnFreePort(async (env) => {
      file = freePort();
      await Deno.writeTextFile(`${dir}/port.yaml`, PORT_CONFIG(file));
      return {
        config: `${dir}/port.yaml`,
        port: env,
        env: { RUNTIME_HTTP_PORT: String(env) },
        cwd: dir,
      };
    });
    const env = rt.port;
    try {
      const r = await apiFetch(`${rt.base}/v0/mode`);
      assert.equal((await r.json()).mode, "IDLE");
      await assert.rejects(fetch(`http://127.0.0.1:${file}/v0/mode`), `nothing on ${file}`);
      assert.match(rt.stderr(), new RegExp(`http\\.port ${env} \\(from RUNTIME_HTTP_PORT\\)`));
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
    }
  });
});

Deno.test("runtime exits 2 naming RUNTIME_HTTP_PORT when it is not a port", async () => {
  // A provider that cannot start: should the variable be ignored, the start fails at once (3).
  const config =
    `http:\n  port: ${freePort()}\nproviders: [{id: p0, command: /nonexistent/provider}]\n`;
  await withFiles({ "port.yaml": config }, async (dir) => {
    const r = await runCli(["--config", "port.yaml"], {
      cwd: dir,
      env: { RUNTIME_HTTP_PORT: "eighty" },
    });
    assert.equal(r.code, 2);
    assert.match(
      r.stderr,
      /^runtime: RUNTIME_HTTP_PORT must be a TCP port from 1 to 65535, got "eighty"\n/,
    );
  });
});

const USAGE_ERRORS: { name: string; args: string[] }[] = [
  { name: "an unknown flag", args: ["--frobnicate"] },
  { name: "a missing value", args: ["--check-config"] },
  { name: "no command", args: [] },
  { name: "a positional argument", args: ["config.yaml"] },
  { name: "an unknown --format", args: ["--check-config", "x.yaml", "--format", "xml"] },
  { name: "an unknown --log-level", args: ["--config", "x.yaml", "--log-level", "loud"] },
  { name: "--port 0", args: ["--config", "x.yaml", "--port", "0"] },
  { name: "--port 65536", args: ["--config", "x.yaml", "--port", "65536"] },
  { name: "a --port that is not a number", args: ["--config", "x.yaml", "--port", "80a"] },
  { name: "--port with --check-config", args: ["--check-config", "x.yaml", "--port", "8080"] },
  {
    name: "both --config and --check-config",
    args: ["--config", "a.yaml", "--check-config", "b.yaml"],
  },
];

for (const c of USAGE_ERRORS) {
  Deno.test(`runtime exits 2 with the usage on stderr for ${c.name}`, async () => {
    const r = await runCli(c.args);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^runtime: .*\n\nUsage:/);
    assert.equal(r.stdout, "");
  });
}

const TREE = '<root BTCPP_format="4" main_tree_to_execute="T">' +
  '<BehaviorTree ID="T"><AlwaysSuccess/></BehaviorTree></root>\n';

/** A configuration with automation enabled and the given mode_transition_hooks (YAML lines). */
function automationConfig(hooks: string): string {
  return `providers: [{id: p0, command: deno}]
automation:
  enabled: true
  behavior_tree: tree.xml
${hooks}${safetySection()}`;
}

const hook = (phase: string, from: string, to: string) =>
  `  mode_transition_hooks:
    ${phase}:
      - from: "${from}"
        to: "${to}"
        calls: [{device_handle: p0/d0, function_name: stop}]
`;

const AUTO_GATE_CASES: { name: string; hooks: string; warned: boolean }[] = [
  { name: "no hook at all", hooks: "", warned: true },
  {
    name: "only an AUTO -> IDLE hook",
    hooks: hook("before_transition", "AUTO", "IDLE"),
    warned: true,
  },
  { name: "only a * -> MANUAL hook", hooks: hook("after_transition", "*", "MANUAL"), warned: true },
  {
    name: "only a MANUAL -> FAULT hook",
    hooks: hook("before_transition", "MANUAL", "FAULT"),
    warned: true,
  },
  {
    name: "an AUTO -> FAULT hook",
    hooks: hook("before_transition", "AUTO", "FAULT"),
    warned: false,
  },
  { name: "a * -> FAULT hook", hooks: hook("after_transition", "*", "FAULT"), warned: false },
  { name: "an AUTO -> * hook", hooks: hook("before_transition", "AUTO", "*"), warned: false },
  { name: "a * -> * hook", hooks: hook("after_transition", "*", "*"), warned: false },
];

for (const c of AUTO_GATE_CASES) {
  Deno.test(`runtime --check-config ${c.warned ? "warns" : "does not warn"} that AUTO will be refused with ${c.name}`, async () => {
    await withFiles({ "auto.yaml": automationConfig(c.hooks), "tree.xml": TREE }, async (dir) => {
      const r = await runCli(["--check-config", "auto.yaml"], { cwd: dir });
      assert.equal(r.code, 0, r.stdout + r.stderr);
      const warning = r.stdout.split("\n").filter((l) => l.includes("covers AUTO -> FAULT"));
      if (!c.warned) {
        assert.deepEqual(warning, []);
        assert.match(r.stdout, /auto\.yaml: 0 errors, 0 warnings/);
        return;
      }
      assert.equal(warning.length, 1, r.stdout);
      assert.match(
        warning[0]!,
        /^auto\.yaml:2:1: warning: automation: is enabled but no mode_transition_hooks entry covers AUTO -> FAULT .*POST \/v0\/mode AUTO will be refused/,
      );
    });
  });
}

Deno.test("runtime --check-config does not warn about the AUTO hook when automation is disabled", async () => {
  await withFiles({
    "off.yaml":
      `providers: [{id: p0, command: deno}]\nautomation:\n  enabled: false\n${safetySection()}`,
  }, async (dir) => {
    const r = await runCli(["--check-config", "off.yaml"], { cwd: dir });
    assert.equal(r.code, 0);
    assert.equal(r.stdout, "off.yaml: 0 errors, 0 warnings\n");
  });
});
