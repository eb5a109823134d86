/**
 * The e-stop's plan across a reload while AUTO runs (docs/safety.md sec. 9): without a `safety:`
 * section the e-stop adopts the calls of the `* -> FAULT` hooks; a reload that adds a `safety:`
 * section (which turns the adoption off) takes those calls away from the e-stop. In AUTO that
 * weakens the running machine's stop and is refused, as any ladder call taken away is.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import {
  automationConfig,
  enterAuto,
  STOP_MOTOR_ON_FAULT,
  TreeDir,
  treeXml,
} from "../scenarios/automation_helpers.ts";

Deno.test("Kernel.reload in AUTO adding a safety section that drops the e-stop's adopted hook calls is refused; the e-stop keeps them", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree);
    const config: Config = {
      ...base,
      automation: {
        ...base.automation,
        // * -> FAULT: adopted by the e-stop (no safety section).
        modeTransitionHooks: {
          beforeTransition: [{ ...STOP_MOTOR_ON_FAULT, from: "*" }],
          afterTransition: [],
        },
      },
    };
    const rt = await startRuntime(config);
    try {
      assert.equal(rt.config.safety.present, false);
      const adopted = rt.estop.planView();
      assert.equal(adopted.rung, "hooks");
      await enterAuto(rt);
      const report = await rt.reload({
        ...rt.config,
        safety: { ...rt.config.safety, present: true }, // an empty safety: block
      });
      assert.equal(rt.modes.current(), "AUTO");
      assert.deepEqual(rt.estop.planView(), adopted, "the e-stop plan changed while AUTO runs");
      assert.deepEqual(report.refused.map((r) => r.section), ["safety"]);
      assert.match(report.refused[0]!.why, /no longer calls sim0\/motorctl0 set_motor_duty/);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload in AUTO turning the adopted * -> FAULT hook into AUTO -> FAULT (same calls) is refused: the e-stop would no longer adopt them", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree);
    const hooks = (from: "*" | "AUTO") => ({
      beforeTransition: [{ ...STOP_MOTOR_ON_FAULT, from }],
      afterTransition: [],
    });
    const rt = await startRuntime({
      ...base,
      automation: { ...base.automation, modeTransitionHooks: hooks("*") },
    });
    try {
      const adopted = rt.estop.planView();
      assert.equal(adopted.rung, "hooks");
      await enterAuto(rt);
      const report = await rt.reload({
        ...rt.config,
        automation: { ...rt.config.automation, modeTransitionHooks: hooks("AUTO") },
      });
      assert.equal(rt.modes.current(), "AUTO");
      assert.deepEqual(rt.estop.planView(), adopted, "the e-stop plan changed while AUTO runs");
      assert.deepEqual(report.refused.map((r) => r.section), ["automation.mode_transition_hooks"]);
      assert.match(report.refused[0]!.why, /the e-stop no longer calls sim0\/motorctl0/);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
