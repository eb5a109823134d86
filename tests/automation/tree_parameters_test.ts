/**
 * The parameters a behavior tree reads by a literal name (GetParameter*) against the declared ones
 * (automation.parameters), at start-up and through a reload, over the simulated provider: a name
 * nobody declares, or a parameter of a type the node refuses, could only fail at every tick.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** Reads target_temp then sleeps (the demo parameters declare target_temp, a double). */
const READS_TARGET = treeXml(
  `<Sequence>
      <GetParameter param="target_temp" value="{t}" />
      <Sleep msec="60000" />
    </Sequence>`,
);

async function withDir(fn: (dir: TreeDir) => Promise<void>): Promise<void> {
  const dir = await TreeDir.create();
  try {
    await fn(dir);
  } finally {
    await dir.dispose();
  }
}

function withParameters(base: Config, names: string[]): Config {
  return {
    ...base,
    automation: {
      ...base.automation,
      parameters: base.automation.parameters.filter((p) => names.includes(p.name)),
    },
  };
}

Deno.test("start-up refuses a tree whose GetParameter names an undeclared parameter or one of another type", async () => {
  await withDir(async (dir) => {
    const tree = await dir.write(
      "typo.xml",
      treeXml(
        `<Sequence>
      <GetParameter param="target_tmp" value="{t}" />
      <GetParameterBool param="motor_duty" value="{on}" />
    </Sequence>`,
      ),
    );
    const started = await startRuntime(automationConfig(tree)).then(
      async (rt) => {
        await rt.stop();
        return "started";
      },
      (err: Error) => err.message,
    );
    assert.match(
      started,
      /port 'param': "target_tmp" is not a declared parameter \(automation\.parameters\) \(did you mean "target_temp"\?\)/,
    );
    assert.match(
      started,
      /port 'param': "motor_duty" is a double parameter; GetParameterBool reads only bool parameters/,
    );
  });
});

Deno.test("Kernel.reload refuses a parameters change that removes a parameter the loaded tree reads", async () => {
  await withDir(async (dir) => {
    const tree = await dir.write("reads.xml", READS_TARGET);
    const rt = await startRuntime(automationConfig(tree), { arm: true });
    try {
      const report = await rt.reload(withParameters(rt.config, ["motor_duty"]));
      assert.deepEqual(report.applied, [], JSON.stringify(report));
      assert.deepEqual(report.refused.map((r) => r.section), ["automation.parameters"]);
      assert.match(
        report.refused[0]!.why,
        /^the behavior tree in force reads parameters it would not declare: .*"target_temp" is not a declared parameter/,
      );
      assert.equal(rt.parameters!.get("target_temp")?.value, 40);
    } finally {
      await rt.stop();
    }
  });
});

Deno.test("Kernel.reload replaces tree and parameters together when the new tree reads the new names", async () => {
  await withDir(async (dir) => {
    const tree = await dir.write("reads.xml", READS_TARGET);
    const rt = await startRuntime(automationConfig(tree), { arm: true });
    try {
      const renamed = await dir.write(
        "renamed.xml",
        treeXml(`<GetParameter param="duty" value="{d}" />`),
      );
      const next = withParameters(rt.config, []);
      const report = await rt.reload({
        ...next,
        automation: {
          ...next.automation,
          behaviorTree: renamed,
          parameters: [{
            name: "duty",
            type: "double",
            default: 0.1,
            min: 0,
            max: 1,
            allowedValues: [],
          }],
        },
      });
      assert.deepEqual(report.refused, []);
      assert.deepEqual(report.failed, []);
      assert.deepEqual(report.applied, ["automation.behavior_tree", "automation.parameters"]);
      assert.deepEqual(rt.parameters!.list().map((p) => p.name), ["duty"]);
    } finally {
      await rt.stop();
    }
  });
});

Deno.test("Kernel.reload refuses a tree reading a parameter the new configuration does not declare", async () => {
  await withDir(async (dir) => {
    const tree = await dir.write("reads.xml", READS_TARGET);
    const rt = await startRuntime(automationConfig(tree), { arm: true });
    try {
      const typo = await dir.write(
        "typo.xml",
        treeXml(`<GetParameterInt64 param="motor_dutty" value="{d}" />`),
      );
      const report = await rt.reload({
        ...rt.config,
        automation: { ...rt.config.automation, behaviorTree: typo },
      });
      assert.deepEqual(report.applied, []);
      assert.deepEqual(report.failed.map((f) => f.section), ["automation.behavior_tree"]);
      assert.match(report.failed[0]!.why, /"motor_dutty" is not a declared parameter/);
      assert.equal(rt.config.automation.behaviorTree, tree, "the running tree is kept");
    } finally {
      await rt.stop();
    }
  });
});

Deno.test("Kernel.reload outside AUTO: the parameters section refused for the tree's reads is audited as refused by validation, not by the AUTO run gate", async () => {
  await withDir(async (dir) => {
    const tree = await dir.write("reads.xml", READS_TARGET);
    const rt = await startRuntime(automationConfig(tree), { arm: true });
    try {
      assert.equal(rt.modes.current(), "MANUAL");
      const report = await rt.reload(withParameters(rt.config, ["motor_duty"]));
      assert.deepEqual(report.refused.map((r) => r.section), ["automation.parameters"]);
      const entry = (await rt.audit.query({ limit: 100 })).entries.find((e) =>
        e.action === "config" && e.function === "automation.parameters"
      );
      assert.equal(entry?.outcome, "refused");
      assert.equal(entry?.refused_by, "validation", JSON.stringify(entry));
    } finally {
      await rt.stop();
    }
  });
});
