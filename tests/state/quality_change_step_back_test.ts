/**
 * A signal's `state_update` and `quality_change` are dated by the wall clock at the poll, after a
 * step back too (NTP on a board without a real-time clock): they are a sample's time, not a
 * transition's (docs/http-api.md, "Events"). The two events of one sample carry the same time, so
 * a quality change is never dated apart from the value it changes the quality of; the clock going
 * back is followed, as the console's trend (chart.js LINE_STEP_BACK_MS: the line goes on from the
 * step) and telemetry (a `seq` tag for a millisecond written again) expect -- a date held at the
 * signal's latest event would stack every sample of the step on one millisecond. The state cache
 * over the programmable provider, in process, its wall clock set by the test.
 */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { dbl, type Inventory, Q, startProgrammable, T } from "../helpers/programmable_provider.ts";

const INVENTORY: Inventory = {
  devices: {
    probe: {
      signals: [{ id: "temp", type: T.DOUBLE }],
      values: [dbl("temp", 25)],
    },
  },
};

/** temp's events: [kind, quality or new quality, timestamp_ms - w]. */
const tempEvents = (events: RuntimeEvent[], w: number) =>
  events.flatMap((e): [string, string, number][] =>
    e.kind === "state_update" && e.signal_id === "temp"
      ? [[e.kind, e.quality, e.timestamp_ms - w]]
      : e.kind === "quality_change" && e.signal_id === "temp"
      ? [[e.kind, e.new_quality, e.timestamp_ms - w]]
      : []
  );

Deno.test("after a step back of the wall clock, a sample's state_update and quality_change carry the clock's time, the same", async () => {
  const fx = await startProgrammable(INVENTORY, { inProcess: true });
  const W = fx.clock.wallMs;
  try {
    await fx.cache.pollDevice("p0", "probe");
    fx.clock.wallMs = W + 5000;
    await fx.program("probe", { read: { values: [dbl("temp", 26)] } });
    await fx.cache.pollDevice("p0", "probe");
    // NTP steps the wall clock back 60 s; the sensor fails: a FAULT sample of the same value.
    fx.clock.wallMs = W - 55_000;
    await fx.program("probe", { read: { values: [dbl("temp", 26, { quality: Q.FAULT })] } });
    await fx.cache.pollDevice("p0", "probe");
    fx.clock.wallMs = W - 54_000;
    await fx.program("probe", { read: { values: [dbl("temp", 27)] } });
    await fx.cache.pollDevice("p0", "probe");
    assert.deepEqual(tempEvents(fx.events, W), [
      ["state_update", "OK", 0],
      ["state_update", "OK", 5000],
      ["state_update", "FAULT", -55_000],
      ["quality_change", "FAULT", -55_000],
      ["state_update", "OK", -54_000],
      ["quality_change", "OK", -54_000],
    ]);
  } finally {
    await fx.close();
  }
});
