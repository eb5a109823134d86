/**
 * A provider whose devices were lost already (its process died, its restart off) and whose entry a
 * reload then changes to one that cannot start: its devices were lost once, when the process died
 * -- one device-loss incident trigger each. The reload that failed to start it again took out
 * nothing that was not lost already: no second device loss for the same outage (docs/history.md,
 * "Incidents": a device the reload took out is lost at its failed start, once).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { inertSim } from "../safety/_fixture.ts";
import { automationOptions } from "./automation_helpers.ts";
import { failedStartText } from "../../src/providers/mod.ts";
import { withUnstartable } from "../helpers/sim_config.ts";

Deno.test("Reload: a provider down already whose restart fails notes no second device loss", async () => {
  await using r = await rig({
    programs: false,
    ...automationOptions(null, {
      config: { providers: [inertSim("sim0"), inertSim("sim1", { restart: false })] },
    }),
    safety: { zeroIsSafe: true },
  });
  const rt = r.kernel;
  // Every device-loss trigger as it is noted (its record is written incident_after_s later).
  const noted: string[] = [];
  rt.incidents!.onIncident((h) => {
    for (const c of [h, ...h.also]) if (c.trigger === "device_loss") noted.push(c.cause);
  });
  rt.incidents!.onIncidentJoined((j) => void (j.trigger === "device_loss" && noted.push(j.cause)));
  await rt.modes.request("MANUAL");
  await waitFor("sim1's motor polled", () => rt.cache.device("sim1", "motorctl0")?.available);
  const sim1 = rt.registry.host("sim1")!;
  const listed = sim1.devices.map((d) => `sim1/${d.device.deviceId}`).sort();
  const lost = () => noted.map((c) => c.split(" ")[1]).sort();
  Deno.kill(sim1.session!.pid, "SIGKILL");
  await waitFor("sim1's devices lost", () => noted.length === listed.length, 10_000);
  assert.deepEqual(lost(), listed);

  // Its entry changed to one that cannot start: the reload takes out a host that runs nothing.
  const result = await rt.reload(withUnstartable(rt.config, "sim1"));
  assert.match(result.providers.failed.map(failedStartText).join(), /^sim1: cannot start provider/);
  await new Promise((resolve) => setTimeout(resolve, 200)); // a join is told in a microtask
  assert.deepEqual(lost(), listed, `each device lost once:\n${noted.join("\n")}`);
});
