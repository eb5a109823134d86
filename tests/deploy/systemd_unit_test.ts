/**
 * examples/systemd/runtime.service passes `systemd-analyze verify` (Debian package `systemd`;
 * it runs offline, systemd need not be PID 1) and carries the settings the deployment relies on.
 * verify needs the ExecStart binaries to exist, so it checks a copy whose /opt/runtime/bin/runtime
 * points at a stand-in executable.
 */
import assert from "node:assert/strict";
import { EXIT_CONFIG_ERROR, EXIT_USAGE } from "../../src/app/exit_codes.ts";
import { RUNTIME_AUTOGROUP_NICE } from "../../src/app/mod.ts";
import { compileEnvAllowList, repoPath } from "./_helpers.ts";

const UNIT = repoPath("examples/systemd/runtime.service");
const ENV_EXAMPLE = repoPath("examples/systemd/runtime.env.example");
const BINARY = "/opt/runtime/bin/runtime";
/** Largest runtime.shutdown_timeout_ms the config accepts, plus the service's 1 s grace. */
const MAX_SHUTDOWN_MS = 30_000 + 1_000;
/** Default runtime.startup_timeout_ms. */
const DEFAULT_STARTUP_MS = 30_000;

/** Why systemd-analyze cannot be used here, or null when it can. */
function systemdAnalyzeUnusable(): string | null {
  let dir: string | null = null;
  try {
    dir = Deno.makeTempDirSync({ prefix: "runtime-unit-probe-" });
    Deno.writeTextFileSync(`${dir}/probe.service`, "[Service]\nExecStart=/bin/true\n");
    const out = new Deno.Command("systemd-analyze", {
      args: ["verify", `${dir}/probe.service`],
      stdout: "piped",
      stderr: "piped",
    }).outputSync();
    if (out.code === 0) return null;
    return `systemd-analyze verify fails even on a trivial unit here (exit ${out.code}): ` +
      new TextDecoder().decode(out.stderr).trim();
  } catch (e) {
    return e instanceof Deno.errors.NotFound
      ? "systemd-analyze not found; install it with: apt-get install -y systemd"
      : `systemd-analyze cannot run: ${e instanceof Error ? e.message : e}`;
  } finally {
    if (dir) Deno.removeSync(dir, { recursive: true });
  }
}

const unusable = systemdAnalyzeUnusable();
if (unusable) {
  console.error(`\n!!!!!!!! systemd unit verification is SKIPPED: ${unusable} !!!!!!!!\n`);
}

