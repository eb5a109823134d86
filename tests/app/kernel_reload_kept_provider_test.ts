/**
 * A reload whose file removes a provider together with its protections, where the provider is
 * NOT removed (docs/safety.md sec. 9): the providers section is refused (the open-file limit), or
 * held back while AUTO ran and AUTO was left before the later sections applied. The provider
 * still runs, so its protections (alarms, interlocks, hook calls into FAULT, the e-stop's ladder
 * calls and expectations) stay: those sections are refused, naming the provider and the
 * protection, on the report and the audit trail. Real kernel, real simulated provider children.
 */
import assert from "node:assert/strict";
import type { CallConfig, Config, SafeStateExpectation } from "../../src/config/mod.ts";
import { httpReservedFds, serveHttp } from "../../src/host/mod.ts";
import { startRuntime, startServing, tempDir, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import {
  automationConfig,
  enterAuto,
  STOP_MOTOR_ON_FAULT,
  TreeDir,
  treeXml,
} from "../scenarios/automation_helpers.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const SIM1_STOP: CallConfig = {
  deviceHandle: "sim1/motorctl0",
  functionId: 0,
  functionName: "set_motor_duty",
  args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0 } },
  path: "safety.safe_state.hooks[0]",
};

const SIM1_EXPECT: SafeStateExpectation = {
  signal: "sim1/motorctl0/motor1_duty",
  providerId: "sim1",
  deviceId: "motorctl0",
  signalId: "motor1_duty",
  equals: 0,
  path: "safety.safe_state.expect[0]",
};

/** sim1's protections: an e-stop alarm, an interlock, a hook call into FAULT, a ladder rung. */
function sim1Protections(): Pick<Config, "alarms" | "interlocks"> & {
  hook: Config["automation"]["modeTransitionHooks"]["beforeTransition"][number];
} {
  const p = alarmsConfig(
    `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500, action: estop }
  - { id: sim0_hot, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: estop }
interlocks:
  - id: motor_by_sim1
    block: [sim0/motorctl0/set_motor_duty]
    while: 'sim1/tempctl0/tc1_temp > 1000'
    message: sim0's motor waits for sim1's heater
`,
    ["sim0", "sim1"],
  );
  return {
    alarms: p.alarms,
    interlocks: p.interlocks,
    hook: {
      from: "*",
      to: "FAULT",
      failOnError: false,
      path: "automation.mode_transition_hooks.before_transition[1]",
      calls: [{ ...SIM1_STOP, path: "automation.mode_transition_hooks.before_transition[1]" }],
    },
  };
}

/** The file of the reload: sim1 and every protection of it gone; `providers` instead. */
function withoutSim1(rt: Kernel, providers: Config["providers"]): Config {
  const c = rt.config;
  return {
    ...c,
    providers,
    alarms: c.alarms.filter((a) => a.providerId !== "sim1"),
    interlocks: [],
    automation: {
      ...c.automation,
      modeTransitionHooks: {
        beforeTransition: c.automation.modeTransitionHooks.beforeTransition.filter((h) =>
          !h.calls.some((x) => x.deviceHandle.startsWith("sim1/"))
        ),
        afterTransition: [],
      },
    },
    safety: {
      ...c.safety,
      safeState: { ...c.safety.safeState, hooks: [], expect: [] },
    },
  };
}

/** Every protection of sim1 is still in force, in the configuration and in its subsystems. */
function assertSim1Protected(rt: Kernel): void {
  assert.equal(rt.registry.host("sim1")?.available, true, "sim1 still runs");
  assert.deepEqual(rt.config.alarms.map((a) => a.id).sort(), ["sim0_hot", "sim1_hot"]);
  assert.equal(rt.alarms.alarm("sim1_hot").id, "sim1_hot");
  assert.deepEqual(rt.config.interlocks.map((il) => il.id), ["motor_by_sim1"]);
  assert.deepEqual(rt.config.safety.safeState.hooks.map((c) => c.deviceHandle), [
    "sim1/motorctl0",
  ]);
  assert.deepEqual(rt.config.safety.safeState.expect.map((e) => e.signal), [SIM1_EXPECT.signal]);
  assert.equal(
    rt.config.automation.modeTransitionHooks.beforeTransition.some((h) =>
      h.calls.some((x) => x.deviceHandle === "sim1/motorctl0")
    ),
    true,
    "the hook call into FAULT on sim1 is still in force",
  );
}

/** The refusals of the sections that would take sim1's protections away, each naming them. */
function assertRefusedForSim1(report: Awaited<ReturnType<Kernel["reload"]>>): void {
  const protections = report.refused.filter((r) => r.section !== "providers");
  assert.deepEqual(protections.map((r) => r.section), [
    "automation.mode_transition_hooks",
    "safety",
    "alarms",
  ]);
  for (const r of protections) assert.match(r.why, /provider sim1 still runs/);
  assert.match(protections[0]!.why, /a hook into FAULT no longer calls sim1\/motorctl0/);
  assert.match(protections[1]!.why, /the e-stop no longer calls sim1\/motorctl0 set_motor_duty/);
  assert.match(protections[1]!.why, /the e-stop no longer verifies sim1\/motorctl0\/motor1_duty/);
  assert.match(protections[2]!.why, /alarm sim1_hot \(action estop\) removed/);
  assert.match(protections[2]!.why, /interlock motor_by_sim1 removed/);
  assert.deepEqual(report.weakened, [], "no weakening applied");
  assert.equal(report.applied.includes("alarms"), false);
}

