/**
 * One outage, one device-loss incident, driven end to end: the probe (the programmable provider, a
 * real child process restarted when it exits) is lost by failing reads, then its provider crashes
 * and comes back while the probe's reads still fail. DeviceOutages, the kernel and the incident
 * recorder run as in production; only the clocks are the test's.
 */
import assert from "node:assert/strict";
import type { IncidentBegun, IncidentJoined } from "../../src/history/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { T } from "../helpers/programmable_provider.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";

type Rig = Awaited<ReturnType<typeof startRig>>;

/** The probe's reads fail from its next poll on (programmed in the provider's current process). */
async function programFailure(rig: Rig): Promise<void> {
  await rig.rt.registry.host("p0")!.request("call", {
    device_id: "probe",
    function_id: 1,
    args: {
      answer: {
        type: T.STRING,
        string_value: JSON.stringify({ read: { error: { code: 14, message: "bus fault" } } }),
      },
    },
  });
}

/** A failed read of the probe at `atMs`, then the bound (500 ms) passed: down. */
async function loseProbe(rig: Rig, atMs: number): Promise<void> {
  await programFailure(rig);
  rig.clock.wallMs = atMs;
  await rig.rt.cache.pollDevice("p0", "probe");
  rig.clock.mono! += 500;
  rig.clock.wallMs = atMs + 500;
  await waitFor("probe down", () => rig.rt.outages.condition("p0", "probe").kind === "down");
}

for (const afterS of [0, 30]) {
  Deno.test(`a device lost, its provider crashing and coming back with the device failing still, is one device-loss incident (incident_after_s ${afterS})`, async () => {
    const rig = await startRig({
      history: { incidentBeforeS: 2, incidentAfterS: afterS },
      restart: true,
    });
    const begun: IncidentBegun[] = [];
    const joined: IncidentJoined[] = [];
    rig.rt.incidents!.onIncident((i) => begun.push(i));
    rig.rt.incidents!.onIncidentJoined((j) => joined.push(j));
    try {
      rig.rt.outages.setDownAfterMs(500);
      rig.clock.mono = 1_000_000;
      await rig.poll(T0 + 10_000, probeValues(1, 1));
      await loseProbe(rig, T0 + 10_500);
      await waitFor("the loss's incident", () => begun.length === 1);
      await rig.rt.incidents!.settled();
      const pid = rig.rt.registry.host("p0")!.session!.pid;
      rig.clock.mono! += 1000;
      Deno.kill(pid, "SIGKILL");
      await waitFor(
        "p0 restarted",
        () => {
          const h = rig.rt.registry.host("p0");
          return h !== undefined && h.available && h.session!.pid !== pid;
        },
        20_000,
      );
      await loseProbe(rig, T0 + 12_000);
      await rig.rt.incidents!.settled();
      assert.deepEqual(
        begun.map((i) => [i.trigger, i.at_epoch_ms]),
        [["device_loss", T0 + 10_500]],
        "one outage: one incident, dated at its first failed read",
      );
      if (afterS > 0) {
        // Waiting for its window: the later loss is listed in it.
        assert.deepEqual(joined.map((j) => j.incident_id), [begun[0]!.incident_id]);
      } else {
        assert.equal(rig.rt.incidents!.list().length, 1, "one record written");
      }
    } finally {
      await rig.rt.stop();
    }
  });
}
