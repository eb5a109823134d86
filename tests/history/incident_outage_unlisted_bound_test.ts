/**
 * A device whose outage date DeviceOutages let go (past MAX_UNLISTED_DEVICE_DATES: a restart left
 * out more devices than that) is not told `unconfigured` when a reload removes its provider: its
 * loss's incident must not be taken for the outage of the device a provider configured again
 * under that id lists (a device of its own, first seen). Driven end to end: the programmable
 * provider (a real child, restarted when it exits), the kernel, DeviceOutages and the incident
 * recorder as in production; only the clocks are the test's.
 */
import assert from "node:assert/strict";
import type { IncidentBegun } from "../../src/history/mod.ts";
import { MAX_UNLISTED_DEVICE_DATES } from "../../src/state/mod.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { type Inventory, programReadFailure, T } from "../helpers/programmable_provider.ts";
import { PROBE, probeFile, probeValues, startRig, T0 } from "./_history_helpers.ts";

type Rig = Awaited<ReturnType<typeof startRig>>;

/** A failed read of the probe at `atMs`, then the bound (500 ms) passed: down. */
async function loseProbe(rig: Rig, atMs: number): Promise<void> {
  await programReadFailure(rig.rt.registry.host("p0")!);
  rig.clock.wallMs = atMs;
  await rig.rt.cache.pollDevice("p0", "probe");
  rig.clock.mono! += 500;
  rig.clock.wallMs = atMs + 500;
  await rig.rt.cache.pollDevice("p0", "probe");
  await waitFor("probe down", () => rig.rt.outages.condition("p0", "probe").kind === "down");
}

/** `n` devices named `<prefix><i>`, each with no polled signal. */
function idle(prefix: string, n: number): Inventory["devices"] {
  return Object.fromEntries(
    Array.from({ length: n }, (_, i) => [`${prefix}${i}`, {
      signals: [{ id: "state", type: T.DOUBLE, hint: 0 }],
    }]),
  );
}

/** Devices whose reads answer none of their polled signal (failing from their first read). */
const BAD = Array.from({ length: MAX_UNLISTED_DEVICE_DATES - 1 }, (_, i) => `bad${i}`);

/** The probe first, then the BAD devices (MAX_DEVICES_PER_PROVIDER in all). */
const CROWDED: Inventory = {
  devices: {
    probe: PROBE.devices.probe!,
    ...Object.fromEntries(BAD.map((d) => [d, { signals: [{ id: "x", type: T.DOUBLE }] }])),
  },
};

Deno.test("a device lost, left out by a restart past MAX_UNLISTED_DEVICE_DATES, its provider removed and configured again: the new provider's device lost is an incident of its own", async () => {
  const dir = tempDir("incident-unlisted-");
  const file = await probeFile(dir, CROWDED);
  const rig = await startRig({
    history: { incidentBeforeS: 2, incidentAfterS: 0 },
    restart: true,
    inventoryFile: file,
  });
  const begun: IncidentBegun[] = [];
  rig.rt.incidents!.onIncident((i) => begun.push(i));
  let pid = 0;
  const restarted = (what: string) =>
    waitFor(what, () => {
      const h = rig.rt.registry.host("p0");
      return h !== undefined && h.available && h.session!.pid !== pid;
    }, 20_000);
  try {
    rig.rt.outages.setDownAfterMs(500);
    rig.clock.mono = 1_000_000;
    // The BAD devices are lost first (their losses noted before the probe's).
    for (const d of BAD) await rig.rt.cache.pollDevice("p0", d);
    rig.clock.mono! += 500;
    for (const d of BAD) await rig.rt.cache.pollDevice("p0", d);
    await waitFor(
      "the BAD devices down",
      () => BAD.every((d) => rig.rt.outages.condition("p0", d).kind === "down"),
    );
    await rig.rt.incidents!.settled();
    begun.length = 0;
    await rig.poll(T0 + 10_000, probeValues(1, 1));
    await loseProbe(rig, T0 + 10_500);
    await waitFor("the loss's incident", () => begun.length === 1);
    assert.match(begun[0]!.cause, /^device p0\/probe lost/);
    await rig.rt.incidents!.settled();
    // Its next processes list none of them, each another device: MAX_UNLISTED_DEVICE_DATES + 1
    // devices left out, the probe's date, kept first, is let go.
    for (const devices of [idle("other", 1), idle("another", 1)]) {
      await Deno.writeTextFile(file, JSON.stringify({ devices }));
      pid = rig.rt.registry.host("p0")!.session!.pid;
      Deno.kill(pid, "SIGKILL");
      await restarted(`p0 restarted listing ${Object.keys(devices)}`);
    }
    // A reload removes p0, the next configures it again: its process lists a probe.
    const p0 = rig.rt.config.providers[0]!;
    await rig.rt.reload({ ...rig.rt.config, providers: [] });
    await Deno.writeTextFile(file, JSON.stringify(PROBE));
    rig.clock.wallMs = T0 + 20_000; // its first read, failing or not, from here on
    await rig.rt.reload({ ...rig.rt.config, providers: [p0] });
    assert.equal(rig.rt.registry.host("p0")?.available, true, "p0 configured again, up");
    rig.clock.mono! += 10_000;
    await loseProbe(rig, T0 + 20_000);
    await rig.rt.incidents!.settled();
    // Before: one (the new probe's loss taken for the removed provider's outage, "the same
    // outage, no new incident").
    // (The other devices' losses at the crashes are incidents of their own.)
    assert.deepEqual(
      begun.filter((i) => i.cause.startsWith("device p0/probe lost"))
        .map((i) => [i.trigger, i.at_epoch_ms]),
      [["device_loss", T0 + 10_500], ["device_loss", T0 + 20_000]],
    );
  } finally {
    await rig.rt.stop();
  }
});
