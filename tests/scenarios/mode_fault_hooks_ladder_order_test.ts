/**
 * A provider that comes back while an e-stop's ladder still runs is secured by the e-stop (its
 * ladder calls, queued behind the ladder's calls to it), but the stop's hooks into FAULT wait only
 * for the stop's ladder: they are made again for that provider once they have run, after its
 * securing calls, so it ends as a stop leaves it. Real child processes (the plant provider,
 * restarted by its supervisor).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, fanIntoFault, plantProvider, readSignal } from "../safety/_fixture.ts";

Deno.test("A provider that comes back while the stop's ladder runs ends as a stop leaves it: its ladder calls, then the hooks into FAULT", async () => {
  const heaterOff = call("plant/plant0", "set_heater", { enabled: false });
  await using r = await rig({
    providers: [
      // Each actuating call answers 1 s after it arrived, one at a time; restarted after 300 ms.
      plantProvider("plant", { latencyMs: 1000, restartBackoffMs: 300 }),
      // Holds the stop's ladder 1.5 s.
      plantProvider("slow", { latencyMs: 1500 }),
    ],
    pollingIntervalMs: 60000, // no polls waiting behind the slow calls
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0.5)] },
    },
    safety: {
      hooks: [
        call("slow/plant0", "set_heater", { enabled: false }),
        heaterOff,
        heaterOff,
        call("plant/plant0", "set_fan", { duty: { double: 0 } }),
      ],
    },
  });
  const rt = r.kernel;
  const plant = rt.registry.host("plant")!;
  const pid = r.kill("plant");
  await waitFor("plant down", () => !plant.available);
  const stop = rt.estop.trigger("operator");
  // Back while the slow ladder call runs: secured (3 s of calls), its set_fan 0 sent last.
  await waitFor("plant restarted", () => plant.available && plant.session!.pid !== pid, 20_000);
  const result = await stop;
  const hookCalls = async () =>
    (await rt.audit.query({ limit: 100, origin: "hook" })).entries.filter((e) =>
      e.action === "call" && e.function === "set_fan" && e.outcome === "accepted"
    ).reduce((n, e) => n + e.count, 0);
  const securedCalls = async () =>
    (await rt.audit.query({ limit: 100, origin: "estop" })).entries.filter((e) =>
      e.action === "call" && e.device_handle === "plant/plant0" && e.outcome === "accepted"
    ).reduce((n, e) => n + e.count, 0);
  await waitFor("the plant secured", async () => await securedCalls() >= 3, 10_000);
  // Bounded: the hook call made after the plant's ladder calls (the parent makes it only once).
  await waitFor("the hook call into FAULT made again", async () => await hookCalls() >= 2, 5000)
    .catch(() => {});
  assert.equal(
    await readSignal(rt, "plant", "plant0", "fan_duty"),
    0.5,
    `the state a stop leaves: the ladder's calls, then the hooks into FAULT (${
      JSON.stringify(result.hook_failures)
    })`,
  );
});

Deno.test("An e-stop triggered again while latched ends as the first left the machine: its ladder calls, then the hooks into FAULT", async () => {
  await using r = await rig({
    providers: [plantProvider("plant")],
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0.5)] },
    },
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
  });
  const rt = r.kernel;
  await rt.estop.trigger("operator");
  assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0.5, "ladder, then hooks");
  // A second press (or an alarm) while latched runs the ladder again.
  const again = await rt.estop.trigger("operator, again");
  assert.deepEqual(again.hook_failures, []);
  assert.equal(
    await readSignal(rt, "plant", "plant0", "fan_duty"),
    0.5,
    "a trigger while latched leaves the state a stop leaves: ladder, then hooks",
  );
});