/** Runs `systemd-analyze verify` on `unitText` (binary path rewritten) saved as runtime.service. */
async function verify(unitText: string): Promise<{ code: number; lines: string[] }> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-unit-" });
  try {
    const standIn = `${dir}/runtime`;
    await Deno.writeTextFile(standIn, "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    await Deno.chmod(standIn, 0o755);
    await Deno.writeTextFile(`${dir}/runtime.service`, unitText.replaceAll(BINARY, standIn));
    const out = await new Deno.Command("systemd-analyze", {
      args: ["verify", `${dir}/runtime.service`],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(out.stdout) + new TextDecoder().decode(out.stderr);
    return { code: out.code, lines: text.split("\n").filter((l) => l.trim() !== "") };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** The unit's settings: key -> every value assigned to it, in order. */
function settings(unitText: string): Map<string, string[]> {
  const map = new Map<string, string[]>();
  for (const raw of unitText.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith("[")) continue;
    const eq = line.indexOf("=");
    assert.ok(eq > 0, `not a key=value line: ${line}`);
    const key = line.slice(0, eq);
    map.set(key, [...(map.get(key) ?? []), line.slice(eq + 1)]);
  }
  return map;
}

function one(unit: Map<string, string[]>, key: string): string {
  const values = unit.get(key) ?? [];
  assert.equal(values.length, 1, `${key}: expected exactly one assignment, got ${values.length}`);
  return values[0]!;
}

function seconds(value: string): number {
  const m = value.match(/^(\d+)s?$/);
  assert.ok(m, `not a plain number of seconds: ${value}`);
  return Number(m[1]);
}

Deno.test({
  name: "runtime.service passes systemd-analyze verify",
  ignore: unusable !== null,
  async fn() {
    const { code, lines } = await verify(await Deno.readTextFile(UNIT));
    assert.equal(code, 0, lines.join("\n"));
    // verify exits 0 on unknown keys and unparsable values; it only prints them.
    assert.deepEqual(lines.filter((l) => l.includes("runtime.service")), []);
  },
});

Deno.test({
  name: "systemd-analyze verify reports a misspelled setting in runtime.service",
  ignore: unusable !== null,
  async fn() {
    // Proves the check above can fail in this environment.
    const text = (await Deno.readTextFile(UNIT)).replace(/^Restart=/m, "Restartt=");
    const { lines } = await verify(text);
    assert.ok(
      lines.some((l) => l.includes("runtime.service") && l.includes("Restartt")),
      lines.join("\n"),
    );
  },
});

Deno.test("runtime.service checks the config first and does not restart on config errors", async () => {
  const unit = settings(await Deno.readTextFile(UNIT));
  const pre = one(unit, "ExecStartPre");
  // --strict: on the target, a tree, TLS file, provider command or token it lacks is an error.
  assert.match(
    pre,
    /^-?\/opt\/runtime\/bin\/runtime --check-config \/etc\/runtime\/config\.yaml --strict$/,
  );
  assert.equal(one(unit, "ExecStart"), `${BINARY} --config /etc/runtime/config.yaml`);
  assert.equal(one(unit, "Restart"), "on-failure");
  const prevented = one(unit, "RestartPreventExitStatus").split(/\s+/).map(Number);
  assert.deepEqual(prevented.sort(), [EXIT_CONFIG_ERROR, EXIT_USAGE].sort());
});

Deno.test("runtime.service reloads the configuration with SIGHUP to the main process (systemctl reload)", async () => {
  const unit = settings(await Deno.readTextFile(UNIT));
  assert.equal(one(unit, "ExecReload"), "/bin/kill -HUP $MAINPID");
});

Deno.test("runtime.service time budgets cover the runtime's own start and stop budgets", async () => {
  const unit = settings(await Deno.readTextFile(UNIT));
  assert.ok(seconds(one(unit, "TimeoutStopSec")) * 1000 > MAX_SHUTDOWN_MS);
  assert.ok(seconds(one(unit, "TimeoutStartSec")) * 1000 > DEFAULT_STARTUP_MS);
  // The runtime stops its providers itself; systemd must not SIGTERM them at the same time.
  assert.equal(one(unit, "KillMode"), "mixed");
});

Deno.test("runtime.service declares readiness, state, secrets and a hardware-friendly sandbox", async () => {
  const unit = settings(await Deno.readTextFile(UNIT));
  assert.equal(one(unit, "Type"), "notify");
  assert.equal(one(unit, "NotifyAccess"), "all");
  assert.equal(one(unit, "EnvironmentFile"), "/etc/runtime/runtime.env");
  assert.equal(one(unit, "StateDirectory"), "runtime");
  assert.equal(one(unit, "ProtectSystem"), "strict");
  assert.equal(one(unit, "NoNewPrivileges"), "yes");
  assert.equal(one(unit, "PrivateTmp"), "yes");
  const groups = one(unit, "SupplementaryGroups").split(/\s+/);
  for (const g of ["dialout", "i2c", "gpio"]) assert.ok(groups.includes(g), g);
  assert.equal(unit.get("PrivateDevices"), undefined, "PrivateDevices hides the hardware");
  assert.ok((unit.get("DeviceAllow") ?? []).length > 0);
});

Deno.test("runtime.service lets the runtime raise its session to RUNTIME_AUTOGROUP_NICE (LimitNICE)", async () => {
  const unit = settings(await Deno.readTextFile(UNIT));
  assert.equal(one(unit, "LimitNICE"), String(RUNTIME_AUTOGROUP_NICE));
  // Raising a priority needs no capability with the limit: the empty bounding set stays.
  assert.equal(one(unit, "CapabilityBoundingSet"), "");
});

Deno.test("runtime.env.example only sets variables the compiled runtime may read", async () => {
  const allowed = compileEnvAllowList().split(",");
  const names = (await Deno.readTextFile(ENV_EXAMPLE)).split("\n")
    .filter((l) => l.trim() !== "" && !l.trimStart().startsWith("#"))
    .map((l) => l.slice(0, l.indexOf("=")));
  assert.deepEqual(names, ["RUNTIME_API_TOKEN", "INFLUXDB_TOKEN"]);
  for (const name of names) assert.ok(allowed.includes(name), `${name} not in --allow-env`);
});
