import assert from "node:assert/strict";
import {
  anolisRuntimeYaml,
  providerIds,
  runtimeYaml,
  simProviderYaml,
} from "../../bench/lib/config_gen.ts";
import { defaultCommands } from "../../bench/lib/args.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { bundles } from "../helpers/bundles.ts";

const ROOT = new URL("../..", import.meta.url).pathname.replace(/\/$/, "");

async function run(args: string[]): Promise<{ code: number; out: string }> {
  const out = await new Deno.Command("deno", { args, stdout: "piped", stderr: "piped" }).output();
  const dec = new TextDecoder();
  return { code: out.code, out: dec.decode(out.stdout) + dec.decode(out.stderr) };
}

Deno.test("runtimeYaml rejects an empty provider list or command", () => {
  const base = baseOptions();
  assert.throws(() => runtimeYaml({ ...base, providerCount: 0 }), RangeError);
  assert.throws(() => runtimeYaml({ ...base, providerCmd: [] }), RangeError);
  assert.deepEqual(providerIds(3), ["sim0", "sim1", "sim2"]);
});

Deno.test("runtimeYaml and simProviderYaml produce configs both programs accept without warnings", async () => {
  const dir = await Deno.makeTempDir({ prefix: "bench-config-test-" });
  try {
    const sim = `${dir}/sim.yaml`;
    await Deno.writeTextFile(sim, simProviderYaml());
    // The bench's provider command runs the sim's bundle (built by the harness): here, one built
    // from this checkout.
    const bundled = `${ROOT}/dist/bundle/sim/main.js`;
    const provider = defaultCommands(ROOT).provider;
    assert.ok(provider.includes(bundled), provider.join(" "));
    const { sim: simBundle } = await bundles();
    const providerCmd = provider.map((w) => w === bundled ? simBundle : w);
    const [, ...providerArgs] = providerCmd;
    const simCheck = await run([...providerArgs, "--check-config", sim]);
    assert.equal(simCheck.code, 0, simCheck.out);

    const rt = `${dir}/runtime.yaml`;
    await Deno.writeTextFile(
      rt,
      runtimeYaml({
        providerCount: 3,
        port: 18080,
        providerCmd,
        simConfigPath: sim,
        pollIntervalMs: 100,
        dataDir: `${dir}/data with space`,
      }),
    );
    const check = await run([
      "run",
      "-A",
      `${ROOT}/src/main.ts`,
      "--check-config",
      rt,
      "--format",
      "json",
    ]);
    assert.equal(check.code, 0, check.out);
    const report = JSON.parse(check.out.slice(check.out.indexOf("{")));
    assert.equal(report.valid, true);
    // No warnings either: an unknown or misspelt key would be ignored silently otherwise.
    assert.deepEqual(report.diagnostics, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("runtimeYaml adds automation with the AUTO -> FAULT hook workload 8 needs", () => {
  const text = runtimeYaml({
    providerCount: 1,
    port: 18080,
    providerCmd: ["deno", "run", "sim.ts"],
    simConfigPath: "/tmp/sim.yaml",
    pollIntervalMs: 100,
    dataDir: "/tmp/bench-data",
    automation: { treePath: "/tmp/tree.xml", tickRateHz: 50 },
  });
  const { config, diagnostics } = checkLoad(text);
  const errors = diagnostics.filter((d) => d.severity === "error");
  if (errors.length > 0) throw new Error(JSON.stringify(errors));
  const a = config!.automation;
  if (!a.enabled || a.tickRateHz !== 50 || a.behaviorTree !== "/tmp/tree.xml") {
    throw new Error(`automation not configured: ${JSON.stringify(a)}`);
  }
  const hook = a.modeTransitionHooks.beforeTransition[0];
  if (
    hook!.from !== "AUTO" || hook!.to !== "FAULT" ||
    hook!.calls[0]!.functionName !== "set_motor_duty"
  ) {
    throw new Error(`unexpected hook ${JSON.stringify(hook)}`);
  }
});

Deno.test("runtimeYaml gives provider i the command providerCmdAt(i), with --config appended", () => {
  const text = runtimeYaml({
    providerCount: 3,
    port: 18080,
    providerCmd: ["unused"],
    providerCmdAt: (i) =>
      i % 2 === 0 ? ["deno", "run", "sim.js"] : ["deno", "run", "floor.ts", "r.json"],
    simConfigPath: "/tmp/sim.yaml",
    pollIntervalMs: 100,
    dataDir: "/tmp/bench-data",
  });
  const { config, diagnostics } = checkLoad(text);
  assert.deepStrictEqual(diagnostics.filter((d) => d.severity === "error"), []);
  assert.deepStrictEqual(
    config!.providers.map((p) => [p.command, ...p.args]),
    [
      ["deno", "run", "sim.js", "--config", "/tmp/sim.yaml"],
      ["deno", "run", "floor.ts", "r.json", "--config", "/tmp/sim.yaml"],
      ["deno", "run", "sim.js", "--config", "/tmp/sim.yaml"],
    ],
  );
  assert.throws(() => runtimeYaml({ ...baseOptions(), providerCmdAt: () => [] }), RangeError);
});

Deno.test("runtimeYaml gives every provider the restart_policy bench/estop_storm.ts asks for, and none without it", () => {
  const text = runtimeYaml({
    ...baseOptions(),
    providerCount: 2,
    restartPolicy: { maxAttempts: 3, backoffMs: [200, 1000, 3000], successResetMs: 1000 },
  });
  const { config, diagnostics } = checkLoad(text);
  assert.deepStrictEqual(diagnostics, []);
  for (const p of config!.providers) {
    assert.deepStrictEqual(p.restartPolicy, {
      enabled: true,
      maxAttempts: 3,
      backoffMs: [200, 1000, 3000],
      timeoutMs: 30000,
      successResetMs: 1000,
    });
  }
  const plain = checkLoad(runtimeYaml(baseOptions())).config!;
  assert.equal(plain.providers[0]!.restartPolicy.enabled, false);
});

/** loadConfig in check mode with every file and command taken to exist. */
function checkLoad(text: string) {
  return loadConfig(text, {
    path: "/tmp/bench.yaml",
    mode: "check",
    env: {},
    fileExists: () => true,
    commandExists: () => true,
    cwd: "/tmp",
  });
}

function baseOptions() {
  return {
    providerCount: 1,
    port: 1,
    providerCmd: ["x"],
    simConfigPath: "/s.yaml",
    pollIntervalMs: 100,
    dataDir: "/d",
  };
}

Deno.test("runtimeYaml lets the e-stop verify each provider's motor 1 unless safeStateExpect is false", () => {
  const expecting = checkLoad(runtimeYaml({ ...baseOptions(), providerCount: 2 })).config!;
  assert.deepStrictEqual(
    expecting.safety.safeState.expect.map((e) => [e.providerId, e.deviceId, e.signalId]),
    [["sim0", "motorctl0", "motor1_duty"], ["sim1", "motorctl0", "motor1_duty"]],
  );
  const plain = checkLoad(
    runtimeYaml({ ...baseOptions(), providerCount: 2, safeStateExpect: false }),
  );
  assert.ok(plain.config, JSON.stringify(plain.diagnostics));
  assert.deepStrictEqual(plain.config.safety.safeState.expect, []);
  assert.equal(plain.config.safety.safeState.zeroIsSafe, true);
});

Deno.test("anolisRuntimeYaml gives anolis an absolute provider command and the same providers, without our own sections", () => {
  const yaml = anolisRuntimeYaml({
    providerCount: 2,
    port: 18081,
    providerCmd: ["deno", "run", "sim.js"],
    simConfigPath: "/tmp/sim.yaml",
    pollIntervalMs: 100,
  });
  assert.match(
    yaml,
    new RegExp(`command: ${JSON.stringify(Deno.execPath()).replace(/\//g, "\\/")}`),
  );
  assert.deepEqual(yaml.match(/- id: sim\d/g), ["- id: sim0", "- id: sim1"]);
  assert.match(yaml, /- "--config"\n {6}- "\/tmp\/sim.yaml"/);
  assert.doesNotMatch(yaml, /data_dir|safety:/);
  assert.throws(
    () =>
      anolisRuntimeYaml({
        providerCount: 1,
        port: 1,
        providerCmd: ["node", "sim.js"],
        simConfigPath: "/s",
        pollIntervalMs: 100,
      }),
    /anolis needs an absolute provider command, got "node"/,
  );
});
