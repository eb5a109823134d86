/**
 * Leaving AUTO while the tree reaches a one-time step: the AUTO -> MANUAL before_transition hooks
 * run while the mode is still AUTO and the tree still ticks, its actuating calls held back by the
 * mode gate until the transition commits (which halts the tree) or is vetoed. A call held back is
 * no failure of the step (nothing was sent): a RunOnce reached then must run its step at the next
 * AUTO, as one a halt interrupted does (docs/automation.md, "Leaving AUTO" and "State").
 */
import assert from "node:assert/strict";
import type { CallArgValue, HookConfig } from "../../src/config/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import {
  automationConfig,
  cached,
  callAs,
  enterAuto,
  TreeDir,
  treeXml,
  tv,
} from "./automation_helpers.ts";

const i = (v: number): CallArgValue => ({ type: "int64", int64: v });
const d = (v: number): CallArgValue => ({ type: "double", double: v });
const PATH = "automation.mode_transition_hooks.before_transition[1]";

/** AUTO -> MANUAL: motor 1 of sim1 off (a slow call: latency holds the transition). */
const STOP_SIM1_ON_LEAVING_AUTO: HookConfig = {
  from: "AUTO",
  to: "MANUAL",
  failOnError: true,
  path: PATH,
  calls: [{
    deviceHandle: "sim1/motorctl0",
    functionId: 0,
    functionName: "set_motor_duty",
    args: { motor_index: i(1), duty: d(0) },
    path: `${PATH}.calls[0]`,
  }],
};

/** Once motor_duty is 0.5 or more: sim0's motor 2 to 0.7, once (a recipe's one-time step). */
const ONE_TIME_STEP = treeXml(
  `<Sequence>
      <GetParameter param="motor_duty" value="{duty}" />
      <Fallback>
        <ScriptCondition code="duty &lt; 0.5" />
        <RunOnce>
          <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty"
                      args='json:{"motor_index": 2, "duty": 0.7}' />
        </RunOnce>
      </Fallback>
    </Sequence>`,
);

Deno.test("Leaving AUTO: a RunOnce step whose call the transition held back runs at the next AUTO", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("one_time_step.xml", ONE_TIME_STEP);
    const base = automationConfig(tree, {
      config: {
        providers: [
          simProvider("sim0", { yaml: SIM_INERT_YAML }),
          simProvider("sim1", { yaml: SIM_INERT_YAML }),
        ],
      },
    });
    const hooks = base.automation.modeTransitionHooks;
    const rt = await startRuntime({
      ...base,
      automation: {
        ...base.automation,
        modeTransitionHooks: {
          ...hooks,
          beforeTransition: [...hooks.beforeTransition, STOP_SIM1_ON_LEAVING_AUTO],
        },
      },
    });
    try {
      await enterAuto(rt);
      // The hook's call takes 600 ms: the tree ticks (every 50 ms) while AUTO is being left.
      await callAs(rt, "automated", "sim1/chaos_control", "inject_call_latency", {
        device_id: tv.s("motorctl0"),
        latency_ms: tv.i(600),
      });
      const leaving = rt.modes.request("MANUAL");
      // The step becomes due now: its call is held back until the transition commits.
      rt.parameters!.set("motor_duty", 0.6);
      assert.equal(await leaving, "MANUAL");
      await rt.cache.pollDevice("sim0", "motorctl0");
      assert.equal(cached(rt, "sim0/motorctl0", "motor2_duty"), 0, "nothing was sent meanwhile");
      // Nothing to report about the device, and no tree failure either: the call was held back.
      const status = rt.automation!.status();
      assert.deepEqual([status.refused_calls, status.device_outages, status.last_error], [
        [],
        [],
        null,
      ]);
      assert.equal(await rt.modes.request("AUTO"), "AUTO");
      await waitFor(
        "the one-time step runs in the next AUTO",
        () => cached(rt, "sim0/motorctl0", "motor2_duty") === 0.7,
        5000,
      );
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
