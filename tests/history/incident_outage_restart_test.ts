/**
 * One outage, one device-loss incident, driven end to end: the probe (the programmable provider, a
 * real child process restarted when it exits) is lost by failing reads, then its provider crashes
 * and comes back while the probe's reads still fail. DeviceOutages, the kernel and the incident
 * recorder run as in production; only the clocks are the test's.
 */
import assert from "node:assert/strict";
import type { IncidentBegun, IncidentJoined } from "../../src/history/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { programReadFailure } from "../helpers/programmable_provider.ts";
import {
  PROBE,
  probeFile,
  probeValues,
  reloadRestartingP0,
  startRig,
  T0,
} from "./_history_helpers.ts";

type Rig = Awaited<ReturnType<typeof startRig>>;

/** A failed read of the probe at `atMs`, then the bound (500 ms) passed: down. */
async function loseProbe(rig: Rig, atMs: number): Promise<void> {
  await programReadFailure(rig.rt.registry.host("p0")!);
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

for (const restart of [false, true]) {
  Deno.test(`a provider a reload restarted, up and crashing before its device answered a read: the loss is dated from the crash, not the take-out (${restart ? "" : "no "}supervisor restart)`, async () => {
    const rig = await startRig({ history: { incidentBeforeS: 2, incidentAfterS: 0 }, restart });
    const begun: IncidentBegun[] = [];
    rig.rt.incidents!.onIncident((i) => begun.push(i));
    let crashedAt: { mono: number; wall: number } | null = null;
    rig.rt.outages.onChange((c) => {
      if (c.providerId !== "p0" || c.deviceId !== "probe") return;
      // The take-out: the successor takes 2 s to come up.
      if (c.condition.reloading === true) {
        rig.clock.mono! += 2000;
        rig.clock.wallMs += 2000;
      }
      // The successor is up, its first read of the probe under way (10 s): 2 s later it crashes.
      if (c.previous === "down" && c.condition.kind === "failing" && crashedAt === null) {
        rig.clock.mono! += 2000;
        rig.clock.wallMs += 2000;
        crashedAt = { mono: rig.clock.mono!, wall: rig.clock.wallMs };
        Deno.kill(rig.rt.registry.host("p0")!.session!.pid, "SIGKILL");
      }
    });
    try {
      rig.rt.outages.setDownAfterMs(500);
      rig.clock.mono = 1_000_000;
      await rig.poll(T0 + 10_000, probeValues(1, 1)); // the probe answers: up
      rig.clock.mono = 1_001_000;
      rig.clock.wallMs = T0 + 11_000;
      await probeFile(rig.dataDir, {
        devices: {
          probe: { ...PROBE.devices.probe!, values: probeValues(2, 2), readDelayMs: 10_000 },
        },
      });
      await reloadRestartingP0(rig); // taken out at T0 + 11 s
      await waitFor("the probe lost", () => begun.length === 1, 20_000);
      const crash = crashedAt!;
      assert.ok(crash !== null, "the successor came up and crashed");
      const c = rig.rt.outages.condition("p0", "probe");
      if (c.kind === "down") assert.equal(c.sinceMono, crash.mono, "down since the crash");
      assert.deepEqual(
        begun.map((i) => [i.trigger, i.at_epoch_ms - T0]),
        [["device_loss", crash.wall - T0]],
        "one loss, dated at the successor's crash (T0 + 15 s), not the take-out (T0 + 11 s)",
      );
    } finally {
      await rig.rt.stop();
    }
  });
}
