/**
 * A device loss is dated from its first failed read, but detected only once its reads have
 * failed for a while (DeviceOutages: 3 polling intervals, at least 500 ms). Its record is read
 * from the ring incident_after_s after that date, not after the detection: otherwise the ring,
 * which keeps memory_seconds, must also hold the detection delay, and a window that fits
 * memory_seconds (incident_before_s + incident_after_s) lost its oldest samples. An
 * IncidentRecorder over a hand-fed History on a manual clock; the device's conditions told as
 * DeviceOutages tells them.
 */
import assert from "node:assert/strict";
import {
  INCIDENT_LOSS_MARKS_MAX,
  INCIDENT_OUTAGES_MAX,
  IncidentRecorder,
} from "../../src/history/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import type { DeviceCondition, DeviceConditionListener } from "../../src/state/mod.ts";
import type { Logger } from "../../src/common/mod.ts";
import type { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import type { MemoryFiles } from "../helpers/memory_files.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { testLogger } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { untilTurns } from "../helpers/turns.ts";
import { HeldRecordAppends, hotRaised, INCIDENTS_DIR } from "./_incident_rig.ts";

/** The hand-fed history's window: memory_seconds and the incident window around a trigger. */
type LossWindow = Parameters<typeof handFedHistory>[0];

/** The reason DeviceOutages tells a device's take-out by a reload restarting provider p. */
const RESTARTING = "provider p is being restarted by a configuration reload";

/** The window of most losses below: 1 s before, 2 s after, in a 60 s ring. */
const WINDOW_2S = { memorySeconds: 60, incidentBeforeS: 1, incidentAfterS: 2, diskMaxBytes: 0 };

/** The window of the outages' records below: 1 s before, 1 s after, in a 60 s ring. */
const WINDOW_1S = { memorySeconds: 60, incidentBeforeS: 1, incidentAfterS: 1, diskMaxBytes: 0 };

/** The lines saying a device lost again is the same outage as its loss before (no new incident). */
function sameOutageLines(lines: readonly string[]): string[] {
  return lines.filter((l) => l.includes("not up since that loss"));
}

/** A WARN says the first loss's record was not written. */
function assertRecordNotWritten(lines: readonly string[]): void {
  assert.ok(
    lines.some((l) => /^WARN .*incident inc-\S+ not written/.test(l)),
    `the first loss's record was not written: ${lines.join("\n")}`,
  );
}

type IncidentHeader = ReturnType<IncidentRecorder["list"]>[number];
type IncidentSignals = Awaited<ReturnType<IncidentRecorder["get"]>>["signals"];

/** The steps of a loss the tests below take, on the rig's clock; devices default to d. */
interface LossSteps {
  /** Devices' reads begin failing now (from up): answers the monotonic time told. */
  failing(...deviceIds: string[]): number;
  /** Devices failing since `sinceMono` are found down. */
  lost(sinceMono: number, ...deviceIds: string[]): void;
  /** A reload restarting provider p takes d out (on purpose), now. */
  takenOut(): void;
  /** d is back from its provider's restart, answering nothing yet (told before any read). */
  backAnsweringNothing(): void;
  /** A poll of signal x of each of `deviceIds` of provider p, with value v. */
  pollsOf(...deviceIds: string[]): (v: number) => void;
  /** Once captures settled, the first record, asserted there. */
  recorded(): Promise<IncidentHeader>;
  /** Once captures settled, the one record (`why` if there are more) and its signals. */
  onlyIncident(why: string): Promise<{ h: IncidentHeader; signals: IncidentSignals }>;
}

/** Each device's sample values in a record's signals. */
function valuesByDevice(signals: IncidentSignals): Record<string, number[]> {
  return Object.fromEntries(
    signals.map((s) => [s.device_id, s.samples.map((x) => x[1] as number)]),
  );
}

/** The device-loss latch's (or the e-stop's) machine-wide FAULT entry, at `at`. */
function enterFault(bus: EventBus, at: number): void {
  bus.publish({ kind: "mode_change", previous_mode: "AUTO", new_mode: "FAULT", timestamp_ms: at });
}

/** The e-stop latching (from the API) at `at`. */
function latchEstop(bus: EventBus, at: number): void {
  bus.publish({
    kind: "estop_change",
    latched: true,
    reason: null,
    cause: "api",
    timestamp_ms: at,
  });
}

/**
 * Runs `body` with an IncidentRecorder over a hand-fed History on a manual clock, started and
 * stopped around it; `change` tells a condition change of device p/d as DeviceOutages tells it.
 */
async function withLossRig<T>(
  window: LossWindow,
  body: (
    rig: ReturnType<typeof handFedHistory> & {
      incidents: IncidentRecorder;
      bus: EventBus;
      change: (
        previous: "up" | "down" | "failing",
        condition: DeviceCondition,
        deviceId?: string,
        previousReloading?: true,
      ) => void;
    } & LossSteps,
  ) => Promise<T>,
  log: Logger = testLogger(),
  files?: MemoryFiles,
): Promise<T> {
  const fed = handFedHistory(window, files);
  let tell: DeviceConditionListener | null = null;
  const incidents = new IncidentRecorder({
    config: { ...testConfig().history, ...window },
    history: fed.history,
    files: fed.files,
    dir: INCIDENTS_DIR,
    clock: fed.clock,
    log,
    outages: {
      onChange(l) {
        tell = l;
        return () => (tell = null);
      },
    },
  });
  const bus = new EventBus();
  await fed.history.start();
  await incidents.start(bus);
  const change = (
    previous: "up" | "down" | "failing",
    condition: DeviceCondition,
    deviceId = "d",
    previousReloading?: true,
  ) =>
    tell!({
      providerId: "p",
      deviceId,
      previous,
      condition,
      atWallMs: fed.clock.wall,
      ...(previousReloading ? { previousReloading } : {}),
    });
  const steps: LossSteps = {
    failing(...deviceIds) {
      const sinceMono = fed.clock.mono;
      for (const d of deviceIds.length > 0 ? deviceIds : ["d"]) {
        change("up", { kind: "failing", reason: "reads fail", sinceMono }, d);
      }
      return sinceMono;
    },
    lost(sinceMono, ...deviceIds) {
      for (const d of deviceIds.length > 0 ? deviceIds : ["d"]) {
        change("failing", { kind: "down", reason: "reads fail", sinceMono }, d);
      }
    },
    takenOut() {
      change("up", {
        kind: "down",
        reason: RESTARTING,
        sinceMono: fed.clock.mono,
        reloading: true,
      });
    },
    backAnsweringNothing() {
      change("down", { kind: "failing", reason: "no answer yet", sinceMono: null });
    },
    pollsOf: (...deviceIds) => (v) => deviceIds.forEach((d) => fed.pollSignals(["x"], v, "p", d)),
    async recorded() {
      await incidents.settled();
      const [h] = incidents.list();
      assert.ok(h !== undefined, "the loss was recorded");
      return h;
    },
    async onlyIncident(why) {
      await incidents.settled();
      assert.equal(incidents.list().length, 1, why);
      const [h] = incidents.list();
      const { signals } = await incidents.get(h!.incident_id);
      return { h: h!, signals };
    },
  };
  try {
    return await body({ ...fed, incidents, bus, change, ...steps });
  } finally {
    await incidents.stop();
    await fed.history.stop();
  }
}

/** What withLossRig hands its body. */
type LossRig = Parameters<Parameters<typeof withLossRig>[1]>[0];

/**
 * withLossRig over `window` from the device's last good read: x = 1 polled at the rig's start,
 * `t0`, handed to `body` with the rig.
 */
function afterLastGoodRead<T>(
  window: LossWindow,
  body: (rig: LossRig, t0: number) => Promise<T>,
): Promise<T> {
  return withLossRig(window, (rig) => {
    const t0 = rig.clock.wall;
    rig.pollSignals(["x"], 1);
    return body(rig, t0);
  });
}

/** Asserts sample times (ms from t0) never fall. */
function assertNeverFalls(times: number[]): void {
  for (let i = 1; i < times.length; i++) {
    assert.ok(times[i]! >= times[i - 1]!, `sample times fall: ${times}`);
  }
}

Deno.test("a device loss's record holds its whole window when the window fits memory_seconds, whatever the detection took", async () => {
  // memory_seconds 3 = incident_before_s 1 + incident_after_s 2: the window fits the ring.
  const window = { memorySeconds: 3, incidentBeforeS: 1, incidentAfterS: 2, diskMaxBytes: 0 };
  await afterLastGoodRead(
    window,
    async ({ clock, pollSignals, incidents, failing, lost, recorded }, t0) => {
      clock.advance(500);
      pollSignals(["x"], 2); // t0 + 500: its reads begin failing here (the value does not matter)
      const failingMono = failing();
      clock.advance(1000); // down 1 s later: a loss dated t0 + 500
      lost(failingMono);
      // The window [t0 - 500, t0 + 2500] has passed at t0 + 2500; the device's provider polls on
      // (its other devices, this one's failed reads) and the ring lets go of what is 3 s old.
      for (let k = 0; k < 12; k++) {
        clock.advance(250);
        pollSignals(["x"], 3);
      }
      const h = await recorded();
      assert.equal(h.at_epoch_ms, t0 + 500);
      assert.equal(h.from_epoch_ms, t0 - 500);
      assert.equal(h.until_epoch_ms, t0 + 2500);
      const { signals } = await incidents.get(h.incident_id);
      const times = signals[0]!.samples.map((s) => s[0] - t0);
      assert.deepEqual(
        times.slice(0, 2),
        [0, 500],
        `the window's oldest samples are in the record: ${times}`,
      );
    },
  );
});

Deno.test("a device loss found after the ring let go of its whole window records what the ring still holds, not an empty window", async () => {
  // A device polled once a minute (a 60 s poll hint), found down 2 minutes after its first failed
  // read: its window [date - 2 s, date + 3 s] is older than memory_seconds (10) by then. Before,
  // the record was that window with no sample in it; now it is clamped to what the ring holds of
  // the device: from memory_seconds before the capture to the capture.
  const window = { memorySeconds: 10, incidentBeforeS: 2, incidentAfterS: 3, diskMaxBytes: 0 };
  await afterLastGoodRead(
    window,
    async ({ clock, pollSignals, incidents, failing, lost, recorded }, t0) => {
      clock.advance(60_000);
      pollSignals(["x"], 2); // t0 + 60 s: its first failed read
      const failingMono = failing();
      clock.advance(60_000);
      pollSignals(["x"], 3); // t0 + 120 s
      clock.advance(60_000);
      pollSignals(["x"], 4); // t0 + 180 s: the ring now holds this poll only
      lost(failingMono);
      clock.advance(0); // the capture is due at once: incident_after_s passed long ago
      const h = await recorded();
      assert.equal(h.at_epoch_ms, t0 + 60_000);
      assert.deepEqual(
        [h.from_epoch_ms - t0, h.until_epoch_ms - t0, h.samples],
        [170_000, 180_000, 1],
        "the window is what the ring holds of the device when the loss is recorded",
      );
      const { signals } = await incidents.get(h.incident_id);
      assert.deepEqual(signals[0]!.samples.map((s) => [s[0] - t0, s[1]]), [[180_000, 4]]);
    },
  );
});

Deno.test("a device loss whose reads began failing before a wall clock step back begins its record at its first failed read, by poll order, its times never falling", async () => {
  // The device's reads begin failing, then NTP steps the wall clock back 10 s, and the device is
  // found down 1 s after its first failed read: the polls since the step are stamped 10 s before
  // the loss's date. Its first poll after the date is its first failed read (taken before the
  // step), not the next poll after the detection, which a search by wall time among the polls
  // since the step gave: the record then had neither the last good read nor the failed ones.
  await afterLastGoodRead(
    WINDOW_2S,
    async ({ clock, pollSignals, incidents, failing, lost, recorded }, t0) => {
      clock.advance(500);
      pollSignals(["x"], 2); // t0 + 500: its first failed read
      const failingMono = failing();
      clock.advance(300);
      clock.stepWall(-10_000);
      pollSignals(["x"], 3); // t0 + 800 - 10 s: failing still
      clock.advance(700); // down 1 s after its first failed read: a loss dated t0 + 500
      lost(failingMono);
      pollSignals(["x"], 4);
      clock.advance(500);
      pollSignals(["x"], 5);
      clock.advance(500); // incident_after_s (2 s) after the loss's date: the record is taken
      const h = await recorded();
      assert.equal(h.at_epoch_ms, t0 + 500);
      const { signals } = await incidents.get(h.incident_id);
      const samples = signals[0]!.samples;
      assert.deepEqual(
        samples.map((s) => s[1]),
        [1, 2, 3, 4, 5],
        `the last good read, the failed ones and those after: ${JSON.stringify(samples)}`,
      );
      const times = samples.map((s) => s[0] - t0);
      assert.deepEqual(
        times.slice(0, 2),
        [0, 500],
        `the polls before the step at their own times: ${times}`,
      );
      assertNeverFalls(times);
    },
  );
});

/**
 * A provider a reload restarts comes back, its device answers none of its reads and is found
 * down: its loss's reads began failing when the device came back, a change told before any read
 * (from down, `sinceMono` null), not at its first failed read. The wall clock steps by `stepMs`
 * between that read and the loss being found. Answers the record and the test's t0.
 */
async function lossFailingSinceItsReturn(stepMs: number) {
  return await withLossRig(
    WINDOW_2S,
    async (
      {
        clock,
        pollSignals,
        incidents,
        lost,
        recorded,
        takenOut,
        backAnsweringNothing,
      },
    ) => {
      const t0 = clock.wall;
      pollSignals(["x"], 1); // t0: the last good read
      clock.advance(100);
      takenOut();
      clock.advance(100); // t0 + 200: back, answering nothing yet
      backAnsweringNothing();
      clock.advance(300);
      pollSignals(["x"], 2); // t0 + 500: its first failed read (no change told)
      const failingMono = clock.mono;
      clock.advance(200);
      pollSignals(["x"], 3); // t0 + 700: failing still
      clock.advance(100);
      clock.stepWall(stepMs);
      pollSignals(["x"], 4);
      clock.advance(700); // down 1 s after its first failed read
      lost(failingMono);
      pollSignals(["x"], 5);
      clock.advance(500);
      pollSignals(["x"], 6);
      clock.advance(500); // incident_after_s (2 s) after its first failed read: the record is taken
      const h = await recorded();
      const { signals } = await incidents.get(h.incident_id);
      return { h, samples: signals[0]!.samples, t0 };
    },
  );
}

for (const [step, what] of [[-10_000, "back"], [3_600_000, "ahead"]] as const) {
  Deno.test(`a device loss failing since its provider came back, the wall clock stepped ${what} before it is found, is dated at its first failed read by poll order and keeps its reads`, async () => {
    // Before: dated by counting back on the monotonic clock from the loss being found (its
    // failing was told before any read), a date of the wall clock after the step. Stepped back,
    // its failed reads before the step were dated before the loss; stepped ahead, the record
    // held neither them nor the last good read (datesBefore put them an hour before its window).
    const { h, samples, t0 } = await lossFailingSinceItsReturn(step);
    assert.equal(h.at_epoch_ms, t0 + 500, "dated as the ring stamped its first failed read");
    assert.deepEqual(
      samples.map((s) => s[1]),
      [1, 2, 3, 4, 5, 6],
      `the last good read, the failed ones and those after: ${JSON.stringify(samples)}`,
    );
    const times = samples.map((s) => s[0] - t0);
    assert.deepEqual(
      times.slice(0, 3),
      [0, 500, 700],
      `before the step at their own times: ${times}`,
    );
    assertNeverFalls(times);
  });
}

/**
 * A device polled every 2 s is found down 6 s after its first failed read (t0 + 2 s), past its
 * 5 s window, and captured at once; the wall clock steps by `stepMs` 1 s after that read (null:
 * no step). Answers the record, its samples and the test's t0.
 */
async function lossFoundAfterItsWindow(stepMs: number | null) {
  const window = { memorySeconds: 60, incidentBeforeS: 2, incidentAfterS: 5, diskMaxBytes: 0 };
  return await withLossRig(
    window,
    async ({ clock, pollSignals, incidents, failing, lost, recorded }) => {
      const t0 = clock.wall;
      pollSignals(["x"], 0); // t0: the last good read
      clock.advance(2000);
      pollSignals(["x"], 1); // t0 + 2 s: its first failed read
      const failingMono = failing();
      if (stepMs !== null) {
        clock.advance(1000);
        clock.stepWall(stepMs);
      }
      for (let v = 2; v <= 4; v++) {
        clock.advance(stepMs !== null && v === 2 ? 1000 : 2000);
        pollSignals(["x"], v); // t0 + 4, 6, 8 s on the monotonic clock
      }
      lost(failingMono);
      clock.advance(0); // the capture is due at once: incident_after_s passed 1 s ago
      const h = await recorded();
      const { signals } = await incidents.get(h.incident_id);
      return { h, samples: signals[0]!.samples, t0 };
    },
  );
}

Deno.test("a device loss found after its window passed holds its window: the polls after incident_after_s are not its", async () => {
  // polling.interval_ms 2 s: found down 6 s after its first failed read, past its 5 s window,
  // and captured at once. Before, the record read the ring up to the finding: until_epoch_ms
  // 6 s after the loss's date and the polls of the last second in it.
  const { h, samples, t0 } = await lossFoundAfterItsWindow(null);
  assert.equal(h.at_epoch_ms, t0 + 2000);
  assert.equal(h.until_epoch_ms - h.at_epoch_ms, 5000, "until_epoch_ms is not at + 5 s");
  assert.deepEqual(
    samples.map((s) => [s[0] - t0, s[1]]),
    [[0, 0], [2000, 1], [4000, 2], [6000, 3]],
    "the samples of its window, not the poll at t0 + 8 s",
  );
});

Deno.test("a device loss found after its window passed, the wall clock stepped ahead before it was found, keeps its polls after the step within the window", async () => {
  const { samples } = await lossFoundAfterItsWindow(3_600_000); // the first NTP sync: an hour ahead
  assert.deepEqual(
    samples.map((s) => s[1]),
    [0, 1, 2, 3],
    "the polls of its window (those after the step too), not the poll 6 s after its date",
  );
});

Deno.test("a device loss found after its window passed, the wall clock stepped back before it was found, holds its window: the poll after incident_after_s is not its", async () => {
  // Stepped back a minute 1 s after its first failed read: the polls after the step carry times
  // a minute before its date, none "after" at + incident_after_s. Before, the record was not cut
  // and held the poll 6 s after its date, taken after its window ended.
  const { samples } = await lossFoundAfterItsWindow(-60_000); // a minute back
  assert.deepEqual(
    samples.map((s) => s[1]),
    [0, 1, 2, 3],
    "the polls of its window (those after the step too), not the poll 6 s after its date",
  );
});

for (const [step, what] of [[-60_000, "a minute"], [-1500, "1.5 s"]] as const) {
  Deno.test(`a device loss found after its window passed, the wall clock stepped back ${what} before it was found: until_epoch_ms is its window's end, not its last sample`, async () => {
    // Before, until_epoch_ms was the wall clock at the finding (stepped back) or the loss's date,
    // whichever was later (at + 4.5 s, at + 0 s): the step back between the date and the finding
    // made the finding look earlier than the window's end.
    const { h, samples, t0 } = await lossFoundAfterItsWindow(step);
    assert.equal(h.at_epoch_ms, t0 + 2000);
    assert.equal(h.until_epoch_ms - h.at_epoch_ms, 5000, "until_epoch_ms is not at + 5 s");
    assert.ok(samples.every((s) => s[0] <= h.until_epoch_ms), "a sample after until_epoch_ms");
  });
}

/** The window of the losses below: 2 s before, 3 s after, in a 60 s ring. */
const WINDOW_3S = { memorySeconds: 60, incidentBeforeS: 2, incidentAfterS: 3, diskMaxBytes: 0 };

/** The wall clock steps of the losses below: an hour ahead (the first NTP sync), a minute back. */
const WALL_STEPS = [[3_600_000, "ahead"], [-60_000, "back"]] as const;

/**
 * From a first failed read at t0 + 2 s (the clock there), with the 3 s window ending at t0 + 5 s:
 * `poll(2)` at t0 + 4 s, within the window; `poll(3)` at t0 + 6 s, past its end; the wall clock
 * stepped by `stepMs` at t0 + 7 s; `poll(4)` at t0 + 8 s, when the loss is found.
 */
function pollPastTheWindow(clock: ManualClock, poll: (v: number) => void, stepMs: number): void {
  clock.advance(2000);
  poll(2); // t0 + 4 s: within the window
  clock.advance(2000);
  poll(3); // t0 + 6 s: past the window's end (t0 + 5 s)
  clock.advance(1000);
  clock.stepWall(stepMs); // t0 + 7 s: after the window, before the loss is found
  clock.advance(1000);
  poll(4); // t0 + 8 s
}

/** Answers the values of the samples of the one record's signal, once its capture has settled. */
async function recordedValues(incidents: IncidentRecorder): Promise<number[]> {
  await incidents.settled();
  const [h] = incidents.list();
  assert.ok(h !== undefined, "the loss was recorded");
  const { signals } = await incidents.get(h.incident_id);
  return signals[0]!.samples.map((s) => s[1] as number);
}

/**
 * A device polled every 2 s with a 3 s window: its first failed read at t0 + 2 s, its window ends
 * at t0 + 5 s, the poll at t0 + 6 s is past it; the wall clock steps by `stepMs` at t0 + 7 s, after
 * that poll and before the loss is found (t0 + 8 s, 6 s after its date), captured at once.
 * Answers the values of the record's samples.
 */
async function lossStepAfterItsWindow(stepMs: number): Promise<number[]> {
  return await withLossRig(WINDOW_3S, async ({ clock, pollSignals, incidents, failing, lost }) => {
    pollSignals(["x"], 0); // t0: the last good read
    clock.advance(2000);
    pollSignals(["x"], 1); // t0 + 2 s: its first failed read
    const failingMono = failing();
    pollPastTheWindow(clock, (v) => pollSignals(["x"], v), stepMs);
    lost(failingMono);
    clock.advance(0); // the capture is due at once: incident_after_s passed 3 s ago
    return await recordedValues(incidents);
  });
}

for (const [step, what] of WALL_STEPS) {
  Deno.test(`a device loss found after its window passed, the wall clock stepped ${what} after the window ended, holds its window: the poll between its end and the step is not its`, async () => {
    // Before, the whole step since the loss's date moved the window's end (Pending.endedMs), as
    // though it fell within the window: the poll 4 s after the date, taken after the 3 s window
    // and before the step, was in the record.
    assert.deepEqual(
      await lossStepAfterItsWindow(step),
      [0, 1, 2],
      "the polls of its window, not the poll 4 s after its date",
    );
  });
}

/**
 * As lossStepAfterItsWindow, with two devices of the provider (d and e) failing and found down
 * together: e joins d's incident. Answers the values of each device's samples in the record.
 */
async function twoLossesStepAfterTheirWindow(stepMs: number): Promise<Record<string, number[]>> {
  return await withLossRig(
    WINDOW_3S,
    async ({ clock, pollSignals, failing, lost, onlyIncident }) => {
      const both = (v: number) => ["d", "e"].forEach((d) => pollSignals(["x"], v, "p", d));
      both(0); // t0: the last good reads
      clock.advance(2000);
      both(1); // t0 + 2 s: their first failed reads
      const failingMono = failing("d", "e");
      pollPastTheWindow(clock, both, stepMs);
      lost(failingMono, "d", "e");
      clock.advance(0);
      const { h, signals } = await onlyIncident("one incident: e joined d's");
      assert.deepEqual(h.devices, ["p/d", "p/e"]);

      return valuesByDevice(signals);
    },
  );
}

for (const [step, what] of WALL_STEPS) {
  Deno.test(`two devices lost together after their window, the wall clock stepped ${what} after it: the one joining holds its window too`, async () => {
    // Before, only the device that began the incident was cut by poll order (Pending.endedSeq);
    // the one joining it was cut by endedMs, which holds the whole step: with a step ahead its
    // poll 4 s after its date, past the window, was in the record.
    assert.deepEqual(
      await twoLossesStepAfterTheirWindow(step),
      { d: [0, 1, 2], e: [0, 1, 2] },
      "each device's polls of its window",
    );
  });
}

/**
 * As lossStepAfterItsWindow, the device failing as it comes back (its provider up again, told
 * before any read, `sinceMono` null): its next poll, at t0 + 2 s, is its first failed read.
 */
async function returnLossStepAfterItsWindow(stepMs: number): Promise<number[]> {
  return await withLossRig(
    WINDOW_3S,
    async ({ clock, pollSignals, incidents, lost, takenOut, backAnsweringNothing }) => {
      pollSignals(["x"], 0); // t0: the last good read
      clock.advance(500);
      takenOut();
      clock.advance(500); // t0 + 1 s: back, answering nothing yet
      backAnsweringNothing();
      clock.advance(1000);
      pollSignals(["x"], 1); // t0 + 2 s: its first failed read (no change told)
      const failingMono = clock.mono;
      pollPastTheWindow(clock, (v) => pollSignals(["x"], v), stepMs);
      lost(failingMono);
      clock.advance(0);
      return await recordedValues(incidents);
    },
  );
}

for (const [step, what] of WALL_STEPS) {
  Deno.test(`a device failing as it came back, found down after its window, the wall clock stepped ${what} after it: the poll past its window is not its`, async () => {
    assert.deepEqual(await returnLossStepAfterItsWindow(step), [0, 1, 2]);
  });
}

/**
 * As lossStepAfterItsWindow, device d lost with device o answering all along: the device-loss
 * latch's FAULT entry (machine-wide) joins d's incident in the step that finds d down. Answers
 * the values of each device's samples in the record.
 */
async function lossJoinedByFault(
  stepMs: number,
  returning = false,
): Promise<Record<string, number[]>> {
  return await withLossRig(
    WINDOW_3S,
    async (
      { clock, change, bus, lost, onlyIncident, pollsOf, takenOut, backAnsweringNothing },
    ) => {
      const both = pollsOf("d", "o");
      both(0); // t0: d's last good read
      if (returning) {
        // As returnLossStepAfterItsWindow: d back from a reload's restart, answering nothing yet.
        clock.advance(500);
        takenOut();
        clock.advance(500);
        backAnsweringNothing();
        clock.advance(1000);
      } else clock.advance(2000);
      both(1); // t0 + 2 s: d's first failed read
      const failingMono = clock.mono;
      if (!returning) {
        change("up", { kind: "failing", reason: "reads fail", sinceMono: failingMono });
      }
      pollPastTheWindow(clock, both, stepMs);
      lost(failingMono);
      enterFault(bus, clock.nowMs());
      clock.advance(3000); // the FAULT entry's own incident_after_s, no poll within it
      const { h, signals } = await onlyIncident("one incident: the FAULT entry joined d's loss");
      assert.equal(h.trigger, "fault");
      return valuesByDevice(signals);
    },
  );
}

/** The wall clock of the FAULT entry's case: not stepped, and each of WALL_STEPS. */
const NO_STEP_AND_WALL_STEPS: readonly (readonly [number, string])[] = [
  [0, "not stepped"],
  ...WALL_STEPS.map(([ms, w]) => [ms, `stepped ${w}`] as const),
];

for (const [step, what] of NO_STEP_AND_WALL_STEPS) {
  Deno.test(`a machine-wide FAULT entry joining a device loss found after its window, the wall clock ${what}: every device's window is cut at the loss's first failed read, by poll order`, async () => {
    // Before, the FAULT entry noted the other device's polls from its own time: o held its polls
    // up to the FAULT entry (those past the loss's window), and with a step back, as the FAULT
    // entry's time then lay before the loss's date, none of its window.
    assert.deepEqual(
      await lossJoinedByFault(step),
      { d: [0, 1, 2], o: [0, 1, 2] },
      "each device's polls of the loss's window",
    );
  });
}

/**
 * As lossJoinedByFault, an e-stop latching in the step that finds d down, its own FAULT entry
 * delivered a turn later; both devices polled 1 s and 2 s after it (within its incident_after_s),
 * and 4 s after it (past it); the wall clock stepped by `resumedStepMs` 0.5 s after it. Answers
 * the record's header, each device's sample values and the e-stop's time.
 */
async function lossJoinedByEstop(stepMs: number, resumedStepMs = 0) {
  return await withLossRig(
    WINDOW_3S,
    async ({ clock, bus, failing, lost, onlyIncident, pollsOf }) => {
      const both = pollsOf("d", "o");
      both(0); // t0: d's last good read
      clock.advance(2000);
      both(1); // t0 + 2 s: d's first failed read
      const failingMono = failing();
      pollPastTheWindow(clock, both, stepMs);
      lost(failingMono);
      const latchedAt = clock.nowMs();
      latchEstop(bus, latchedAt);
      clock.advance(0); // a turn: the loss's own window is due at once
      enterFault(bus, latchedAt);
      clock.advance(500);
      clock.stepWall(resumedStepMs);
      clock.advance(500);
      both(5); // 1 s after the e-stop
      clock.advance(1000);
      both(6); // 2 s after it
      clock.advance(1000); // 3 s: its incident_after_s passed
      clock.advance(1000);
      both(7); // 4 s after it: past its window
      const { h, signals } = await onlyIncident(
        "one incident: the e-stop and its FAULT entry joined",
      );

      const values = valuesByDevice(signals);
      return { h: h!, values, latchedAt };
    },
  );
}

for (const [step, what] of NO_STEP_AND_WALL_STEPS) {
  Deno.test(`an e-stop joining a device loss found after its window, the wall clock ${what}: it has its own incident_after_s, and its FAULT entry a turn later joins it`, async () => {
    // Before, the loss's incident was written at once, the e-stop in it: no poll after the
    // e-stop in the record, and its FAULT entry a turn later began an incident of its own.
    const { h, values, latchedAt } = await lossJoinedByEstop(step);
    assert.equal(h.trigger, "estop");
    assert.deepEqual(
      h.also.map((c) => c.trigger).sort(),
      ["device_loss", "fault"],
      "the loss and the e-stop's FAULT entry in the one incident",
    );
    assert.deepEqual(
      values,
      { d: [0, 1, 2, 5, 6], o: [0, 1, 2, 5, 6] },
      "each device's polls of the loss's window and of the e-stop's after it",
    );
    assert.ok(h.until_epoch_ms >= latchedAt + 3000, "until_epoch_ms is not the e-stop's + 3 s");
  });
}

for (const [step, what] of WALL_STEPS) {
  Deno.test(`a machine-wide FAULT entry joining the loss of a device failing as it came back, found after its window, the wall clock stepped ${what}: every device's window is cut at its first failed read`, async () => {
    // Its first failed read is its next poll, each device's place in poll order noted as it is
    // recorded (History.onNextPoll).
    assert.deepEqual(
      await lossJoinedByFault(step, true),
      { d: [0, 1, 2], o: [0, 1, 2] },
      "each device's polls of the loss's window",
    );
  });
}

Deno.test("a device failing when the recorder stopped, up again before it started again, is dated at its new loss, not at the reads that failed before the stop", async () => {
  const window = WINDOW_1S;
  await withLossRig(
    window,
    async ({ clock, pollSignals, incidents, change, failing, recorded }) => {
      const t0 = clock.wall;
      pollSignals(["x"], 1); // t0: its first failed read
      failing();
      // The recorder stops and starts again; meanwhile the device answered again (its being up
      // told to no recorder).
      await incidents.stop();
      clock.advance(10_000);
      await incidents.start(new EventBus());
      for (let k = 0; k < 4; k++) {
        pollSignals(["x"], 2);
        clock.advance(500);
      }
      const lostAt = clock.wall;
      pollSignals(["x"], 3);
      // Its provider crashes: down at once, from up.
      change("up", { kind: "down", reason: "provider down", sinceMono: clock.mono });
      clock.advance(2_000);
      pollSignals(["x"], 4);
      const h = await recorded();
      assert.equal(
        h.at_epoch_ms - t0,
        lostAt - t0,
        "the loss is dated at the reads that failed before the stop",
      );
    },
  );
});

/**
 * `failing` devices of provider p (f00, f01, ...) begin failing together -- from up, or as they
 * come back from a reload's restart (told before any read) -- their first failed reads at
 * t0 + 2 s, the last of them polled last; device o answers all along. The last one is found down
 * after its window, and the device-loss latch's FAULT entry joins its loss. Answers o's sample
 * values in the record.
 */
async function lastOfManyLossesJoinedByFault(
  failing: number,
  returning: boolean,
): Promise<number[]> {
  return await withLossRig(
    WINDOW_3S,
    async ({ clock, pollSignals, change, bus, lost, onlyIncident }) => {
      const ids = Array.from({ length: failing }, (_, i) => `f${String(i).padStart(2, "0")}`);
      const all = (v: number) => [...ids, "o"].forEach((d) => pollSignals(["x"], v, "p", d));
      all(0); // t0: the last good reads
      if (returning) {
        clock.advance(500);
        const reason = "provider p is being restarted by a configuration reload";
        for (const d of ids) {
          change("up", { kind: "down", reason, sinceMono: clock.mono, reloading: true }, d);
        }
        clock.advance(500); // back, answering nothing yet: each one's next poll its first failed read
        for (const d of ids) {
          change("down", { kind: "failing", reason: "no answer", sinceMono: null }, d);
        }
        clock.advance(1000);
      } else clock.advance(2000);
      all(1); // t0 + 2 s: their first failed reads, in the order of `ids`
      const failingMono = clock.mono;
      if (!returning) {
        for (const d of ids) {
          change("up", { kind: "failing", reason: "reads fail", sinceMono: failingMono }, d);
        }
      }
      pollPastTheWindow(clock, all, 0);
      const last = ids[ids.length - 1];
      lost(failingMono, last!);
      enterFault(bus, clock.nowMs());
      clock.advance(3000); // the FAULT entry's own incident_after_s, no poll within it
      const { signals } = await onlyIncident("one incident: the FAULT entry joined the loss");

      return signals.find((s) => s.device_id === "o")!.samples.map((x) => x[1] as number);
    },
  );
}

for (const returning of [false, true]) {
  const how = returning ? "as they came back from a reload's restart" : "from up";
  Deno.test(`INCIDENT_LOSS_MARKS_MAX devices failing together ${how} hold their marks; the one failing past them takes the devices from the FAULT entry's time`, async () => {
    assert.equal(INCIDENT_LOSS_MARKS_MAX, 16);
    // The 16th failing device still holds every device's marks: o is cut at its window's end.
    assert.deepEqual(
      await lastOfManyLossesJoinedByFault(INCIDENT_LOSS_MARKS_MAX, returning),
      [0, 1, 2],
      "o's polls of the 16th loss's window",
    );
    // The 17th holds none (the bound: 16 failing devices x every device's marks): the FAULT entry
    // notes o from its own time, its polls up to it in the record. Before, devices failing as they
    // came back counted none of themselves (each one's marks are taken at its next poll), so all
    // of them held marks, however many.
    assert.deepEqual(
      await lastOfManyLossesJoinedByFault(INCIDENT_LOSS_MARKS_MAX + 1, returning),
      [0, 1, 2, 3, 4],
      "o's polls from the FAULT entry's time: the 17th failing device holds no marks",
    );
  });
}

/**
 * Device d's reads begin failing at t0 + 2 s and it is found down 1.5 s later, within its 3 s
 * window; an e-stop latches in that step (its FAULT entry delivered a turn later); device o
 * answers all along; both are polled every second from t0 on, at t0 + 3 s after a wall clock step
 * by `stepMs` at t0 + 2.5 s. Answers the record's header, each device's samples (value, ms from t0)
 * and the e-stop's time.
 */
async function lossWithinItsWindowJoinedByEstop(stepMs: number) {
  return await withLossRig(
    WINDOW_3S,
    async ({ clock, bus, failing, lost, onlyIncident, pollsOf }) => {
      const t0 = clock.wall;
      const both = pollsOf("d", "o");
      both(0); // t0
      clock.advance(1000);
      both(1); // t0 + 1 s: d's last good read
      clock.advance(1000);
      both(2); // t0 + 2 s: d's first failed read
      const failingMono = failing();
      clock.advance(500);
      clock.stepWall(stepMs);
      clock.advance(500);
      both(3); // t0 + 3 s (monotonic)
      clock.advance(500); // t0 + 3.5 s: d found down, within its window (ends at t0 + 5 s)
      lost(failingMono);
      const latchedAt = clock.nowMs();
      latchEstop(bus, latchedAt);
      clock.advance(0); // a turn
      enterFault(bus, latchedAt);
      clock.advance(500);
      both(4); // t0 + 4 s
      clock.advance(1000); // t0 + 5 s: the loss's window ends
      clock.advance(500);
      both(5); // t0 + 5.5 s: past it
      const { h, signals } = await onlyIncident(
        "one incident: the e-stop and its FAULT entry joined",
      );

      const samples = Object.fromEntries(
        signals.map((s) => [s.device_id, s.samples.map((x) => [x[1] as number, x[0] - t0])]),
      );
      return { h: h!, samples, t0, latchedAt };
    },
  );
}

for (const [step, what] of NO_STEP_AND_WALL_STEPS) {
  Deno.test(`an e-stop joining a device loss found within its window, the wall clock ${what} since its first failed read: every device's polls are the lost device's, from its window`, async () => {
    // The e-stop takes every device's polls as d's (noted at d's first failed read, by poll
    // order), its window the loss's. Before 1384f194 they were noted from the e-stop's time: a
    // step back since d's first failed read put that time before the window, and the record held
    // o's one poll after the e-stop, none of its window before.
    const { h, samples } = await lossWithinItsWindowJoinedByEstop(step);
    assert.equal(h.trigger, "estop");
    assert.deepEqual(
      h.also.map((c) => c.trigger).sort(),
      ["device_loss", "fault"],
      "the loss and the e-stop's FAULT entry in the one incident",
    );
    const values = (d: string) => samples[d]!.map(([v]) => v);
    assert.deepEqual(values("d"), [0, 1, 2, 3, 4], "d's polls of its window, not the one past it");
    assert.deepEqual(samples.o, samples.d, "o's polls of d's window, dated as d's");
    assertNeverFalls(samples.o!.map(([, t]) => t!));
    assert.deepEqual(
      samples.o!.slice(0, 3).map(([, t]) => t),
      [0, 1000, 2000],
      "the polls before the step at their own times",
    );
  });
}

for (const [step, what] of WALL_STEPS) {
  Deno.test(`an e-stop joining a device loss found after its window, the wall clock stepped ${what} within the e-stop's own incident_after_s: its polls there are in the record, until_epoch_ms its end on the stepped clock`, async () => {
    // Stepped 0.5 s after the e-stop. Before, a step ahead left until_epoch_ms at the last
    // sample, 1 s short of the e-stop's incident_after_s past it moved by the step (the window's
    // end moved only by a step since the loss was found, as any trigger's is by a step since it).
    const { h, values, latchedAt } = await lossJoinedByEstop(0, step);
    assert.deepEqual(values, { d: [0, 1, 2, 5, 6], o: [0, 1, 2, 5, 6] });
    assert.equal(
      h.until_epoch_ms - latchedAt,
      3000 + (step > 0 ? step : 0),
      "until_epoch_ms is the e-stop's + incident_after_s, later by a step ahead",
    );
  });
}

/**
 * As lossJoinedByFault (d's loss found 6 s after its first failed read at t0 + 2 s, past its 3 s
 * window; device o answering all along; the FAULT entry joining; the wall clock stepped by
 * `stepMs` at t0 + 7 s), device n polled from t0 + `firstS` s on (added by a reload: the ring did
 * not hold it at d's first failed read), and all of them 1 s after the FAULT entry. Answers each
 * device's sample values.
 */
async function lossJoinedByFaultWithNewcomer(
  stepMs: number,
  firstS: 4 | 6,
): Promise<Record<string, number[]>> {
  return await withLossRig(
    WINDOW_3S,
    async ({ clock, pollSignals, bus, failing, lost, onlyIncident }) => {
      const t0Mono = clock.mono;
      const all = (v: number) => {
        for (const d of ["d", "o"]) pollSignals(["x"], v, "p", d);
        if (clock.mono - t0Mono >= firstS * 1000) pollSignals(["x"], v, "p", "n");
      };
      all(0); // t0: d's last good read
      clock.advance(2000);
      all(1); // t0 + 2 s: d's first failed read
      const failingMono = failing();
      pollPastTheWindow(clock, all, stepMs); // t0 + 4, 6 and 8 s
      lost(failingMono);
      enterFault(bus, clock.nowMs());
      clock.advance(1000);
      all(5); // 1 s after the FAULT entry, within its own incident_after_s
      clock.advance(2000);
      const { signals } = await onlyIncident("one incident: the FAULT entry joined d's loss");

      return valuesByDevice(signals);
    },
  );
}

for (const [step, what] of NO_STEP_AND_WALL_STEPS) {
  Deno.test(`a FAULT entry joining a device loss found after its window, the wall clock ${what}: a device a reload added after the loss began has its polls of the loss's window and of the FAULT entry's, not those between`, async () => {
    // Before, a device the loss's marks did not hold was noted from the FAULT entry's time: its
    // polls taken between the loss's window and the FAULT entry were in the record, dated before
    // it, which left them out for every other device.
    assert.deepEqual(
      await lossJoinedByFaultWithNewcomer(step, 6),
      { d: [0, 1, 2, 5], o: [0, 1, 2, 5], n: [5] },
      "n first polled past the loss's window: its poll after the FAULT entry only",
    );
    assert.deepEqual(
      await lossJoinedByFaultWithNewcomer(step, 4),
      { d: [0, 1, 2, 5], o: [0, 1, 2, 5], n: [2, 5] },
      "n first polled within the loss's window: that poll and its poll after the FAULT entry",
    );
  });
}

Deno.test("a device failing as it came back whose provider then reports it UNREACHABLE is dated at that report, not at its next poll", async () => {
  // DeviceOutages begins the failing spell of a device not read since its provider came back at
  // its provider's health reporting it UNREACHABLE (the date told then, failing still), and dates
  // its loss from there. Before: the recorder kept its next poll as its first failed read, the
  // loss dated a poll late, its window's end a poll late too.
  await afterLastGoodRead(
    WINDOW_2S,
    async ({ clock, pollSignals, change, recorded, takenOut, backAnsweringNothing }, t0) => {
      clock.advance(100);
      takenOut();
      clock.advance(100); // t0 + 200: back, answering nothing yet
      backAnsweringNothing();
      clock.advance(100); // t0 + 300: its provider's health reports it UNREACHABLE: the spell begins
      const reportMono = clock.mono;
      const unreachable = "its provider reports it UNREACHABLE";
      change("failing", { kind: "failing", reason: unreachable, sinceMono: reportMono });
      clock.advance(400);
      pollSignals(["x"], 2); // t0 + 700: its next poll, failed
      clock.advance(600); // down 1 s after the report
      change("failing", { kind: "down", reason: unreachable, sinceMono: reportMono });
      for (let k = 0; k < 4; k++) {
        clock.advance(500);
        pollSignals(["x"], 3 + k);
      }
      const h = await recorded();
      assert.equal(h.at_epoch_ms - t0, 300, "dated at the report that began its spell");
      assert.equal(
        h.until_epoch_ms - t0,
        2300,
        "its window ends incident_after_s after the report",
      );
    },
  );
});

/**
 * d's first failed read at t0 + 2 s, found down after its 3 s window (t0 + 8 s); an alarm on
 * device o raised 0.5 s later joins its incident, o polled 1 s and 4 s after the alarm. Answers
 * the record's header and each device's sample values.
 */
async function lossJoinedByAlarm(stepMs: number) {
  return await withLossRig(
    WINDOW_3S,
    async ({ clock, pollSignals, incidents, bus, failing, lost, pollsOf }) => {
      const both = pollsOf("d", "o");
      both(0); // t0: d's last good read
      clock.advance(2000);
      both(1); // t0 + 2 s: d's first failed read
      const failingMono = failing();
      pollPastTheWindow(clock, both, stepMs);
      lost(failingMono);
      const raisedAt = clock.nowMs(); // in the step that finds d down, before its record is read
      bus.publish(hotRaised("p/o/x", raisedAt));
      clock.advance(1000);
      pollSignals(["x"], 5, "p", "o"); // 1 s after the alarm
      clock.advance(3000);
      pollSignals(["x"], 6, "p", "o"); // 4 s after it
      clock.advance(1000);
      await incidents.settled();
      const list = incidents.list();
      const out = [];
      for (const h of list) {
        const { signals } = await incidents.get(h.incident_id);
        out.push({
          h,
          values: Object.fromEntries(
            signals.map((s) => [s.device_id, s.samples.map((x) => [x[0] - raisedAt, x[1]])]),
          ),
        });
      }
      return out;
    },
  );
}

for (const [step, what] of NO_STEP_AND_WALL_STEPS) {
  Deno.test(`an alarm on another device joining a device loss found after its window, the wall clock ${what}: its device's polls are those of the loss's window, as for a machine-wide trigger`, async () => {
    // Before, the alarm noted its device from its own time, past the loss's window: o held its
    // polls between the window's end and the alarm (until_epoch_ms moved 3 s past the window),
    // and after a step back since the loss's date (the alarm then dated before it), none at all.
    const got = await lossJoinedByAlarm(step);
    assert.equal(got.length, 1, "one incident: the alarm joined d's loss");
    const [{ h, values }] = got as [(typeof got)[0]];
    assert.equal(h.trigger, "alarm");
    assert.deepEqual(h.also.map((a) => a.trigger), ["device_loss"]);
    assert.deepEqual(
      Object.fromEntries(Object.entries(values).map(([d, v]) => [d, v.map((x) => x[1])])),
      { d: [0, 1, 2], o: [0, 1, 2] },
      "each device's polls of the loss's window",
    );
    if (step >= 0) {
      assert.equal(h.until_epoch_ms - h.at_epoch_ms, 3000, "until is the window's end");
    }
  });
}

// A device whose reads were failing when a reload took its provider out to restart it, and that
// the new process no longer lists (or that the reload then failed to start): lost, as one whose
// provider crashed while it was failing -- from its first failed read, not from the take-out (its
// record would begin at the reload and miss the failed reads that led to the loss).
for (const outcome of ["its new process leaves it out", "the reload fails to start it"] as const) {
  Deno.test(`a device failing when a reload restarting its provider took it out, then lost (${outcome}), is dated at its first failed read, not at the take-out`, async () => {
    await afterLastGoodRead(
      WINDOW_2S,
      async ({ clock, pollSignals, incidents, change, failing, recorded }, t0) => {
        clock.advance(500);
        pollSignals(["x"], 2); // t0 + 500: its first failed read
        failing();
        clock.advance(200);
        pollSignals(["x"], 3); // t0 + 700: failing still, not down yet
        clock.advance(1400); // t0 + 2100: the reload takes its provider out (on purpose)
        const takeOutMono = clock.mono;
        const restarting = "provider p is being restarted by a configuration reload";
        change("failing", {
          kind: "down",
          reason: restarting,
          sinceMono: takeOutMono,
          reloading: true,
        });
        clock.advance(300); // t0 + 2400: the outcome -- down still, no longer on purpose
        const reason = outcome === "its new process leaves it out"
          ? "not in the inventory of provider p"
          : "provider p failed to start at a configuration reload (no such file)";
        change("down", { kind: "down", reason, sinceMono: takeOutMono }, "d", true);
        clock.advance(3000);
        const h = await recorded();
        // Before: dated at the take-out (t0 + 2100), its record from t0 + 1100 on: no failed read.
        assert.equal(h.at_epoch_ms - t0, 500, "dated at its first failed read");
        const { signals } = await incidents.get(h.incident_id);
        assert.deepEqual(signals[0]!.samples.map((s) => s[1]), [1, 2, 3]);
      },
    );
  });
}

Deno.test("a device failing when a reload restarting its provider took it out, listed again and up, then lost, is dated at its new loss, not at the reads failing before the reload", async () => {
  await withLossRig(WINDOW_2S, async ({ clock, pollSignals, change, failing, lost, recorded }) => {
    const t0 = clock.wall;
    pollSignals(["x"], 1);
    clock.advance(500);
    pollSignals(["x"], 2); // t0 + 500: a failed read before the reload
    failing();
    clock.advance(200);
    const restarting = "provider p is being restarted by a configuration reload";
    change("failing", { kind: "down", reason: restarting, sinceMono: clock.mono, reloading: true });
    clock.advance(300); // t0 + 1000: its new process lists it, and it answers
    change("down", { kind: "up", reason: "", sinceMono: null });
    pollSignals(["x"], 3);
    clock.advance(4000);
    pollSignals(["x"], 4); // t0 + 5000: its first failed read since
    const failingMono = failing();
    clock.advance(600);
    lost(failingMono);
    clock.advance(3000);
    const h = await recorded();
    assert.equal(h.at_epoch_ms - t0, 5000);
  });
});

/**
 * One outage: device p/d failing then down (its first loss, at t0 + 500, found at t0 + 1.5 s),
 * its provider crashing (down still) and coming back with the device failing still (its first
 * failed read since at t0 + 2.75 s), down again 1 s later (t0 + 3.75 s) -- more than
 * MERGE_WINDOW_MS after the first was found. `upBetween`: it answered once in between (a good
 * read: up), so two outages. Answers the records, their headers' also, and the test's t0.
 */
async function lostTwiceAcrossACrash(
  window: LossWindow,
  upBetween: boolean,
  firstNotWritten?: FaultyMemoryFiles,
) {
  const { log, lines } = capturingLogger({ level: "info" });
  const rig = await withLossRig(
    window,
    async ({ clock, pollSignals, incidents, change }) => {
      // A full disk while the first loss's record is written (its window ends before the crash).
      if (firstNotWritten !== undefined) firstNotWritten.full = true;
      const joined: [string, number, boolean][] = [];
      incidents.onIncidentJoined((x) => joined.push([x.trigger, x.at_epoch_ms, x.leads]));
      const t0 = clock.wall;
      pollSignals(["x"], 1); // t0: the last good read
      clock.advance(500);
      pollSignals(["x"], 2); // t0 + 500: its first failed read
      const failing = clock.mono;
      change("up", { kind: "failing", reason: "reads fail", sinceMono: failing });
      clock.advance(1000);
      change("failing", { kind: "down", reason: "reads fail", sinceMono: failing }); // the loss
      await Promise.resolve(); // a turn: its listeners are told it began
      clock.advance(500);
      // Its provider crashes: down still (no loss of its own), dated from its loss (DeviceOutages
      // keeps the outage's first moment, and tells no change of kind).
      change("down", { kind: "down", reason: "provider p is UNAVAILABLE", sinceMono: failing });
      if (firstNotWritten !== undefined) {
        await incidents.settled();
        firstNotWritten.full = false; // room again for the records after it
      }
      clock.advance(500);
      // Its provider is up again: the device failing as it comes back, or answering once.
      if (upBetween) {
        pollSignals(["x"], 3); // t0 + 2.5 s: a good read
        change("down", { kind: "up", reason: "", sinceMono: null });
      } else change("down", { kind: "failing", reason: "reads fail", sinceMono: null });
      clock.advance(250);
      pollSignals(["x"], 4); // t0 + 2.75 s: its first failed read since it came back
      const again = clock.mono;
      const previous = upBetween ? "up" : "failing";
      change(previous, { kind: "failing", reason: "reads fail", sinceMono: again });
      clock.advance(1000);
      // Down again: not up since its loss, DeviceOutages dates it from that loss (Tracked.outageSince).
      const downSince = upBetween ? again : failing;
      change("failing", { kind: "down", reason: "reads fail", sinceMono: downSince });
      for (let k = 0; k < 8; k++) {
        clock.advance(1000);
        pollSignals(["x"], 5);
      }
      await incidents.settled();
      return { records: incidents.list().reverse(), t0, joined };
    },
    log,
    firstNotWritten,
  );
  return { ...rig, lines };
}

Deno.test("a device lost, its provider crashing and coming back while it still fails, down again within the loss's window: one incident, the second loss listed in it", async () => {
  // Before, the second loss (2.25 s after the first was found, past MERGE_WINDOW_MS) began an
  // incident of its own: two device-loss records of one outage.
  const window = { memorySeconds: 60, incidentBeforeS: 1, incidentAfterS: 5, diskMaxBytes: 0 };
  const { records, t0, joined } = await lostTwiceAcrossACrash(window, false);
  assert.equal(records.length, 1, `one outage, one incident: ${JSON.stringify(records)}`);
  assert.deepEqual(
    joined,
    [["device_loss", t0 + 2750, false]],
    "its run is told the second loss joined the incident",
  );
  const [h] = records;
  assert.equal(h!.trigger, "device_loss");
  assert.equal(h!.at_epoch_ms, t0 + 500, "dated at its first loss's first failed read");
  assert.deepEqual(
    h!.also.map((c) => [c.trigger, c.at_epoch_ms - t0]),
    [["device_loss", 2750]],
    "the second loss is listed in it, at its own first failed read",
  );
});

Deno.test("a device lost, its record written, its provider crashing and coming back while it still fails, down again: no second incident for the one outage", async () => {
  // incident_after_s 1: the first loss's record is written at t0 + 1.5 s, before the crash.
  // Before, the second loss began a second device-loss record of the same outage.
  const window = WINDOW_1S;
  const { records, t0, lines } = await lostTwiceAcrossACrash(window, false);
  assert.equal(records.length, 1, `one outage, one incident: ${JSON.stringify(records)}`);
  assert.equal(records[0]!.at_epoch_ms, t0 + 500);
  assert.deepEqual(records[0]!.also, [], "its record as written, nothing joined it");
  const said = sameOutageLines(lines);
  assert.equal(said.length, 1, `one line says the loss again begins none: ${said}`);
  assert.match(
    said[0]!,
    new RegExp(
      `^INFO .*incident ${records[0]!.incident_id}: "device p/d lost: reads fail" again, not ` +
        `up since that loss: the same outage, no new incident$`,
    ),
  );
});

Deno.test("a device lost, its record not written (a full disk), its provider crashing and coming back while it still fails, down again: the second loss begins its own incident", async () => {
  // Before, the second loss joined the outage whose record was never written: "the same outage,
  // no new incident", and no record of the outage on disk at all.
  const window = WINDOW_1S;
  const files = new FaultyMemoryFiles();
  const { records, t0, lines } = await lostTwiceAcrossACrash(window, false, files);
  assertRecordNotWritten(lines);
  assert.deepEqual(
    records.map((h) => [h.trigger, h.at_epoch_ms - t0, h.also.length]),
    [["device_loss", 2750, 0]],
    "the outage's only record is the second loss's, dated at its own first failed read",
  );
  assert.deepEqual(sameOutageLines(lines), []);
});

Deno.test("a device lost, its record not written, lost anew not up since before its own window ended: its record holds that window, not cut at the finding", async () => {
  // DeviceOutages dates the second loss from the outage's first moment (not up since); its record
  // is dated at its own first failed read. Before, its wait was counted from the outage's first
  // moment: the record was read at the finding, without the polls until its window's end.
  const window = { memorySeconds: 60, incidentBeforeS: 1, incidentAfterS: 3, diskMaxBytes: 0 };
  const files = new FaultyMemoryFiles();
  const { log, lines } = capturingLogger({ level: "info" });
  await withLossRig(
    window,
    async ({ clock, pollSignals, incidents, change }) => {
      const t0 = clock.wall;
      pollSignals(["x"], 0); // t0: the last good read
      clock.advance(500);
      pollSignals(["x"], 1); // t0 + 500: its first failed read
      const failing = clock.mono;
      change("up", { kind: "failing", reason: "reads fail", sinceMono: failing });
      clock.advance(1000);
      change("failing", { kind: "down", reason: "reads fail", sinceMono: failing }); // the loss
      files.full = true; // its record, read at t0 + 3.5 s, is not written
      clock.advance(1000); // t0 + 2.5 s: its provider crashed and is back, the device not read yet
      change("down", { kind: "failing", reason: "reads fail", sinceMono: null });
      clock.advance(1000);
      await incidents.settled();
      files.full = false;
      assertRecordNotWritten(lines);
      pollSignals(["x"], 2); // t0 + 3.5 s: its first failed read since it came back
      change("failing", { kind: "failing", reason: "reads fail", sinceMono: clock.mono });
      clock.advance(1000);
      // Down again, t0 + 4.5 s: dated from its loss, as DeviceOutages tells it.
      change("failing", { kind: "down", reason: "reads fail", sinceMono: failing });
      for (let v = 3; v <= 12; v++) {
        clock.advance(500);
        pollSignals(["x"], v); // t0 + 5 s .. t0 + 9.5 s (its window closes before the one at 6.5 s)
      }
      await incidents.settled();
      const records = incidents.list();
      assert.equal(records.length, 1, `the outage's one record: ${JSON.stringify(records)}`);
      const h = records[0]!;
      assert.equal(h.at_epoch_ms - t0, 3500, "dated at its own first failed read");
      assert.equal(h.until_epoch_ms - t0, 6500, "its window ends incident_after_s after it");
      const { signals } = await incidents.get(h.incident_id);
      assert.deepEqual(
        valuesByDevice(signals),
        { d: [2, 3, 4, 5] },
        "its polls from incident_before_s before to incident_after_s after its first failed read",
      );
    },
    log,
    files,
  );
});

Deno.test("a device lost, its record removed by incident_max_count, lost again not up since: the second loss begins its own incident", async () => {
  // Before, d's second loss joined an outage whose record the bound had removed: no new incident,
  // and no record of d's outage kept.
  const window = WINDOW_1S;
  const { log, lines } = capturingLogger({ level: "info" });
  await withLossRig({ ...window, incidentMaxCount: 1 }, async ({ clock, incidents, change }) => {
    const lose = (d: string, sinceMono = clock.mono) => {
      change("failing", { kind: "down", reason: "reads fail", sinceMono }, d);
    };
    const lostAt = clock.mono;
    lose("d");
    clock.advance(2000);
    await incidents.settled();
    const [first] = incidents.list();
    assert.deepEqual(first?.devices, ["p/d"], "d's loss recorded");
    lose("o"); // another device's loss: its record makes d's way for it (incident_max_count 1)
    clock.advance(2000);
    await incidents.settled();
    assert.deepEqual(incidents.list().map((h) => h.devices), [["p/o"]], "d's record removed");
    // d back from its provider's restart failing still, then down again: never up since.
    change("down", { kind: "failing", reason: "reads fail", sinceMono: null }, "d");
    lose("d", lostAt); // dated from its loss, as DeviceOutages dates one not up since

    clock.advance(2000);
    await incidents.settled();
    assert.deepEqual(
      incidents.list().map((h) => h.devices),
      [["p/d"]],
      `d's outage has a record again: ${lines.join("\n")}`,
    );
    assert.notEqual(incidents.list()[0]!.incident_id, first!.incident_id);
    assert.deepEqual(sameOutageLines(lines), []);
  }, log);
});

/**
 * Device p/d lost; lost again (not up since) while its loss's record's write is held; that write
 * then fails (`fails`: a full disk) or is written. Answers the records ([trigger, at - t0,
 * devices]) and the log lines.
 */
async function lostAgainWhileWriting(fails: boolean) {
  const window = WINDOW_1S;
  const files = new HeldRecordAppends();
  const { log, lines } = capturingLogger({ level: "info" });
  const records = await withLossRig(
    window,
    async ({ clock, incidents, change }) => {
      let release = () => {};
      files.held = new Promise<void>((r) => release = r);
      const t0 = clock.wall;
      const lostAt = clock.mono;
      change("failing", { kind: "down", reason: "reads fail", sinceMono: lostAt }); // the loss
      clock.advance(2000); // its window closed: its record's write begins, and waits
      await untilTurns(() => files.waiting === 1, "the first record's write under way");
      // Its provider crashed and came back, the device failing still; down again: not up since,
      // dated from its loss (DeviceOutages: Tracked.outageSince).
      change("down", { kind: "failing", reason: "reads fail", sinceMono: null });
      change("failing", { kind: "down", reason: "reads fail", sinceMono: lostAt });
      files.held = null;
      files.full = fails; // the disk fills: the first record is not written
      release();
      await incidents.settled();
      files.full = false;
      clock.advance(2000);
      await incidents.settled();
      return incidents.list().map((h) => [h.trigger, h.at_epoch_ms - t0, h.devices]);
    },
    log,
    files,
  );
  return { records, lines };
}

Deno.test("a device lost again while its loss's record is being written, that write then failing (a full disk): the second loss begins its own incident", async () => {
  // Before, the second loss, found while the first record's write was under way, was "the same
  // outage, no new incident"; the write then failed: no record of the outage on disk at all.
  const { records, lines } = await lostAgainWhileWriting(true);
  assertRecordNotWritten(lines);
  assert.deepEqual(
    records,
    [["device_loss", 2000, ["p/d"]]],
    `d's outage has a record, dated at its second loss: ${lines.join("\n")}`,
  );
  assert.deepEqual(sameOutageLines(lines), []);
});

Deno.test("a device lost again while its loss's record is being written, that write then done: the same outage, no new incident, said once", async () => {
  const { records, lines } = await lostAgainWhileWriting(false);
  assert.deepEqual(records, [["device_loss", 0, ["p/d"]]], lines.join("\n"));
  assert.deepEqual(
    sameOutageLines(lines).map((l) => l.split(" ")[0]),
    ["INFO"],
  );
});

Deno.test("a device lost again while its loss's record is being written, its provider then removed by a reload and that write failing: the second loss has its record, and a device of its id the provider configured again lists, lost, has its own", async () => {
  // Before, the second loss's incident, begun once the write failed, noted the outage of p/d
  // again after providerUnconfigured had let go of p's: the device of that id the provider
  // configured again lists, lost without answering first, joined that removed device's incident
  // (or, that one written, began none: "the same outage").
  const window = WINDOW_1S;
  const files = new HeldRecordAppends();
  const { log, lines } = capturingLogger({ level: "info" });
  await withLossRig(
    window,
    async ({ clock, incidents, change }) => {
      let release = () => {};
      files.held = new Promise<void>((r) => release = r);
      const t0 = clock.wall;
      const lostAt = clock.mono;
      change("failing", { kind: "down", reason: "reads fail", sinceMono: lostAt }); // the loss
      clock.advance(2000); // its window closed: its record's write begins, and waits
      await untilTurns(() => files.waiting === 1, "the first record's write under way");
      change("down", { kind: "failing", reason: "reads fail", sinceMono: null });
      change("failing", { kind: "down", reason: "reads fail", sinceMono: lostAt }); // lost again
      // A reload removes provider p (DeviceOutages tells d gone; the registry, p unconfigured).
      change("down", {
        kind: "down",
        reason: "provider p is not configured",
        sinceMono: lostAt,
        unconfigured: true,
      });
      incidents.providerUnconfigured("p");
      files.held = null;
      files.full = true; // the disk fills: the first record is not written
      release();
      await incidents.settled();
      files.full = false;
      assertRecordNotWritten(lines);
      clock.advance(2000);
      await incidents.settled();
      const removed = incidents.list();
      assert.deepEqual(
        removed.map((h) => [h.trigger, h.at_epoch_ms - t0, h.devices]),
        [["device_loss", 2000, ["p/d"]]],
        `the loss before the removal has its record, dated at it: ${lines.join("\n")}`,
      );
      // A reload configures p again; its device d (another device) fails from its first read.
      const failing = clock.mono;
      change("up", { kind: "failing", reason: "reads fail", sinceMono: failing });
      clock.advance(1000);
      change("failing", { kind: "down", reason: "reads fail", sinceMono: failing });
      clock.advance(2000);
      await incidents.settled();
      assert.deepEqual(
        incidents.list().map((h) => [h.trigger, h.at_epoch_ms - t0, h.devices]),
        [["device_loss", 4000, ["p/d"]], ["device_loss", 2000, ["p/d"]]], // newest first
        `the new device's loss is an incident of its own: ${lines.join("\n")}`,
      );
      assert.deepEqual(sameOutageLines(lines), []);
    },
    log,
    files,
  );
});

Deno.test("a device lost, up again once its provider came back, then lost again: two outages, two incidents", async () => {
  const window = { memorySeconds: 60, incidentBeforeS: 1, incidentAfterS: 5, diskMaxBytes: 0 };
  const { records, t0 } = await lostTwiceAcrossACrash(window, true);
  assert.deepEqual(
    records.map((h) => [h.trigger, h.at_epoch_ms - t0, h.also.length]),
    [["device_loss", 500, 0], ["device_loss", 2750, 0]],
    "a loss after the device answered again is a new outage's",
  );
});

Deno.test("a FAULT entry 1.5 s after an e-stop joined a device loss found after its window is an incident of its own: joining is by time, not by the e-stop's after-window", async () => {
  // The loss's incident waits on for the e-stop's own incident_after_s (Pending.resumed); a
  // FAULT entry within it but past MERGE_WINDOW_MS of the finding does not join it
  // (docs/history.md "Once.": the device-loss latch's own FAULT entry comes in the finding step).
  await withLossRig(WINDOW_3S, async ({ clock, pollSignals, incidents, change, bus }) => {
    const both = (v: number) => ["d", "o"].forEach((d) => pollSignals(["x"], v, "p", d));
    both(0); // t0: d's last good read
    clock.advance(2000);
    both(1); // t0 + 2 s: d's first failed read
    const failingMono = clock.mono;
    change("up", { kind: "failing", reason: "reads fail", sinceMono: failingMono });
    pollPastTheWindow(clock, both, 0);
    change("failing", { kind: "down", reason: "reads fail", sinceMono: failingMono });
    const latchedAt = clock.nowMs();
    bus.publish({
      kind: "estop_change",
      latched: true,
      reason: null,
      cause: "api",
      timestamp_ms: latchedAt,
    });
    clock.advance(0);
    const fault = { kind: "mode_change", new_mode: "FAULT" } as const;
    bus.publish({ ...fault, previous_mode: "AUTO", timestamp_ms: latchedAt });
    clock.advance(1500);
    bus.publish({ ...fault, previous_mode: "MANUAL", timestamp_ms: clock.nowMs() });
    clock.advance(5000);
    await incidents.settled();
    assert.deepEqual(
      incidents.list().reverse().map((h) => [h.trigger, h.also.map((c) => c.trigger).sort()]),
      [["estop", ["device_loss", "fault"]], ["fault", []]],
    );
  });
});

Deno.test("INCIDENT_OUTAGES_MAX devices lost and not up since are remembered: the one noted longest ago past them is forgotten, its next loss an incident of its own", async () => {
  const window = WINDOW_1S;
  await withLossRig(window, async ({ clock, incidents, change }) => {
    // Their providers down at once, all in one step: one incident, each device noted in turn.
    const lostAt = clock.mono;
    for (let i = 0; i <= INCIDENT_OUTAGES_MAX; i++) {
      change("up", { kind: "down", reason: "provider down", sinceMono: lostAt }, `d${i}`);
    }
    clock.advance(2000);
    await incidents.settled();
    assert.equal(incidents.list().length, 1, "the losses of one step: one incident");
    // Each back failing, then down again, not up in between: d1 first (d0's new incident, noted
    // then, forgets the one noted longest ago, d1).
    for (const d of ["d1", "d0"]) {
      change("down", { kind: "failing", reason: "reads fail", sinceMono: null }, d);
      // Down again, not up since: dated from its loss (DeviceOutages: Tracked.outageSince).
      change("failing", { kind: "down", reason: "reads fail", sinceMono: lostAt }, d);
      clock.advance(2000);
    }
    await incidents.settled();
    assert.deepEqual(
      incidents.list().map((h) => h.devices),
      [["p/d0"], incidents.list()[1]!.devices],
      "d0, forgotten past the bound, is lost anew; d1, remembered, begins none",
    );
  });
});
