/**
 * The ring records the quality a reader sees (StateCache.qualityNow), not the one stored: an OK
 * sample the provider stopped answering is STALE past its bound in GET /v0/state, and must be
 * STALE in GET /v0/history (and so in the disk buckets and Sparkplug's replay, which read the
 * same record) -- not OK.
 */
import assert from "node:assert/strict";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";
import { TestClock } from "../helpers/programmable_provider.ts";

Deno.test("a sample past its stale bound is recorded STALE in the history, as GET /v0/state reads it", async () => {
  const clock = new TestClock();
  clock.wallMs = T0;
  const mono0 = performance.now();
  clock.mono = mono0;
  const rig = await startRig({ clock, history: { diskMaxBytes: 0, memorySeconds: 3600 } });
  try {
    await rig.poll(T0 + 1000, probeValues(20.5, 1));
    const bound = rig.rt.cache.staleAfterMs("p0", "probe", "temp");
    assert.ok(Number.isFinite(bound), `temp's stale bound ${bound}`);
    // The provider answers count and label, but no longer temp: its last sample ages.
    clock.mono = mono0 + bound + 1000;
    await rig.poll(T0 + 2000, probeValues(20.5, 2).filter((s) => s.id !== "temp"));
    const state = await rig.json("/v0/state/p0/probe");
    const temp = state.values.find((s: { signal_id: string }) => s.signal_id === "temp");
    assert.equal(temp.quality, "STALE", "GET /v0/state reads temp STALE");
    const history = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0 + 500}`);
    assert.deepEqual(
      history.signals[0].points.map((p: { t_ms: number; quality: string }) => [p.t_ms, p.quality]),
      [[T0 + 1000, "OK"], [T0 + 2000, "STALE"]],
      "the history records what a reader saw at each poll",
    );
  } finally {
    await rig.rt.stop();
  }
});
