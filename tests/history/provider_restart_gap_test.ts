/**
 * A provider that crashes and is restarted leaves a gap in its devices' history that an answer
 * shows: the ring records the moment it went down as a sample of quality UNAVAILABLE (as
 * GET /v0/state reads it then), so a trend breaks there instead of drawing a line across the
 * outage; a bucket holding the outage says UNAVAILABLE as its worst quality, also from the disk
 * tier after a restart of the runtime.
 */
import assert from "node:assert/strict";
import { probeFile, probeValues, reloadRestartingP0, startRig, T0 } from "./_history_helpers.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";

Deno.test("History across a provider crash and restart: the outage is an UNAVAILABLE sample, in the ring and in the disk tier's bucket", async () => {
  const dataDir = tempDir("history-provider-gap-");
  const file = await probeFile(dataDir);
  const history = { stepMs: 10_000 };
  const rig = await startRig({ dataDir, inventoryFile: file, restart: true, history });
  let samples = 0;
  try {
    await rig.poll(T0 + 1_000, probeValues(20, 1));
    await rig.poll(T0 + 2_000, probeValues(21, 2));
    // The provider exits (function 3); it is down at T0 + 3 s on the wall clock, then restarted.
    const host = rig.rt.registry.host("p0")!;
    const pid = host.session!.pid;
    rig.clock.wallMs = T0 + 3_000;
    // The restart's own wake-up poll (the cache asks a provider back up at once) must be in
    // before the next poll's answer is set: landing after it, it read that answer at T0 + 3 s.
    let polledSinceRestart = 0;
    const unwatch = rig.rt.cache.onDevicePolled((d) => {
      if (d.providerId === "p0" && host.available && host.session?.pid !== pid) {
        polledSinceRestart++;
      }
    });
    await host.request("call", { device_id: "probe", function_id: 3, args: {} });
    await waitFor(
      "restarted, and its wake-up poll in",
      () => host.available && host.session!.pid !== pid && polledSinceRestart > 0,
    );
    unwatch();
    await rig.poll(T0 + 6_000, probeValues(22, 3));

    const full = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0}`);
    assert.equal(full.source, "memory");
    // The restart's own wake-up poll (its answer has no values yet: the signals stay UNAVAILABLE)
    // may land at the same wall time: a sample equal to the one before is one line of the trend.
    const points = full.signals[0].points.map((
      p: { t_ms: number; last: unknown; quality: string },
    ) => [p.t_ms, p.last, p.quality]);
    assert.deepEqual(
      points.filter((p: unknown[], i: number) =>
        i === 0 || JSON.stringify(p) !== JSON.stringify(points[i - 1])
      ),
      [
        [T0 + 1_000, 20, "OK"],
        [T0 + 2_000, 21, "OK"],
        [T0 + 3_000, 21, "UNAVAILABLE"],
        [T0 + 6_000, 22, "OK"],
      ],
      "the outage is in the ring: the last value, UNAVAILABLE, when the provider went down",
    );
    const buckets = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&step_ms=10000`,
    );
    assert.deepEqual(
      buckets.signals[0].points.map((p: { count: number; quality: string }) => [
        p.count,
        p.quality,
      ]),
      [[points.length, "UNAVAILABLE"]],
      "a bucket holding the outage says so as its worst quality",
    );
    samples = points.length;
    // Into the next bucket: the first one is written to the disk tier.
    await rig.poll(T0 + 11_000, probeValues(23, 4));
    await rig.rt.history!.flushDisk();
  } finally {
    await rig.rt.stop();
  }
  const clock = new TestClock();
  clock.wallMs = T0 + 60_000;
  const again = await startRig({ dataDir, inventoryFile: file, clock, history });
  try {
    const disk = await again.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 9_999}`,
    );
    assert.equal(disk.source, "disk");
    assert.deepEqual(
      disk.signals[0].points.map((p: { t_ms: number; count: number; quality: string }) => [
        p.t_ms,
        p.count,
        p.quality,
      ]),
      [[T0, samples, "UNAVAILABLE"]],
      "the disk tier's bucket keeps the outage's quality across a restart of the runtime",
    );
  } finally {
    await again.rt.stop();
  }
});

Deno.test("History of a provider restarted by a reload: a signal the new process gives no value is not answered with the old process's last value as OK", async () => {
  const rig = await startRig({ history: { stepMs: 10_000 } });
  try {
    await rig.poll(T0 + 1_000, probeValues(20, 1));
    await rig.poll(T0 + 2_000, probeValues(21, 2));
    // Restarted by a reload (its command line changed): a new process, its devices described
    // afresh; until it reports temp, GET /v0/state has no sample of it.
    rig.clock.wallMs = T0 + 3_000;
    await reloadRestartingP0(rig);
    await waitFor("the new process up", () => rig.rt.registry.host("p0")?.available === true);
    const withoutTemp = probeValues(0, 3).filter((v) => v.id !== "temp");
    await rig.poll(T0 + 4_000, withoutTemp);
    const state = await rig.json("/v0/state");
    const probe = state.devices.find((d: { device_id: string }) => d.device_id === "probe");
    assert.equal(
      probe.values.find((v: { signal_id: string }) => v.signal_id === "temp"),
      undefined,
      "GET /v0/state has no sample of temp from the new process",
    );
    await rig.poll(T0 + 6_000, probeValues(22, 4));

    const full = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0}`);
    const points: unknown[][] = full.signals[0].points.map((
      p: { t_ms: number; last: unknown; quality: string },
    ) => [p.t_ms, p.last, p.quality]);
    const after = points.filter((p) => (p[0] as number) > T0 + 2_000 && p[1] === 21);
    assert.deepEqual(
      after,
      [],
      `the old process's last value is no sample of the new one (${JSON.stringify(points)})`,
    );
    assert.deepEqual(points.slice(0, 2), [[T0 + 1_000, 20, "OK"], [T0 + 2_000, 21, "OK"]]);
    assert.deepEqual(points.at(-1), [T0 + 6_000, 22, "OK"]);
    assert.ok(
      points.some((p) => p[0] === T0 + 4_000 && p[1] === null && p[2] === "UNAVAILABLE"),
      `the poll without temp is a gap in its trend (${JSON.stringify(points)})`,
    );
    // The disk tier's bucket says so too (its worst quality).
    const buckets = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&step_ms=10000`,
    );
    assert.equal(buckets.signals[0].points[0].quality, "UNAVAILABLE");
  } finally {
    await rig.rt.stop();
  }
});
