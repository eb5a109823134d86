/**
 * An e-stop's record waiting for its reason (INCIDENT_REASON_WAIT_MS) past its window holds the
 * window that closed, incident_after_s after the trigger: not the polls taken while it waited,
 * nor an until_epoch_ms grown by the wait. Its samples are those of the same e-stop whose reason
 * came in time.
 */
import assert from "node:assert/strict";
import { INCIDENT_REASON_WAIT_MS } from "../../src/history/mod.ts";
import { macrotask } from "../helpers/turns.ts";
import { incidentRig } from "./_incident_rig.ts";

/**
 * An HTTP e-stop with a 1 s window after it, the device polled every 100 ms for 3 s after it; its
 * reason given `reasonAfterMs` after the latch. The record as listed and its one signal's sample
 * times, relative to the trigger.
 */
async function record(reasonAfterMs: number) {
  const base = incidentRig();
  const { clock, incidents, poll, session } = base;
  let header: Awaited<ReturnType<typeof incidents.get>>["incident"] | undefined;
  let times: number[] = [];
  await session(async () => {
    poll("p0", "d0", 0);
    let give: (r: string | null) => void = () => {};
    base.estop();
    incidents.estopReason(new Promise<string | null>((r) => (give = r)));
    for (let ms = 100; ms <= 3_000; ms += 100) {
      if (ms === reasonAfterMs) give("operator pressed stop");
      clock.advance(100);
      poll("p0", "d0", ms);
      await macrotask();
    }
    clock.advance(INCIDENT_REASON_WAIT_MS);
    await incidents.settled();
    const [h] = incidents.list();
    const got = await incidents.get(h!.incident_id);
    header = got.incident;
    times = got.signals[0]!.samples.map(([t]) => t - got.incident.at_epoch_ms);
  });
  return { header: header!, times };
}

Deno.test("an e-stop whose reason arrives after its window closed: the record holds that window, not the polls of the wait", async () => {
  const onTime = await record(100);
  const late = await record(2_400); // 1.4 s past the window: within INCIDENT_REASON_WAIT_MS
  assert.equal(late.header.cause, "e-stop: operator pressed stop (api)");
  assert.equal(onTime.header.cause, late.header.cause);
  // Before: the late record read the ring when the reason came, 1.4 s after the window closed,
  // and held every poll up to then (times up to 2400 ms), its until_epoch_ms moved with them.
  assert.equal(
    late.header.until_epoch_ms - late.header.at_epoch_ms,
    1_000,
    "until_epoch_ms is not incident_after_s after the trigger",
  );
  assert.deepEqual(late.times, onTime.times, "the wait for the reason changed the samples");
  assert.ok(late.times.every((t) => t <= 1_000), `samples after the window: ${late.times}`);
});

Deno.test("an e-stop's record a stop captures while its reason is still arriving ends at the stop, not at the reason", async () => {
  const base = incidentRig({ config: { incidentAfterS: 5 } });
  const { clock, incidents, poll, start, stop } = base;
  await start();
  poll("p0", "d0", 0);
  let give: (r: string | null) => void = () => {};
  base.estop();
  incidents.estopReason(new Promise<string | null>((r) => (give = r)));
  const at = clock.nowMs();
  for (let ms = 100; ms <= 500; ms += 100) {
    clock.advance(100);
    poll("p0", "d0", ms);
  }
  const stopped = clock.nowMs();
  const stopping = stop(); // captures the pending incident, which waits for its reason
  // The devices are still polled until the providers stop (after history and incidents).
  for (let ms = 600; ms <= 1_000; ms += 100) {
    clock.advance(100);
    poll("p0", "d0", ms);
    await macrotask();
  }
  give("late");
  await stopping;
  const [h] = incidents.list();
  const got = await incidents.get(h!.incident_id);
  const times = got.signals[0]!.samples.map(([t]) => t - at);
  // Before: 1000 (the polls taken while the record waited for the reason were in it).
  assert.equal(h!.until_epoch_ms, stopped, "until_epoch_ms is not the stop's time");
  assert.deepEqual(times, [0, 100, 200, 300, 400, 500]);
});

Deno.test("an e-stop whose reason arrives after its window closed keeps the window's oldest samples, which the ring let go of while it waited", async () => {
  // memory_seconds 3 = incident_before_s 1 + incident_after_s 2: the window fits the ring when
  // it closes, 2 s after the e-stop. Its reason comes 1.4 s later; the ring keeps 3 s, so by
  // then it let go of the polls of the window's first 1.4 s. Before, the record was read after
  // the wait: from_epoch_ms said the window's start, its samples began 1.4 s later.
  const window = { memorySeconds: 3, incidentBeforeS: 1, incidentAfterS: 2 };
  const base = incidentRig({ config: window, history: { memorySeconds: 3 } });
  const { clock, incidents, poll, session } = base;
  await session(async () => {
    for (let ms = -1_000; ms < 0; ms += 100) {
      poll("p0", "d0", ms);
      clock.advance(100);
    }
    poll("p0", "d0", 0);
    const at = clock.nowMs();
    let give: (r: string | null) => void = () => {};
    base.estop();
    incidents.estopReason(new Promise<string | null>((r) => (give = r)));
    for (let ms = 100; ms <= 3_400; ms += 100) {
      if (ms === 3_400) give("operator pressed stop");
      clock.advance(100);
      poll("p0", "d0", ms);
      await macrotask();
    }
    await incidents.settled();
    const [h] = incidents.list();
    assert.equal(h!.cause, "e-stop: operator pressed stop (api)");
    const got = await incidents.get(h!.incident_id);
    const values = got.signals[0]!.samples.map(([, v]) => v);
    assert.equal(h!.from_epoch_ms - at, -1_000, "from_epoch_ms is not the window's start");
    assert.deepEqual(
      [values[0], values.at(-1), values.length],
      [-1_000, 1_900, 30],
      `the window's samples, 1 s before the e-stop to its last poll within 2 s after: ${values}`,
    );
  });
});

Deno.test("an e-stop whose reason arrives after its window closed keeps the line of a signal a rediscovery dropped while it waited", async () => {
  // The device declares x and y through the window; after it closes, while the record waits for
  // its reason, a reload describes the device without y (the ring releases y's samples). Before,
  // the record was read after the wait: no line for y, though its window held y's samples.
  const base = incidentRig();
  const { clock, incidents, pollSignals, session } = base;
  await session(async () => {
    pollSignals(["x", "y"], 0);
    let give: (r: string | null) => void = () => {};
    base.estop();
    incidents.estopReason(new Promise<string | null>((r) => (give = r)));
    for (let ms = 100; ms <= 1_500; ms += 100) {
      clock.advance(100);
      pollSignals(ms <= 1_000 ? ["x", "y"] : ["x"], ms); // y left out 1.1 s after the e-stop
      await macrotask();
    }
    give("operator pressed stop");
    await incidents.settled();
    const [h] = incidents.list();
    const got = await incidents.get(h!.incident_id);
    assert.deepEqual(
      got.signals.map((s) => [s.signal_id, s.samples.length]),
      [["x", 10], ["y", 10]],
      "both signals of the window, with the samples it held",
    );
  });
});
