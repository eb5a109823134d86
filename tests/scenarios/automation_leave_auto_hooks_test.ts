/**
 * Leaving AUTO while the tree keeps commanding: the AUTO -> MANUAL before_transition hooks run
 * while the mode is still AUTO, and what a hook stops must stay stopped -- the tree may not
 * re-command it before the transition commits (docs/automation.md, "Leaving AUTO").
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

/** AUTO -> MANUAL: motor 1 of sim0 off, then motor 1 of sim1 off (a slow call: latency). */
const STOP_ON_LEAVING_AUTO: HookConfig = {
  from: "AUTO",
  to: "MANUAL",
  failOnError: true,
  path: PATH,
  calls: ["sim0", "sim1"].map((p, k) => ({
    deviceHandle: `${p}/motorctl0`,
    functionId: 0,
    functionName: "set_motor_duty",
    args: { motor_index: i(1), duty: d(0) },
    path: `${PATH}.calls[${k}]`,
  })),
};

Deno.test("Leaving AUTO: the tree cannot re-command what the before_transition hooks stop while they run", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "run_motor.xml",
      treeXml(
        `<Sequence>
      <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty"
                  args='json:{"motor_index": 1, "duty": 0.3}' />
      <Sleep msec="20" />
    </Sequence>`,
      ),
    );
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
          beforeTransition: [...hooks.beforeTransition, STOP_ON_LEAVING_AUTO],
        },
      },
    });
    try {
      await enterAuto(rt);
      await waitFor(
        "the tree runs motor 1",
        () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.3,
      );
      // The hook's second call (to sim1) takes 400 ms: the tree ticks meanwhile.
      await callAs(rt, "automated", "sim1/chaos_control", "inject_call_latency", {
        device_id: tv.s("motorctl0"),
        latency_ms: tv.i(400),
      });
      assert.equal(await rt.modes.request("MANUAL"), "MANUAL");
      assert.equal(rt.modes.current(), "MANUAL");
      await rt.cache.pollDevice("sim0", "motorctl0");
      assert.equal(
        cached(rt, "sim0/motorctl0", "motor1_duty"),
        0,
        "motor 1 stopped by the hook stays stopped",
      );
      // Held back while AUTO was being left: nothing to report about the device.
      const status = rt.automation!.status();
      assert.deepEqual([status.refused_calls, status.device_outages, status.last_error], [
        [],
        [],
        null,
      ]);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
