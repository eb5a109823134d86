/**
 * A reload never takes stop actions from a stop under way: a hook call into FAULT that a reload
 * dropped after the stop began is still made by that stop (dropped calls first). When the
 * provider it addresses was down as the stop's hooks ran, it gets that call when it comes back
 * while the stop still stands (latched, FAULT), not only the hook calls in force then. Real child
 * processes: the plant provider (killed, restarted by its supervisor) and a slow one whose ladder
 * call gives the reload time to apply before the stop's hooks run.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, fanIntoFault, plantProvider, readSignal } from "../safety/_fixture.ts";

Deno.test("A provider down as the stop's hooks make a call a reload dropped gets that call when it comes back while the stop stands", async () => {
  await using r = await rig({
    providers: [
      // Down through the stop's hooks, then restarted by its supervisor.
      plantProvider("plant", { restartBackoffMs: 4000 }),
      // Each actuating call answers 1 s after it arrived: the ladder takes that long.
      plantProvider("slow", { latencyMs: 1000 }),
    ],
    pollingIntervalMs: 60000, // no polls waiting behind the slow calls
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      // In FAULT the plant's fan runs at half (a cool-down).
      modeTransitionHooks: {
        beforeTransition: [],
        afterTransition: [
          fanIntoFault(0.5),
        ],
      },
    },
    safety: { hooks: [call("slow/plant0", "set_heater", { enabled: false })] },
  });
  const rt = r.kernel;
  const plant = rt.registry.host("plant")!;
  const pid = r.kill("plant");
  await waitFor("plant down", () => !plant.available);
  const stop = rt.estop.trigger("operator");
  // While the ladder's slow call runs, a reload drops the hook into FAULT.
  const report = await rt.reload({
    ...rt.config,
    automation: {
      ...rt.config.automation,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
    },
  });
  assert.ok(report.applied.includes("automation.mode_transition_hooks"), JSON.stringify(report));
  const result = await stop;
  // The stop made the dropped call; the plant was down: it failed.
  assert.ok(
    result.hook_failures.some((f) => f.device_handle === "plant/plant0"),
    `the stop's dropped hook call failed on the plant that is down: ${JSON.stringify(result)}`,
  );
  await waitFor("plant restarted", () => plant.available && plant.session!.pid !== pid, 20_000);
  // Bounded: on the parent the plant gets no hook call when it comes back.
  await waitFor(
    "fan at the stop's hook duty",
    async () => await readSignal(rt, "plant", "plant0", "fan_duty") === 0.5,
    3000,
  ).catch(() => {});
  assert.equal(
    await readSignal(rt, "plant", "plant0", "fan_duty"),
    0.5,
    "a provider back while the stop stands gets the hook call that stop started with",
  );
});
