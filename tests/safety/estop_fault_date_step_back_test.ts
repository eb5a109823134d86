/**
 * An e-stop's FAULT entry is dated no earlier than its latch (docs/safety.md section 2, step 1:
 * the `estop_change`'s time is read before the `mode_change`'s; the incident recorder takes the
 * FAULT entry dated at or after a latch for that e-stop's own). The e-stop and the mode manager
 * each date their transitions no earlier than their own previous one: after a step back of the
 * wall clock (NTP) the e-stop's date may stand on its release before, later than the clock. Its
 * FAULT entry must then not be dated before it. In-process: the real Estop and ModeManager over a
 * router that answers every call at once, and a wall clock the test sets.
 */
import assert from "node:assert/strict";
import type { Clock } from "../../src/common/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { withRealTimers } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { incidentRig } from "../history/_incident_rig.ts";
import { heaterOffLadder, providersUp, recordingRouter } from "./_clock_rig.ts";

const W = 1_767_000_000_000;

/** The real ModeManager and Estop on `bus` and `clock`, over a router that answers at once. */
function stopOn(clock: Clock, bus: EventBus): { modes: ModeManager; estop: Estop } {
  const router = recordingRouter();
  const inventory = providersUp("plant");
  const log = testLogger();
  const modes = new ModeManager({
    router,
    inventory,
    bus,
    clock,
    log,
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: [], afterTransition: [] },
  });
  const estop = new Estop({
    router,
    inventory,
    reads: {} as FreshReader,
    clock,
    log,
    bus,
    modes,
    safeState: heaterOffLadder(),
  });
  return { modes, estop };
}

Deno.test("an e-stop's mode_change into FAULT is dated no earlier than its estop_change after the wall clock stepped back", async () => {
  let wall = W;
  const clock = withRealTimers({ nowMs: () => wall, monoMs: () => systemClock.monoMs() });
  const bus = new EventBus();
  const seen: string[] = [];
  const dates: { estop: number | null; fault: number | null } = { estop: null, fault: null };
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_change" && event.latched) {
      seen.push(`estop ${event.timestamp_ms - W}`);
      dates.estop = event.timestamp_ms;
    }
    if (event.kind === "mode_change" && event.new_mode === "FAULT") {
      seen.push(`fault ${event.timestamp_ms - W}`);
      dates.fault = event.timestamp_ms;
    }
  });
  const { modes, estop } = stopOn(clock, bus);
  try {
    await estop.trigger("first");
    wall = W + 10_000;
    estop.clear(); // the release, dated W + 10 s
    wall = W + 1_000; // NTP steps the wall clock back 9 s
    await modes.request("MANUAL"); // re-armed, dated W + 1 s (after the FAULT entry at W)
    wall = W + 1_100;
    dates.estop = null;
    dates.fault = null;
    await estop.trigger("second");
    assert.notEqual(dates.estop, null);
    assert.notEqual(dates.fault, null);
    assert.equal(dates.estop, W + 10_000, "the latch no earlier than the release before it");
    assert.ok(
      dates.fault! >= dates.estop!,
      `its FAULT entry dated before the latch that committed it: ${seen.join(", ")}`,
    );
  } finally {
    estop.close();
  }
});

Deno.test("after a wall clock step back, the incident of an e-stop dates it as its estop_change does", async () => {
  const { clock: manual, bus, incidents, session } = incidentRig({ config: { incidentAfterS: 1 } });
  // The stop's clocks: the rig's wall (stepped by the test), real timers for the read-back.
  const clock = withRealTimers({ nowMs: () => manual.nowMs(), monoMs: () => systemClock.monoMs() });
  const { modes, estop } = stopOn(clock, bus);
  try {
    let latched: number | null = null;
    bus.subscribe(({ event }) => {
      if (event.kind === "estop_change" && event.latched) latched = event.timestamp_ms;
    });
    await session(async () => {
      await estop.trigger("first");
      manual.advance(10_000);
      await incidents.settled();
      estop.clear();
      manual.stepWall(-9_000); // NTP steps the wall clock back 9 s
      await modes.request("MANUAL");
      manual.advance(100);
      await estop.trigger("second");
      manual.advance(10_000);
      await incidents.settled();
      const [second] = incidents.list(); // newest first
      assert.equal(incidents.list().length, 2);
      assert.equal(second!.trigger, "estop");
      assert.equal(
        second!.at_epoch_ms - latched!,
        0,
        "the incident dates the e-stop as its estop_change does (" +
          `estop_change ${latched! - manual.wall}, incident ${second!.at_epoch_ms - manual.wall})`,
      );
    });
  } finally {
    estop.close();
  }
});

Deno.test("after a wall clock step back, the incident of an e-stop dated at its release before holds the polls of its lead-up, within its window", async () => {
  const { clock: manual, bus, incidents, poll, session } = incidentRig({
    config: { incidentBeforeS: 1, incidentAfterS: 1 },
  });
  const clock = withRealTimers({ nowMs: () => manual.nowMs(), monoMs: () => systemClock.monoMs() });
  const { modes, estop } = stopOn(clock, bus);
  /** Polls p0/d0 `n` times at 100 ms, counting up from `from`. */
  const pollFor = (from: number, n: number) => {
    for (let i = 0; i < n; i++) {
      poll("p0", "d0", from + i);
      manual.advance(100);
    }
  };
  try {
    await session(async () => {
      await estop.trigger("first");
      manual.advance(10_000);
      await incidents.settled();
      estop.clear(); // the release, dated at the wall clock (ahead an hour)
      manual.stepWall(-3_600_000); // NTP steps the wall clock back an hour
      await modes.request("MANUAL");
      pollFor(0, 10); // the second's lead-up: 1 s of polls
      await estop.trigger("second"); // dated at the release (held: the clock is behind it)
      pollFor(10, 10);
      manual.advance(2_000);
      await incidents.settled();
      const [second] = incidents.list(); // newest first
      assert.equal(incidents.list().length, 2);
      const record = await incidents.get(second!.incident_id);
      const samples = record.signals.flatMap((s) => s.samples);
      assert.deepEqual(
        samples.map((x) => x[1]),
        [...Array(20).keys()],
        `the polls of its window, its lead-up first: ${JSON.stringify(samples)}`,
      );
      const { at_epoch_ms: at, from_epoch_ms: from, until_epoch_ms: until } = record.incident;
      const times = samples.map((x) => x[0] as number);
      assert.ok(
        times.every((t, i) => t >= from && t <= until && (i === 0 || t >= times[i - 1]!)),
        `sample times outside ${from - at}..${until - at} of the trigger, or falling: ` +
          JSON.stringify(times.map((t) => t - at)),
      );
    });
  } finally {
    estop.close();
  }
});
