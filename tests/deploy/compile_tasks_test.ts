/**
 * The compile tasks in deno.json: targets, outputs, and permissions that are enough for the
 * code paths the binaries run. `deno compile` itself cannot run without downloading `denort`
 * (docs/deployment.md), so the bundles it compiles (`deno task bundle`) run here with exactly
 * the permissions of the tasks.
 */
import assert from "node:assert/strict";
import { EXIT_OK } from "../../src/app/exit_codes.ts";
import { MALLOC_ENV, PORT_ENV_VAR } from "../../src/main.ts";
import { compileEnvAllowList, repoPath } from "./_helpers.ts";
import { SECRET_ENV_VARS } from "../../src/host/spawn.ts";
import {
  SPARKPLUG_PASSWORD_ENV,
  SPARKPLUG_USERNAME_ENV,
  TOKEN_ENV_PREFIX,
} from "../../src/config/mod.ts";
import { compiledEnvPermissions } from "../helpers/compiled_permissions.ts";
import {
  defaultCommands,
  PROVIDER_V8_FLAGS,
  RUNTIME_ENV,
  RUNTIME_V8_FLAGS,
  V8_HEAP_FLAG,
} from "../../bench/lib/args.ts";
import { BUNDLE_RUN_CONFIG, bundles } from "../helpers/bundles.ts";

const TASKS = JSON.parse(Deno.readTextFileSync(repoPath("deno.json"))).tasks as Record<
  string,
  string
>;

/**
 * The `deno compile` flags of a task, with target, output and entry point split off. Every
 * compile task first builds the bundles it compiles (`deno task bundle && deno compile ...`).
 */
function compileTask(name: string) {
  const [first, second, ...rest] = (TASKS[name] ?? "").split(" && ");
  assert.equal(first, "deno task bundle", `${name}: does not build the bundles first`);
  assert.equal(rest.length, 0, name);
  const words = (second ?? "").split(/\s+/);
  assert.equal(words.slice(0, 2).join(" "), "deno compile", `${name}: not a deno compile task`);
  const target = words[words.indexOf("--target") + 1];
  const output = words[words.indexOf("--output") + 1];
  const permissions = words.filter((w) => /^--(allow|deny|ignore)-/.test(w));
  return { target, output, entry: words[words.length - 1], permissions };
}

Deno.test("compile tasks build the runtime and the simulated provider for x86_64 and aarch64", () => {
  const expected = [
    ["compile", "x86_64-unknown-linux-gnu", "dist/runtime", "dist/bundle/runtime/main.js"],
    [
      "compile:arm64",
      "aarch64-unknown-linux-gnu",
      "dist/runtime-aarch64",
      "dist/bundle/runtime/main.js",
    ],
    [
      "compile:sim",
      "x86_64-unknown-linux-gnu",
      "dist/sim-provider",
      "dist/bundle/sim/main.js",
    ],
    [
      "compile:sim:arm64",
      "aarch64-unknown-linux-gnu",
      "dist/sim-provider-aarch64",
      "dist/bundle/sim/main.js",
    ],
  ];
  for (const [name, target, output, entry] of expected) {
    const task = compileTask(name!);
    assert.deepEqual([task.target, task.output, task.entry], [target, output, entry], name);
  }
  // Both architectures get the same permissions.
  assert.deepEqual(compileTask("compile:arm64").permissions, compileTask("compile").permissions);
  assert.deepEqual(
    compileTask("compile:sim:arm64").permissions,
    compileTask("compile:sim").permissions,
  );
  for (const p of compileTask("compile").permissions) {
    assert.notEqual(p, "--allow-env", "the runtime's env access must be a named list");
  }
});

Deno.test("every compile task reads an unlisted environment variable as unset (--ignore-env), not as a failure", () => {
  for (const name of ["compile", "compile:arm64", "compile:sim", "compile:sim:arm64"]) {
    const { permissions } = compileTask(name);
    assert.ok(permissions.includes("--ignore-env"), `${name}: ${permissions.join(" ")}`);
    assert.ok(permissions.some((p) => p.startsWith("--allow-env=")), name);
  }
});

Deno.test("the runtime's compile task lists every variable the runtime reads, secrets first: with --ignore-env an unlisted one would read as unset and reach providers unscrubbed", () => {
  const allowed = compileEnvAllowList().split(",");
  const read = [
    ...SECRET_ENV_VARS,
    SPARKPLUG_USERNAME_ENV,
    SPARKPLUG_PASSWORD_ENV,
    `${TOKEN_ENV_PREFIX}*`,
    PORT_ENV_VAR,
    ...Object.keys(MALLOC_ENV),
  ];
  for (const name of read) assert.ok(allowed.includes(name), `${name} is not in --allow-env`);
});

