/**
 * A provider restart that declares another unit for a signal (temp in degC, then in K): a history
 * answer over the change still names the unit declared now (`unit`), and says when the unit
 * changed and from what (`unit_changes`), so the samples before it are not labelled with the new
 * unit; the CSV labels each point with the unit it was polled in (docs/history.md, "A unit
 * change"). Before, the answer labelled every point with today's unit: 20 degC read as 20 K.
 */
import assert from "node:assert/strict";
import { pointsInUnitNow } from "../../console/trend.js";
import {
  probeFile,
  probeTempIn,
  probeValues,
  restartDeclaringTempIn,
  startRig,
  T0,
} from "./_history_helpers.ts";
import { tempDir } from "../helpers/kernel.ts";

Deno.test("History answers over a unit change say when the unit changed, and the CSV labels each point with its own unit", async () => {
  const dataDir = tempDir("history-unit-change-");
  const inventoryFile = await probeFile(dataDir, probeTempIn("degC"));
  const rig = await startRig({ dataDir, inventoryFile, history: { diskMaxBytes: 0 } });
  try {
    await rig.poll(T0 + 1000, probeValues(20, 1).slice(0, 1));
    await rig.poll(T0 + 2000, probeValues(21, 2).slice(0, 1));
    // The provider restarts (a reload with new arguments) and declares temp in K.
    rig.clock.wallMs = T0 + 3000;
    await restartDeclaringTempIn(rig, probeTempIn("K"), "K");
    await rig.poll(T0 + 5000, probeValues(294, 3).slice(0, 1));
    await rig.poll(T0 + 6000, probeValues(295, 4).slice(0, 1));

    const path = `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 6000}`;
    const json = await rig.json(path);
    assert.equal(json.status.code, "OK");
    const [temp] = json.signals;
    assert.equal(temp.unit, "K", "the unit declared now, as before");
    assert.deepEqual(
      temp.points.filter((p: { last: unknown }) => p.last !== null).map((
        p: { t_ms: number; last: number },
      ) => [p.t_ms - T0, p.last]),
      [[1000, 20], [2000, 21], [5000, 294], [6000, 295]],
    );
    assert.deepEqual(
      temp.unit_changes,
      [{ at_ms: T0 + 3000, unit_before: "degC", unit: "K" }],
      "the change: when, and from what",
    );

    const csv = await (await rig.get(`${path}&format=csv`)).text();
    const rows = csv.split("\r\n").slice(1, -1).map((l) => l.split(","))
      .filter((f) => f[4] !== "");
    assert.deepEqual(
      rows.map((f) => [Number(f[1]) - T0, f[4], f[7]]),
      [[1000, "20", "degC"], [2000, "21", "degC"], [5000, "294", "K"], [6000, "295", "K"]],
      "each point with the unit it was polled in",
    );

    // A question after the change only: nothing changed within it.
    const later = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0 + 3000}`);
    assert.deepEqual(later.signals[0].unit_changes, []);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("A unit change before a wall clock stepped back behind it is dated at the first poll after the step: the polls since are labelled with the new unit", async () => {
  const dataDir = tempDir("history-unit-change-step-");
  const inventoryFile = await probeFile(dataDir, probeTempIn("degC"));
  const rig = await startRig({ dataDir, inventoryFile, history: { diskMaxBytes: 0 } });
  try {
    await rig.poll(T0 + 1000, probeValues(20, 1).slice(0, 1));
    rig.clock.wallMs = T0 + 10_000;
    await restartDeclaringTempIn(rig, probeTempIn("K"), "K");
    await rig.poll(T0 + 11_000, probeValues(294, 2).slice(0, 1));
    // The wall clock steps back 5 s (an NTP correction): the next polls, in K, are stamped
    // before the change's first poll.
    await rig.poll(T0 + 6000, probeValues(295, 3).slice(0, 1));
    await rig.poll(T0 + 7000, probeValues(296, 4).slice(0, 1));

    const path = `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 20_000}`;
    const json = await rig.json(path);
    // The ring answers the polls since the step and its earlier ones of the range (no disk tier):
    // its part begins at the earliest of them.
    assert.equal(json.memory_from_ms, T0 + 1000, "the ring's part from its first point");
    assert.deepEqual(
      json.signals[0].unit_changes,
      [{ at_ms: T0 + 6000, unit_before: "degC", unit: "K" }],
      "dated at the first poll after the step, not ahead of the clock",
    );
    const csv = await (await rig.get(`${path}&format=csv`)).text();
    const rows = csv.split("\r\n").slice(1, -1).map((l) => l.split(","));
    // The ring's polls from before the step are in the answer too (the range holds their times),
    // in time order: the one in degC before the change, labelled so.
    // The restarted provider's first polls (no value yet): the reload's and its poll loop's, woken
    // as it comes up -- one or two, as the loop's timer fires before the reload's poll or after
    // it (restartDeclaringTempIn).
    const all = rows.map((f) => [Number(f[1]) - T0, f[4], f[7]]);
    const first = all.filter(([t, v]) => t === 10_000 && v === "");
    assert.ok(first.length === 1 || first.length === 2, JSON.stringify(all));
    assert.deepEqual(
      all,
      [
        [1000, "20", "degC"],
        [6000, "295", "K"],
        [7000, "296", "K"],
        ...first.map(() => [10_000, "", "K"]),
        [11_000, "294", "K"],
      ],
      "the polls in K labelled K",
    );
    // The console's trend draws from the last change on: before, it drew none of them.
    assert.deepEqual(
      pointsInUnitNow(json.signals[0]).points.map((p: { last: number }) => p.last),
      [295, 296, ...first.map(() => null), 294],
      "the trend draws them on its axis (in K)",
    );
  } finally {
    await rig.rt.stop();
  }
});
