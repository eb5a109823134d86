/**
 * An incident's window and a wall clock stepped back while it is open (NTP correcting a Raspberry
 * Pi, an operator setting the time): the ring's polls from before the step keep their (now
 * future) times, and the record is read from the ring by time. Its window lies before the step,
 * so the samples it must hold are those polls -- not the polls since the step, whose times all
 * lie before the window.
 */
import assert from "node:assert/strict";
import { incidentRig } from "./_incident_rig.ts";

/** A step of a script: polls of p0/d0 at 100 ms (a count), the e-stop, or the wall clock stepped. */
type Step = number | "estop" | { readonly stepWallMs: number };

/**
 * Runs `script` on a rig with `incidentBeforeS` (after: 1 s), lets the window close and reads the
 * one incident: its record, the wall time of its trigger and its samples in order (poll values
 * count up from 0).
 */
async function recordAfter(incidentBeforeS: number, script: readonly Step[]) {
  const { clock, poll, incidents, estop, session } = incidentRig({
    config: { incidentBeforeS, incidentAfterS: 1 },
  });
  let read: Awaited<ReturnType<typeof incidents.get>> | null = null;
  let trigger = NaN;
  await session(async () => {
    let v = 0;
    for (const s of script) {
      if (s === "estop") {
        trigger = clock.wall;
        estop();
      } else if (typeof s === "number") {
        for (let i = 0; i < s; i++) {
          poll("p0", "d0", v++);
          clock.advance(100);
        }
      } else clock.stepWall(s.stepWallMs);
    }
    clock.advance(1_000);
    await incidents.settled();
    const [header] = incidents.list();
    assert.ok(header !== undefined, "the incident is recorded");
    read = await incidents.get(header.incident_id);
  });
  const record = read!;
  return { record, trigger, samples: record.signals.flatMap((s) => s.samples) };
}

/** The samples' times, asserted never to fall. */
function timesNeverFalling(samples: readonly (readonly unknown[])[]): number[] {
  const times = samples.map((x) => x[0] as number);
  for (let i = 1; i < times.length; i++) {
    assert.ok(times[i]! >= times[i - 1]!, `sample times fall: ${JSON.stringify(times)}`);
  }
  return times;
}

const values = (samples: readonly (readonly unknown[])[]) => samples.map((x) => x[1]);

Deno.test("an incident whose window a wall clock step back cuts through keeps the samples of its window recorded before the step", async () => {
  // 1 s of polls at 100 ms before the e-stop, 0.3 s after it, then NTP steps the wall clock back
  // an hour; the polls go on until the window closes.
  const { trigger: at, samples } = await recordAfter(1, [
    10,
    "estop",
    3,
    { stepWallMs: -3_600_000 },
    7,
  ]);
  const times = samples.map((x) => x[0] as number);
  assert.ok(
    times.length >= 10,
    `the record holds the polls of its window before the step (${at - 1000}..${at + 300}): ` +
      `${times.length} samples at ${JSON.stringify(times)}`,
  );
  assert.ok(times.every((t) => t >= at - 1000 && t <= at + 1000), JSON.stringify(times));
});

Deno.test("an incident whose window a wall clock step forward cuts through keeps the polls after the step that fall in its window", async () => {
  // 1 s of polls at 100 ms before the e-stop, 0.3 s after it, then the first NTP synchronisation
  // steps the wall clock ahead an hour; the polls go on for the rest of the window (0.7 s on the
  // monotonic clock).
  const { record, samples } = await recordAfter(1, [10, "estop", 3, { stepWallMs: 3_600_000 }, 7]);
  // The polls of the window: the 10 before the trigger, the 3 before the step, the 7 after.
  assert.deepEqual(values(samples), [...Array(20).keys()], JSON.stringify(record.signals[0]));
});

Deno.test("an incident whose window a wall clock step back cuts through keeps the polls taken after its trigger, in the order taken, their times never falling", async () => {
  // 1 s of polls at 100 ms before the e-stop, 0.3 s after it, then NTP steps the wall clock back
  // 10 s (more than the window is wide); the polls go on until the window closes: they are
  // stamped before the trigger, but taken after it.
  const { record, samples } = await recordAfter(1, [10, "estop", 3, { stepWallMs: -10_000 }, 7]);
  // The polls of the window: the 10 before the trigger, the 3 before the step, the 7 after.
  assert.deepEqual(values(samples), [...Array(20).keys()], JSON.stringify(samples));
  const times = timesNeverFalling(samples);
  const { from_epoch_ms: from, until_epoch_ms: until } = record.incident;
  assert.ok(from <= until, `from ${from} until ${until}`);
  assert.ok(
    times.every((t) => t >= from && t <= until),
    `samples outside ${from}..${until}: ${JSON.stringify(times)}`,
  );
});

Deno.test("an incident whose window a small wall clock step back cuts through holds each poll once, its times never falling", async () => {
  // The step back (0.5 s) is shorter than the window before the trigger (2 s): the polls after it
  // are stamped inside the window, before the trigger.
  const { samples } = await recordAfter(2, [10, "estop", 3, { stepWallMs: -500 }, 7]);
  assert.deepEqual(values(samples), [...Array(20).keys()], JSON.stringify(samples));
  timesNeverFalling(samples);
});

Deno.test("an incident whose window before its trigger a wall clock step back cuts through keeps the polls taken before the step, by the time that passed, its times never falling", async () => {
  // Polls at 100 ms; NTP steps the wall clock back an hour 0.5 s before the e-stop: the polls
  // before the step are stamped an hour ahead of the trigger, though taken before it.
  const { record, samples } = await recordAfter(1, [
    15,
    { stepWallMs: -3_600_000 },
    5,
    "estop",
    10,
  ]);
  // The step is taken as no time: the 0.5 s before it reach back to poll 9 (the 6 polls from
  // 0.5 s before the step to the step), then the 5 after it and the 10 after the trigger.
  assert.deepEqual(
    values(samples),
    [...Array(21).keys()].map((i) => i + 9),
    JSON.stringify(samples),
  );
  const times = timesNeverFalling(samples);
  const { at_epoch_ms: at, from_epoch_ms: from, until_epoch_ms: until } = record.incident;
  assert.equal(from, at - 1_000);
  assert.ok(
    times.every((t) => t >= from && t <= until),
    `samples outside ${from}..${until}: ${JSON.stringify(times)}`,
  );
  assert.ok(times.slice(0, 11).every((t) => t <= at), "the polls before the trigger before it");
});