Deno.test("docs/deployment.md names every variable of the runtime's --allow-env list", async () => {
  const doc = await Deno.readTextFile(repoPath("docs/deployment.md"));
  for (const name of compileEnvAllowList().split(",")) {
    assert.ok(doc.includes(`| \`${name}\``) || doc.includes(`, \`${name}\``), name);
  }
});

async function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--no-prompt", ...args],
    env: { NO_COLOR: "1" },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

Deno.test("runtime --check-config works with the compile task's permissions", async () => {
  const r = await run([
    BUNDLE_RUN_CONFIG,
    "--allow-read",
    ...compiledEnvPermissions(),
    (await bundles()).runtime,
    "--check-config",
    repoPath("examples/demo.yaml"),
    "--format",
    "json",
  ]);
  assert.equal(r.code, EXIT_OK, r.stderr);
  const report = JSON.parse(r.stdout);
  assert.equal(report.valid, true, r.stdout);
  assert.equal(report.errors, 0);
});

Deno.test("simulated provider loads its configuration with the compile:sim permissions", async () => {
  const r = await run([
    BUNDLE_RUN_CONFIG,
    ...compileTask("compile:sim").permissions,
    (await bundles()).sim,
    "--check-config",
    repoPath("examples/providers/sim/sim.yaml"),
  ]);
  assert.equal(r.code, 0, r.stderr);
});

Deno.test("start, every compile task, the examples' simulated providers and the bench apply the same V8 flags", () => {
  // docs/deployment.md, "Memory: V8 and malloc settings": chosen by measurement, applied everywhere
  // the runtime or the simulated provider is started, so the bench measures what users run.
  assert.match(RUNTIME_V8_FLAGS, /^--v8-flags=\S+$/);
  assert.equal(RUNTIME_V8_FLAGS.slice("--v8-flags=".length).split(",")[0], V8_HEAP_FLAG);
  assert.strictEqual(PROVIDER_V8_FLAGS, `--v8-flags=${V8_HEAP_FLAG},--lite-mode`);
  const flagsOf = (words: readonly string[]) => words.filter((w) => w.startsWith("--v8-flags"));
  for (const name of ["start", "start:src", "compile", "compile:arm64"]) {
    assert.deepEqual(flagsOf((TASKS[name] ?? "").split(/\s+/)), [RUNTIME_V8_FLAGS], name);
  }
  for (const name of ["compile:sim", "compile:sim:arm64"]) {
    assert.deepEqual(flagsOf((TASKS[name] ?? "").split(/\s+/)), [PROVIDER_V8_FLAGS], name);
  }
  for (const example of ["demo.yaml", "minimal.yaml", "full.yaml", "alarms.yaml"]) {
    const text = Deno.readTextFileSync(repoPath(`examples/${example}`));
    assert.ok(
      text.includes(`      - ${PROVIDER_V8_FLAGS}\n`),
      `${example}: the sim's deno run args`,
    );
  }
  const bench = defaultCommands("/repo");
  assert.deepEqual(flagsOf(bench.runtime), [RUNTIME_V8_FLAGS]);
  assert.deepEqual(flagsOf(bench.provider), [PROVIDER_V8_FLAGS]);
});

Deno.test("start, the systemd unit and the bench run the runtime with the same malloc environment", () => {
  // A compiled binary cannot carry an environment variable: the unit sets it, as the start tasks
  // and the bench's default command do (docs/deployment.md, "Memory: V8 and malloc settings").
  const assignments = Object.entries(RUNTIME_ENV).map(([k, v]) => `${k}=${v}`);
  assert.ok(assignments.length > 0);
  // What the runtime checks at start (its INFO line names the settings missing) is the same set.
  assert.deepEqual(RUNTIME_ENV, MALLOC_ENV);
  for (const name of ["start", "start:src"]) {
    const command = (TASKS[name] ?? "").split(" && ").at(-1)!;
    assert.ok(command.startsWith(`${assignments.join(" ")} deno run `), `${name}: ${command}`);
  }
  const unit = Deno.readTextFileSync(repoPath("examples/systemd/runtime.service"));
  for (const a of assignments) {
    assert.ok(unit.split("\n").includes(`Environment=${a}`), `runtime.service: Environment=${a}`);
  }
  const bench = defaultCommands("/repo").runtime;
  assert.deepEqual(bench.slice(0, assignments.length + 2), ["env", ...assignments, "deno"]);
});
