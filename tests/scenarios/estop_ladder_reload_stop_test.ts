/**
 * The e-stop's ladder and a configuration reload that stops the provider a ladder call is at
 * (docs/safety.md, "E-stop and reload"): the reload waits for that call before it stops the
 * process, bounded by the call's own bound (its provider's timeout_ms + DRAIN_MARGIN_MS), so the
 * call is answered and the stop reports it made; the process is stopped after, and the reload
 * answers once it is. Both ways a reload stops a provider: removed, and restarted (its entry
 * changed). The simulated providers run as child processes; sim1 holds every call to its motor
 * controller by its `inject_call_latency` (tests/scenarios/_reload_stop_rig.ts).
 */
import type { Kernel } from "../../src/app/kernel.ts";
import * as rig from "./_reload_stop_rig.ts";

const cases = [
  {
    name:
      "Estop ladder call to a provider a reload removes is answered before the reload stops the process",
    reload: rig.SIM1_REMOVED,
  },
  {
    name:
      "Estop ladder call to a provider a reload restarts is answered before the reload stops its old process",
    reload: rig.SIM1_RESTARTED,
  },
];

for (const { name, reload } of cases) {
  Deno.test(name, () =>
    // Two inert sims whose ladder drives sim1's motor 1 to duty 0 (one call).
    rig.withArmedRuntime(rig.reloadStopConfig({ ladderMotor: 1 }), async (rt) => {
      // The e-stop latched with sim1's motor controller slow; the reload while its call runs.
      const stopped = await rig.stopCallThenReload(rt, {
        stop: (rt: Kernel) => rt.estop.trigger("ladder x reload"),
        what: "the ladder's call at sim1",
        next: reload.next,
      });
      rig.assertLadderCallMade(stopped.answer.actions);
      rig.assertSim1Stopped(stopped, reload.how);
    }));
}
