/**
 * `--check-config` away from the target (docs/deployment.md): what depends on the checking machine
 * — the behavior tree file, the TLS files, the provider command, the API token from the environment
 * — is a warning by default, so a pipeline can validate a configuration for another machine
 * (anolis's own "valid" fixtures name trees that are not there); `--strict` makes each an error
 * (the systemd unit's ExecStartPre uses it); and the runtime itself still refuses to start on them.
 */
import assert from "node:assert/strict";
import { runCli, safetySection, withFiles } from "./helpers/cli.ts";
import { selfSignedCert } from "./http/_tls_certs.ts";

const TREE = '<root BTCPP_format="4" main_tree_to_execute="T">' +
  '<BehaviorTree ID="T"><AlwaysSuccess/></BehaviorTree></root>\n';

/** Every environment problem at once, each on its own line. */
const AWAY = `http:
  tls_cert_path: tls/cert.pem
  tls_key_path: tls/key.pem
  auth_enabled: true
providers:
  - id: p0
    command: bin/provider
  - id: p1
    command: no-such-provider-on-path
automation:
  enabled: true
  behavior_tree: trees/main.xml
  mode_transition_hooks:
    before_transition:
      - {from: AUTO, to: FAULT, calls: [{device_handle: p0/d0, function_name: stop}]}
${safetySection()}`;

const PROBLEMS = [
  ["away.yaml:2:3", "http.tls_cert_path", /file not found: .*\/tls\/cert\.pem/],
  ["away.yaml:3:3", "http.tls_key_path", /file not found: .*\/tls\/key\.pem/],
  ["away.yaml:4:3", "http.auth_enabled", /RUNTIME_API_TOKEN/],
  ["away.yaml:7:5", "providers[0].command", /file not found: .*\/bin\/provider/],
  ["away.yaml:9:5", "providers[1].command", /"no-such-provider-on-path" not found on PATH/],
  ["away.yaml:12:3", "automation.behavior_tree", /file not found: .*\/trees\/main\.xml/],
] as const;

function assertProblems(stdout: string, severity: "error" | "warning"): void {
  const lines = stdout.trimEnd().split("\n");
  assert.equal(lines.length, PROBLEMS.length + 1, stdout);
  PROBLEMS.forEach(([where, key, message], i) => {
    assert.ok(lines[i]!.startsWith(`${where}: ${severity}: ${key}: `), `${lines[i]}\n${stdout}`);
    assert.match(lines[i]!, message);
  });
}

Deno.test("runtime --check-config warns about every file, command and token the checking machine lacks, and exits 0", async () => {
  await withFiles({ "away.yaml": AWAY }, async (dir) => {
    const r = await runCli(["--check-config", "away.yaml"], { cwd: dir });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assertProblems(r.stdout, "warning");
    assert.match(r.stdout, /\naway\.yaml: 0 errors, 6 warnings\n$/);
  });
});

