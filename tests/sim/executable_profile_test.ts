/**
 * The simulated provider speaks the anolis executable profile v1 (anolis-protocol,
 * docs/profiles/anolis-executable-profile-v1.md) through the provider SDK's runProviderCli: every
 * test runs the real child process with the verb and checks what the conformance harness checks
 * (anolis-protocol, conformance/anolis_conformance/checks.py) plus the exact output.
 */
import assert from "node:assert/strict";
import { parse } from "yaml";
import { Ajv2020 } from "ajv/dist/2020.js";
import {
  checkHostEnvelope,
  configSchemaEnvelope,
  WireProviderState,
  WireStatusCode,
} from "../../src/provider_sdk/mod.ts";
import { SIM_CONFIG_SCHEMA } from "../../examples/providers/sim/config_schema.ts";
import {
  REPO_ROOT,
  SIM_INERT_YAML,
  SIM_MAIN,
  SIM_YAML,
  SimProcess,
  tempConfig,
} from "./_sim_process.ts";

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function runSim(args: string[]): Promise<Run> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--quiet", "--allow-read", "--allow-env", SIM_MAIN, ...args],
    cwd: REPO_ROOT,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** What the conformance harness asserts of a `--check-host` answer (checks.py). */
function assertCheckHostShape(run: Run): Array<Record<string, unknown>> {
  const doc = JSON.parse(run.stdout);
  assert.equal(doc.check_host_version, 1);
  assert.ok(Array.isArray(doc.requirements));
  let unmet = false;
  for (const r of doc.requirements) {
    assert.ok(typeof r.id === "string" && r.id !== "");
    assert.ok(["met", "unmet", "unknown"].includes(r.status));
    unmet ||= r.status === "unmet";
  }
  assert.equal(run.code, unmet ? 1 : 0, "exit code agrees with the statuses");
  assert.equal(run.stdout.split("\n").length, 2, "one line of JSON");
  return doc.requirements;
}

const NODES_YAML = (nodes: string[]) =>
  `simulation: { mode: inert }\ndevices: [{ id: relayio0, type: relayio }]\n` +
  `host:\n  device_nodes: [${nodes.map((n) => JSON.stringify(n)).join(", ")}]\n`;

Deno.test("sim --config-schema prints the configuration's JSON Schema envelope and exits 0", async () => {
  const run = await runSim(["--config-schema"]);
  assert.equal(run.code, 0);
  assert.equal(run.stderr, "");
  const doc = JSON.parse(run.stdout);
  assert.ok(Number.isInteger(doc.config_schema_version) && doc.config_schema_version >= 1);
  assert.equal(typeof doc.schema, "object");
  // Keys in the reference SDK's order, two-space indented, as anolis-provider-bread prints them.
  assert.deepEqual(Object.keys(doc), [
    "config_schema_version",
    "provider",
    "provider_version",
    "schema",
  ]);
  assert.equal(
    run.stdout,
    configSchemaEnvelope(SIM_CONFIG_SCHEMA, {
      provider: "anolis-provider-sim",
      extra: { provider_version: "0.2.3" },
    }),
  );
  assert.equal(doc.schema.$schema, "https://json-schema.org/draft/2020-12/schema");
});

Deno.test("sim --config-schema: the shipped configurations are valid, a refused one is not", async () => {
  const { stdout } = await runSim(["--config-schema"]);
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  const validate = ajv.compile(JSON.parse(stdout).schema);
  for (const file of [SIM_YAML, SIM_INERT_YAML]) {
    const doc = parse(await Deno.readTextFile(`${REPO_ROOT}${file}`));
    assert.ok(validate(doc), `${file}: ${JSON.stringify(validate.errors)}`);
  }
  // Refused by the sim too: a non_interacting simulation without tick_rate_hz, chaos_control as
  // an id, and the unsupported external-engine mode.
  const refused = [
    { simulation: { mode: "non_interacting" } },
    { simulation: { mode: "inert" }, devices: [{ id: "chaos_control", type: "relayio" }] },
    { simulation: { mode: "sim", tick_rate_hz: 10 } },
  ];
  for (const doc of refused) {
    assert.equal(validate(doc), false, JSON.stringify(doc));
    const path = await tempConfig(JSON.stringify(doc));
    try {
      assert.equal((await runSim(["--check-config", path])).code, 1, JSON.stringify(doc));
    } finally {
      await Deno.remove(path);
    }
  }
});

Deno.test("sim --config-schema answers when reached: what follows is not read, what precedes is", async () => {
  assert.equal((await runSim(["--config-schema", "--no-such-flag"])).code, 0);
  const before = await runSim(["--no-such-flag", "--config-schema"]);
  assert.equal(before.code, 1);
  assert.equal(before.stdout, "", "a usage error prints no JSON");
  assert.match(before.stderr, /unknown argument "--no-such-flag"/);
});

Deno.test("sim --version prints a dotted version and exits 0", async () => {
  const run = await runSim(["--version"]);
  assert.equal(run.code, 0);
  assert.match(run.stdout, /^\d+\.\d+\.\d+\n$/);
});

Deno.test("sim --check-host with nothing to check prints an empty list and exits 0", async () => {
  const run = await runSim(["--check-host", SIM_YAML]);
  assertCheckHostShape(run);
  assert.equal(run.code, 0);
  assert.equal(run.stdout, checkHostEnvelope("anolis-provider-sim", []));
  assert.equal(
    run.stdout,
    '{"check_host_version":1,"provider":"anolis-provider-sim","requirements":[]}\n',
  );
});

