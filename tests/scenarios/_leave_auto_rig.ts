/**
 * The shared rig of the leave-AUTO scenarios (automation_leave_auto_hooks_test.ts,
 * automation_leave_auto_run_once_test.ts, automation_leave_auto_veto_test.ts): two inert sims as
 * child processes, automation running a tree with an AUTO -> MANUAL before_transition hook that
 * turns motor 1 of the providers' motor controllers off. The test slows sim1's motor controller
 * (slowSim1Motor) to hold the transition while the tree ticks, and may fail its calls
 * (failSim1Motor) so that the hook vetoes the transition.
 */
import type { HookConfig } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { call, hook, inertSim } from "../safety/_fixture.ts";
import { automationConfig, callAs, TreeDir, treeXml, tv } from "./automation_helpers.ts";

/** The leave-AUTO hook's config key: second, after automationConfig's AUTO -> FAULT hook. */
const PATH = "automation.mode_transition_hooks.before_transition[1]";

/** set_motor_duty's function id on the sim's motor controller (examples/providers/sim). */
const SET_MOTOR_DUTY_ID = 10;

/**
 * AUTO -> MANUAL, vetoing when a call fails: motor 1 of `providers`' motorctl0 to duty 0, in
 * order (sim1's is the slow one when the test makes it so).
 */
function leaveAutoHook(providers: readonly string[]): HookConfig {
  return hook(
    "AUTO",
    "MANUAL",
    providers.map((p, k) =>
      call(
        `${p}/motorctl0`,
        "set_motor_duty",
        { motor_index: 1, duty: { double: 0 } },
        `${PATH}.calls[${k}]`,
      )
    ),
    true,
    PATH,
  );
}

/** Once motor_duty is 0.5 or more: sim0's motor 2 to 0.7, once (a recipe's one-time step). */
export const ONE_TIME_STEP = treeXml(
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

/**
 * Starts the runtime (sims sim0 and sim1) with `tree` written to a temporary folder and the
 * leave-AUTO hook stopping motor 1 of `hookProviders`, runs `body`, then stops it and removes the
 * folder, whatever `body` did.
 */
export async function withLeaveAutoRuntime(
  o: { readonly tree: string; readonly hookProviders: readonly string[] },
  body: (rt: Kernel) => Promise<void>,
): Promise<void> {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("tree.xml", o.tree);
    const base = automationConfig(tree, {
      config: { providers: [inertSim("sim0"), inertSim("sim1")] },
    });
    const hooks = base.automation.modeTransitionHooks;
    const rt = await startRuntime({
      ...base,
      automation: {
        ...base.automation,
        modeTransitionHooks: {
          ...hooks,
          beforeTransition: [...hooks.beforeTransition, leaveAutoHook(o.hookProviders)],
        },
      },
    });
    try {
      await body(rt);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
}

/** sim1's motor controller answers each call `latencyMs` late (the hook's call holds the leave). */
export async function slowSim1Motor(rt: Kernel, latencyMs: number): Promise<void> {
  await callAs(rt, "automated", "sim1/chaos_control", "inject_call_latency", {
    device_id: tv.s("motorctl0"),
    latency_ms: tv.i(latencyMs),
  });
}

/** sim1's motor controller fails every set_motor_duty (the hook's call fails: a veto). */
export async function failSim1Motor(rt: Kernel): Promise<void> {
  await callAs(rt, "automated", "sim1/chaos_control", "inject_call_failure", {
    device_id: tv.s("motorctl0"),
    function_id: tv.s(String(SET_MOTOR_DUTY_ID)),
    failure_rate: tv.d(1),
  });
}