Deno.test("runtime --check-config --strict makes each of them an error, as text and as JSON", async () => {
  await withFiles({ "away.yaml": AWAY }, async (dir) => {
    const r = await runCli(["--check-config", "away.yaml", "--strict"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assertProblems(r.stdout, "error");
    assert.match(r.stdout, /\naway\.yaml: 6 errors, 0 warnings\n$/);
    const j = await runCli(["--strict", "--check-config", "away.yaml", "--format", "json"], {
      cwd: dir,
    });
    assert.equal(j.code, 1);
    const doc = JSON.parse(j.stdout);
    assert.equal(doc.valid, false);
    assert.deepEqual(
      doc.diagnostics.map((d: { severity: string; path: string }) => `${d.severity} ${d.path}`),
      PROBLEMS.map(([, key]) => `error ${key}`),
    );
  });
});

Deno.test("runtime --check-config --strict passes when the machine has everything", async () => {
  await withFiles({
    "away.yaml": AWAY,
    "bin/provider": "#!/bin/sh\n",
    "trees/main.xml": TREE,
  }, async (dir) => {
    // Everything includes TLS files a start can serve (their contents are checked too) and a
    // provider command that can be executed.
    await Deno.chmod(`${dir}/bin/provider`, 0o755);
    await Deno.mkdir(`${dir}/tls`);
    await selfSignedCert(`${dir}/tls`, 30);
    const yaml = AWAY.replace("no-such-provider-on-path", "sh");
    await Deno.writeTextFile(`${dir}/away.yaml`, yaml);
    const r = await runCli(["--check-config", "away.yaml", "--strict"], {
      cwd: dir,
      env: { RUNTIME_API_TOKEN: "t0ken" },
    });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.equal(r.stdout, "away.yaml: 0 errors, 0 warnings\n");
  });
});

Deno.test("runtime --check-config --strict refuses a provider command file that is not executable, naming its key at its line", async () => {
  const yaml = `providers:\n  - id: p0\n    command: bin/provider\n${safetySection()}`;
  await withFiles({ "x.yaml": yaml, "bin/provider": "#!/bin/sh\n" }, async (dir) => {
    await Deno.chmod(`${dir}/bin/provider`, 0o644);
    const r = await runCli(["--check-config", "x.yaml", "--strict"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      /^x\.yaml:3:5: error: providers\[0\]\.command: is not executable: .*\/bin\/provider \(mode 0644\)\n/,
    );
    assert.match(r.stdout, /\nx\.yaml: 1 error, 0 warnings\n$/);
    // Executable, it passes.
    await Deno.chmod(`${dir}/bin/provider`, 0o755);
    const ok = await runCli(["--check-config", "x.yaml", "--strict"], { cwd: dir });
    assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  });
});

Deno.test("runtime --check-config without --strict still verifies a behavior tree that is there", async () => {
  await withFiles({ "away.yaml": AWAY, "trees/main.xml": "<root>" }, async (dir) => {
    const r = await runCli(["--check-config", "away.yaml"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /trees\/main\.xml:\d+:\d+: error: /);
  });
});

Deno.test("runtime --config still refuses to start on a missing behavior tree or TLS file (exit 1)", async () => {
  const cases: [string, string, RegExp][] = [
    [
      "tree",
      "providers: [{id: p0, command: sh}]\nautomation: {enabled: true, behavior_tree: nope.xml}\n",
      /tree\.yaml:2:\d+: error: automation\.behavior_tree: file not found/,
    ],
    [
      "tls",
      "providers: [{id: p0, command: sh}]\nhttp: {tls_cert_path: c.pem, tls_key_path: k.pem}\n",
      /tls\.yaml:2:\d+: error: http\.tls_cert_path: file not found/,
    ],
  ];
  for (const [name, yaml, message] of cases) {
    await withFiles({ [`${name}.yaml`]: yaml }, async (dir) => {
      const r = await runCli(["--config", `${name}.yaml`], { cwd: dir });
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, message);
      assert.match(r.stderr, /refusing to start/);
    });
  }
});

Deno.test("runtime exits 2 for --strict without --check-config", async () => {
  for (const args of [["--strict"], ["--config", "x.yaml", "--strict"]]) {
    const r = await runCli(args);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^runtime: --strict applies to --check-config only\n\nUsage:/);
  }
});

/** http.auth_enabled misspelled: a plain check warns, --strict refuses. */
const TYPO = `http:
  auth_enable: true
providers: [{id: p0, command: sh}]
${safetySection()}`;

Deno.test("runtime --check-config --strict refuses an unknown key (a misspelled auth_enabled) naming it with its line and column, and exits 1", async () => {
  await withFiles({ "typo.yaml": TYPO }, async (dir) => {
    const plain = await runCli(["--check-config", "typo.yaml"], { cwd: dir });
    assert.equal(plain.code, 0, plain.stdout + plain.stderr);
    assert.equal(
      plain.stdout,
      "typo.yaml:2:3: warning: http.auth_enable: unknown key 'auth_enable' will be ignored " +
        "(did you mean 'auth_enabled'?)\ntypo.yaml: 0 errors, 1 warning\n",
    );
    const strict = await runCli(["--check-config", "typo.yaml", "--strict"], { cwd: dir });
    assert.equal(strict.code, 1, strict.stdout + strict.stderr);
    const lines = strict.stdout.trimEnd().split("\n");
    assert.equal(lines.length, 2, strict.stdout);
    assert.ok(
      lines[0]!.startsWith(
        "typo.yaml:2:3: error: http.auth_enable: unknown key 'auth_enable' (did you mean " +
          "'auth_enabled'?)",
      ),
      lines[0],
    );
    assert.equal(lines[1], "typo.yaml: 1 error, 0 warnings");
    const json = await runCli(["--check-config", "typo.yaml", "--strict", "--format", "json"], {
      cwd: dir,
    });
    assert.equal(json.code, 1);
    const doc = JSON.parse(json.stdout);
    assert.deepEqual(
      doc.diagnostics.map((d: Record<string, unknown>) => [d.severity, d.path, d.line, d.column]),
      [["error", "http.auth_enable", 2, 3]],
    );
  });
});

Deno.test("runtime --check-config --strict says what is there instead of a file: a directory named as the behavior tree or a provider command", async () => {
  await withFiles(
    { "away.yaml": AWAY, "trees/main.xml/keep": "", "bin/provider/keep": "" },
    async (dir) => {
      const r = await runCli(["--check-config", "away.yaml", "--strict"], { cwd: dir });
      assert.equal(r.code, 1, r.stdout);
      assert.match(
        r.stdout,
        /away\.yaml:7:5: error: providers\[0\]\.command: is not a regular file: .*\/bin\/provider is a directory/,
      );
      assert.match(
        r.stdout,
        /away\.yaml:12:3: error: automation\.behavior_tree: is not a regular file: .*\/trees\/main\.xml is a directory/,
      );
    },
  );
});