Deno.test("sim --check-host exits 1 when a device node is missing, naming it with a remedy", async () => {
  const present = await Deno.makeTempFile({ prefix: "sim-node-" });
  const missing = `${present}.missing`;
  const config = await tempConfig(NODES_YAML([present, missing]));
  try {
    const run = await runSim(["--check-host", config]);
    const reqs = assertCheckHostShape(run);
    assert.equal(run.code, 1);
    assert.deepEqual(reqs.map((r) => [r.id, r.status]), [
      [`device_node:${present}`, "met"],
      [`device_node:${missing}`, "unmet"],
    ]);
    assert.equal(reqs[1]!.detail, `${missing} does not exist`);
    assert.match(String(reqs[1]!.remedy), /host\.device_nodes/);
    assert.equal(reqs[0]!.remedy, undefined, "no remedy for a met requirement");
    // Read-only: the check created nothing.
    await assert.rejects(Deno.stat(missing), Deno.errors.NotFound);
  } finally {
    await Deno.remove(config);
    await Deno.remove(present);
  }
});

Deno.test("sim --check-host exits 0 when every device node is there", async () => {
  const present = await Deno.makeTempFile({ prefix: "sim-node-" });
  const config = await tempConfig(NODES_YAML([present]));
  try {
    const run = await runSim(["--check-host", config]);
    assert.deepEqual(assertCheckHostShape(run).map((r) => r.status), ["met"]);
  } finally {
    await Deno.remove(config);
    await Deno.remove(present);
  }
});

Deno.test("sim --check-host exits 2 with an empty stdout when the configuration is invalid", async () => {
  const config = await tempConfig("simulation: { mode: bogus }\nhost: { device_nodes: [dev] }\n");
  try {
    const run = await runSim(["--check-host", config]);
    assert.equal(run.code, 2);
    assert.equal(run.stdout, "");
    assert.match(run.stderr, /simulation\.mode: must be inert or non_interacting/);
    assert.match(run.stderr, /host\.device_nodes\[0\]: must be an absolute path/);
  } finally {
    await Deno.remove(config);
  }
});

Deno.test("sim --check-host without a path is a usage error with no JSON on stdout", async () => {
  const run = await runSim(["--check-host"]);
  assert.equal(run.code, 1);
  assert.equal(run.stdout, "");
  assert.match(run.stderr, /--check-host needs a path/);
});

Deno.test("sim with a device node missing stays up, not ready, lists no devices and says why", async () => {
  const missing = `${await Deno.makeTempDir()}/i2c-7`;
  const config = await tempConfig(NODES_YAML([missing]));
  const sim = SimProcess.start(config);
  try {
    const hello = await sim.request({ hello: { protocol_version: "v1", client_name: "t" } });
    assert.equal(hello.hello?.metadata?.supports_wait_ready, "true");
    const ready = await sim.request({ wait_ready: {} });
    assert.equal(ready.status?.code, 1);
    const diag = ready.wait_ready?.diagnostics ?? {};
    assert.equal(diag.host_check, "unmet");
    assert.equal(diag.host_unmet, `device_node:${missing}: ${missing} does not exist`);
    assert.equal(diag.ready, "false");
    assert.equal(diag.device_count, "0");
    const list = await sim.request({ list_devices: {} });
    assert.deepEqual(list.list_devices?.devices ?? [], []);
    const describe = await sim.request({ describe_device: { device_id: "relayio0" } });
    assert.equal(describe.status?.code, WireStatusCode.NOT_FOUND);
    assert.match(describe.status?.message ?? "", /not ready: host requirements unmet/);
    const health = await sim.request({ get_health: {} });
    assert.equal(health.get_health?.provider?.state, WireProviderState.DEGRADED);
    assert.match(health.get_health?.provider?.message ?? "", /^not ready: host requirements unmet/);
    assert.equal(health.get_health?.provider?.metrics?.host_check, "unmet");
    await sim.waitForStderr(/WARN \[sim\] host requirements unmet: device_node:/);
    await sim.closeStdin();
    assert.equal(await sim.exitCode(), 0);
  } finally {
    await sim.stop();
    await Deno.remove(config);
  }
});

Deno.test("sim with its device nodes present is ready and reports host_check ok", async () => {
  const present = await Deno.makeTempFile({ prefix: "sim-node-" });
  const config = await tempConfig(NODES_YAML([present]));
  const sim = SimProcess.start(config);
  try {
    const ready = await sim.request({ wait_ready: {} });
    const diag = ready.wait_ready?.diagnostics ?? {};
    assert.equal(diag.host_check, "ok");
    assert.equal(diag.host_unmet, undefined);
    assert.equal(diag.ready, "true");
    const list = await sim.request({ list_devices: {} });
    assert.deepEqual(list.list_devices?.devices?.map((d) => d.device_id), [
      "relayio0",
      "chaos_control",
    ]);
  } finally {
    await sim.stop();
    await Deno.remove(config);
    await Deno.remove(present);
  }
});

Deno.test("sim --check-host reports a device node Deno will not let it look at as unknown, naming the permission", async () => {
  // Deno gives a program most of /dev/ (a missing node there too) only with every permission;
  // runSim grants --allow-read only. Not knowing is `unknown`, which does not fail the check.
  const node = `/dev/sim-test-node-${crypto.randomUUID()}`;
  const config = await tempConfig(NODES_YAML([node]));
  try {
    const run = await runSim(["--check-host", config]);
    const [req] = assertCheckHostShape(run);
    assert.equal(run.code, 0);
    assert.equal(req!.status, "unknown");
    assert.match(String(req!.detail), /--allow-all/);
  } finally {
    await Deno.remove(config);
  }
});