/** The audit entries of refused config sections, by section. */
async function refusedConfigSections(rt: Kernel): Promise<string[]> {
  const page = await rt.audit.query({ limit: 1000 });
  return page.entries
    .filter((e) => e.action === "config" && e.outcome === "refused")
    .map((e) => String(e.function));
}

Deno.test("Kernel.reload whose providers section is refused for the open-file limit keeps the protections of the provider the file removes: hooks, safety and alarms refused", async () => {
  const p = sim1Protections();
  const config = testConfig({
    providers: [simProvider("sim0"), simProvider("sim1")],
    alarms: p.alarms,
    interlocks: p.interlocks,
    http: { maxConnections: 128 },
    safety: { hooks: [SIM1_STOP], expect: [SIM1_EXPECT] },
    automation: {
      modeTransitionHooks: { beforeTransition: [STOP_MOTOR_ON_FAULT, p.hook], afterTransition: [] },
    },
  });
  // The limit leaves room for exactly the two providers configured at start.
  const limit = 128 + httpReservedFds(2);
  const rt = await startServing(config, {
    serve: (o) => serveHttp({ ...o, openFileLimit: limit }),
  });
  try {
    await rt.modes.request("MANUAL");
    // sim1 goes, two providers come: three need more descriptors than the limit leaves.
    const next = withoutSim1(rt, [simProvider("sim0"), simProvider("sim2"), simProvider("sim3")]);
    const report = await rt.reload(next);
    assert.deepEqual(report.refused[0]?.section, "providers");
    assert.match(report.refused[0]!.why, /open-file limit/);
    assertRefusedForSim1(report);
    assertSim1Protected(rt);
    assert.deepEqual(await refusedConfigSections(rt), [
      "providers",
      "automation.mode_transition_hooks",
      "safety",
      "alarms",
    ]);
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.reload whose removal of a provider is held back in AUTO, AUTO left before the later sections: the provider's protections stay", async () => {
  const dir = await TreeDir.create();
  const gateDir = tempDir("runtime-reload-gate-");
  const gate = `${gateDir}/go`;
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const p = sim1Protections();
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1")] },
    });
    const config: Config = {
      ...base,
      alarms: p.alarms,
      interlocks: p.interlocks,
      safety: {
        present: true,
        safeState: { ...base.safety.safeState, hooks: [SIM1_STOP], expect: [SIM1_EXPECT] },
      },
      automation: {
        ...base.automation,
        modeTransitionHooks: {
          beforeTransition: [STOP_MOTOR_ON_FAULT, p.hook],
          afterTransition: [],
        },
      },
    };
    const rt = await startRuntime(config);
    try {
      await enterAuto(rt);
      // sim2 starts only once the test opens the gate: the providers section waits for it.
      const sim = simProvider("sim2");
      const quoted = [sim.command, ...sim.args].map((a) => `'${a}'`).join(" ");
      const sim2 = {
        ...sim,
        command: "/bin/sh",
        args: ["-c", `while [ ! -e '${gate}' ]; do sleep 0.02; done; exec ${quoted}`],
      };
      const reload = rt.reload(withoutSim1(rt, [simProvider("sim0"), sim2]));
      await waitFor("sim2 registered (starting)", () => rt.registry.host("sim2") !== undefined);
      // AUTO is left while the providers section (judged in AUTO: sim1 held) still runs.
      await rt.modes.request("MANUAL");
      await Deno.writeTextFile(gate, "");
      const report = await reload;
      assert.deepEqual(report.providers.held, ["sim1"]);
      assert.deepEqual(report.providers.added, ["sim2"]);
      assertRefusedForSim1(report);
      assertSim1Protected(rt);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload adding a provider that fails to start applies the protections added for it: its e-stop alarm raises on the missing input and latches the e-stop", async () => {
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), { arm: true });
  try {
    const p = alarmsConfig(
      `
alarms:
  - { id: sim2_hot, signal: sim2/tempctl0/tc1_temp, hihi: 500, action: estop }
`,
      ["sim0", "sim2"],
    );
    // A command that exits at once: sim2 never says hello.
    const sim2 = { ...simProvider("sim2"), command: "/bin/false", args: [] };
    const report = await rt.reload({
      ...rt.config,
      providers: [...rt.config.providers, sim2],
      alarms: p.alarms,
    });
    assert.deepEqual(report.providers.failed.map((f) => f.id), ["sim2"]);
    assert.deepEqual(report.refused, []);
    assert.equal(report.applied.includes("alarms"), true);
    assert.deepEqual(rt.config.alarms.map((a) => a.id), ["sim2_hot"]);
    const alarm = await waitFor("sim2_hot raised", () => {
      const a = rt.alarms.alarm("sim2_hot");
      return a.state === "active" ? a : null;
    });
    assert.equal(alarm.cause, "bad_quality");
    assert.equal(rt.estop.status().latched, true);
    assert.equal(rt.modes.current(), "FAULT");
  } finally {
    await rt.stop();
  }
});
