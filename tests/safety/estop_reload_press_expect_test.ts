/**
 * A reload that restarts a provider and changes its expectations reads them back (docs/safety.md:
 * "status never shows checks of expectations no longer in force") also when the provider came
 * back released before the reload's safety section and a press latched the e-stop again: no
 * securing run is in force for it (it came back unlatched), and the press's stop, begun before the
 * section applied, read back the old expectations.
 */
import { waitFor } from "../helpers/kernel.ts";
import { plantProvider } from "./_fixture.ts";
import {
  assertReloadReadBackInForce,
  HEATER_OFF,
  heldSlowRig,
  latchThenReloadRestartingPlant,
} from "./_held_slow_rig.ts";

Deno.test("Estop: a reload restarting a provider and changing its expectations reads them back when the provider came back released and a press latched before its safety section", async () => {
  const entry = plantProvider("plant", { restartBackoffMs: 50 });
  const plant = { ...entry, restartPolicy: { ...entry.restartPolicy, maxAttempts: 5 } };
  const { r: started, held } = await heldSlowRig(plant, [HEATER_OFF]);
  await using r = started;
  try {
    const rt = r.kernel;
    // The first latch: its stop is held by slow's ladder call.
    // The reload restarts plant (another timeout) and expects its fan at 0 too; plant, back
    // under the first latch, is secured, and the reload waits for its read-back (behind the stop).
    const { first, report } = await latchThenReloadRestartingPlant(r, plant);
    // Released; plant crashes and comes back released (nobody secures it); latched again: the
    // second latch's stop begins once the first has ended, before the reload's safety section.
    rt.estop.clear();
    const host = rt.registry.host("plant")!;
    const pid = r.kill("plant");
    await waitFor("plant down", () => !host.available);
    await waitFor(
      "plant back, released",
      () => host.available && host.session!.pid !== pid,
      20_000,
    );
    const second = rt.estop.trigger("second latch");
    held.resolve();
    await first;
    await second;
    await assertReloadReadBackInForce(r, report);
  } finally {
    held.resolve();
  }
});
