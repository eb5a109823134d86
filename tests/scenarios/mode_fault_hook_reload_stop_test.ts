/**
 * The hook calls into FAULT and a configuration reload that stops the provider a hook call is at
 * (docs/safety.md, step 2 and step 3): the reload waits for that call before it stops the process,
 * bounded as for the e-stop's ladder calls (its provider's timeout_ms + DRAIN_MARGIN_MS), so the
 * call is answered and the FAULT's answer reports no hook failure; the process is stopped after,
 * and the reload answers once it is. FAULT entered by the e-stop (a `safety:` section without
 * ladder calls to sim1) and by an operator's mode request; the reload removes sim1, or restarts it
 * (its entry changed). The simulated providers run as child processes; sim1 holds every call to
 * its motor controller by its `inject_call_latency` (tests/scenarios/_reload_stop_rig.ts). The
 * reload's INFO line names what it waited for.
 */
import type { Kernel } from "../../src/app/kernel.ts";
import * as rig from "./_reload_stop_rig.ts";

/** The e-stop's FAULT. */
const byEstop = (rt: Kernel) => rt.estop.trigger("hook x reload");
/** An operator's FAULT (POST /v0/mode FAULT). */
const byOperator = (rt: Kernel) => rt.modes.requestWithReport("FAULT", { kind: "http" });

const cases = [
  {
    name:
      "ModeManager hook call into FAULT (e-stop) to a provider a reload removes is answered before the reload stops the process",
    enter: byEstop,
    reload: rig.SIM1_REMOVED,
  },
  {
    name:
      "ModeManager hook call into FAULT (e-stop) to a provider a reload restarts is answered before the reload stops its old process",
    enter: byEstop,
    reload: rig.SIM1_RESTARTED,
  },
  {
    name:
      "ModeManager hook call into FAULT (mode request) to a provider a reload removes is answered before the reload stops the process",
    enter: byOperator,
    reload: rig.SIM1_REMOVED,
  },
  {
    name:
      "ModeManager hook call into FAULT (mode request) to a provider a reload restarts is answered before the reload stops its old process",
    enter: byOperator,
    reload: rig.SIM1_RESTARTED,
  },
];

for (const { name, enter, reload } of cases) {
  Deno.test(name, () =>
    // Two inert sims; the `* -> FAULT` hook drives sim1's motor 1 to duty 0 (one call). The
    // e-stop's ladder is empty: the only stop action to sim1 is the hook call.
    rig.withArmedRuntime(rig.reloadStopConfig({ hookMotor: 1 }), async (rt, lines) => {
      // FAULT entered with sim1's motor controller slow; the reload while the hook call runs.
      const stopped = await rig.stopCallThenReload<
        { hook_failures: readonly unknown[]; hooks_pending?: true }
      >(rt, { stop: enter, what: "the hook call at sim1", next: reload.next });
      rig.assertHooksMade(stopped.answer);
      rig.assertWaitedLine(lines, "the hook calls into FAULT");
      rig.assertSim1Stopped(stopped, reload.how);
    }));
}
