/**
 * An e-stop pressed while a configuration reload restarts a provider (its entry changed), in the
 * window between the old process's removal and the new one's registration -- held open here by
 * another provider the same reload removes, whose process takes seconds to exit: the ladder's call
 * to the restarted provider fails UNAVAILABLE (no process of it is registered), naming the restart.
 * Status must
 * then name its device as not known to be safe, saying why (its provider is being restarted, not
 * "not configured"), and the new process must be brought to the safe state once it is up (its
 * securing run, counted by the reload). Real child processes: the inert simulated providers and
 * the programmable one.
 */
import assert from "node:assert/strict";
import { rig } from "../helpers/rig.ts";
import { call } from "../safety/_fixture.ts";
import { reloadIntoWindow, reloadWindowConfig } from "../helpers/reload_window.ts";

const MOTOR_OFF = call("sim1/motorctl0", "set_motor_duty", { motor_index: 1, duty: { double: 0 } });

Deno.test("Estop pressed while a reload restarts a provider, before its new process is registered: status names its device with why, and the new process is secured once up", async () => {
  await using r = await rig({
    programs: false,
    ...await reloadWindowConfig("estop-reload-window-"),
    safety: { hooks: [MOTOR_OFF] },
  });
  const rt = r.kernel;
  await rt.modes.request("MANUAL");
  const { reload } = await reloadIntoWindow(rt);
  const stop = await rt.estop.trigger("pressed during the reload");
  assert.equal(rt.registry.host("sim1"), undefined, "still in the window");
  const ladder = stop.actions.find((a) => a.device_handle === "sim1/motorctl0");
  assert.equal(ladder?.success, false, JSON.stringify(stop.actions));
  assert.equal(
    ladder?.error,
    "UNAVAILABLE: Provider unavailable: sim1 (provider sim1 is being restarted by a configuration reload)",
  );
  const during = rt.estop.status();
  const ofSim1 = (handles: readonly string[]) => handles.filter((h) => h.startsWith("sim1/"));
  // The ladder's device first (its call), then the others sim1 listed before (18c3e385): each with
  // why, the restart, not "not configured".
  const listed = ofSim1(during.unverified_devices);
  assert.equal(listed[0], "sim1/motorctl0", JSON.stringify(listed));
  assert.ok(listed.length > 1, JSON.stringify(listed));
  assert.deepEqual(
    during.unverified_reasons.filter((u) => u.device_handle.startsWith("sim1/")),
    listed.map((device_handle) => ({
      device_handle,
      reason: "its provider sim1 is being restarted by a configuration reload",
    })),
  );
  const report = await reload;
  assert.deepEqual(report.providers.restarted, ["sim1"], JSON.stringify(report));
  // The new process got the ladder's call: the reload waited for its securing run.
  assert.equal(report.estopActions, 1, JSON.stringify(report));
  assert.deepEqual(report.estopFailures, []);
  assert.ok(
    r.lines.some((l) =>
      /e-stop latched: provider sim1 is AVAILABLE again; bringing it to the safe state \(1 call/
        .test(l)
    ),
    r.lines.join("\n"),
  );
  assert.equal(rt.estop.latched, true);
});
