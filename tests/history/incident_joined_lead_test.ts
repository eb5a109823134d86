/**
 * An incident's triggers held ahead of the wall clock by different amounts: after a step back of
 * the wall clock (NTP) an alarm's raise is dated no earlier than its clear before it, an e-stop's
 * latch no earlier than its release (transitionDate), each by its own hold. The record dates the
 * ring's polls by its first trigger's (Pending.leadMs); a device a later trigger named has its
 * polls before that trigger dated back from where that trigger happened in the same frame -- not
 * from its own date, in another frame, which put its polls between the two triggers before the
 * first. In process: the recorder over a hand-fed History on a manual clock, the events published
 * as the alarm engine and the e-stop publish them (their dates held).
 */
import assert from "node:assert/strict";
import { hotRaised, incidentRig } from "./_incident_rig.ts";

const HOUR = 3_600_000;

/**
 * Polls p0/d0 and p0/d1 at 100 ms (both the same value, counting up from 0): 1 s, the alarm on
 * p0/d0 dated `alarmHeldMs` ahead of the wall clock, 0.5 s, the e-stop (every device) dated
 * `estopHeldMs` ahead, 1 s; then reads the one incident back.
 */
async function recordOf(alarmHeldMs: number, estopHeldMs: number) {
  const { clock, poll, incidents, bus, session } = incidentRig({
    config: { incidentBeforeS: 1, incidentAfterS: 1 },
  });
  let read: Awaited<ReturnType<typeof incidents.get>> | null = null;
  let alarmAt = NaN;
  await session(async () => {
    let v = 0;
    const polls = (n: number) => {
      for (let i = 0; i < n; i++) {
        poll("p0", "d0", v);
        poll("p0", "d1", v++);
        clock.advance(100);
      }
    };
    polls(10);
    alarmAt = clock.wall + alarmHeldMs;
    bus.publish(hotRaised("p0/d0/x", alarmAt));
    polls(5);
    bus.publish({
      kind: "estop_change",
      latched: true,
      reason: null,
      cause: "api",
      timestamp_ms: clock.wall + estopHeldMs,
    });
    polls(10);
    clock.advance(2_000);
    await incidents.settled();
    const [header] = incidents.list();
    assert.equal(incidents.list().length, 1, "one incident");
    read = await incidents.get(header!.incident_id);
  });
  const record = read!;
  assert.equal(record.incident.at_epoch_ms, alarmAt, "the alarm began it");
  return { record, alarmAt };
}

/** Each device's samples as [ms from the alarm, value]. */
function samplesOf(record: Awaited<ReturnType<typeof recordOf>>["record"], alarmAt: number) {
  return Object.fromEntries(
    record.signals.map((s) => [
      s.device_id,
      s.samples.map((x) => [(x[0] as number) - alarmAt, x[1]]),
    ]),
  );
}

/** Each device's polls within the window (1 s before the alarm, 1 s after), at 100 ms. */
const POLLED = [...Array(20).keys()].map((i) => [i * 100 - 1_000, i]);

for (
  const [alarmHeldMs, estopHeldMs, what] of [
    [HOUR, 0, "the alarm held an hour ahead, the e-stop not"],
    [0, HOUR, "the e-stop held an hour ahead, the alarm not"],
    [HOUR, 2 * HOUR, "the alarm held an hour ahead, the e-stop two"],
  ] as const
) {
  Deno.test(`IncidentRecorder: an e-stop joining an alarm's incident, ${what}: the device it named has its polls at the times they were taken`, async () => {
    const { record, alarmAt } = await recordOf(alarmHeldMs, estopHeldMs);
    assert.deepEqual(
      samplesOf(record, alarmAt),
      { d0: POLLED, d1: POLLED },
      "p0/d1 (named by the e-stop, 0.5 s after the alarm) dated as p0/d0 (the alarm's)",
    );
  });
}
