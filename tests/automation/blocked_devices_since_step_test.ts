/**
 * GET /v0/automation/status `blocked_devices[].since_epoch_ms` and a step of the wall clock (NTP):
 * the date a device the tree names started failing is a fact of the past, dated when its condition
 * changed, as `device_outages`, `refused_calls` and the device-loss latch's entries are -- not
 * counted back from the monotonic clock at every read, which moves it by the step. The real kernel
 * over the simulated provider, whose `inject_device_unavailable` makes the device's reads fail.
 */
import assert from "node:assert/strict";
import type { Clock } from "../../src/common/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { i, manualCall } from "../safety/_fixture.ts";
import { automationConfig, callAs, TreeDir, treeXml, tv } from "../scenarios/automation_helpers.ts";

const NAMES_MOTOR = treeXml(
  `<ReadSignal device_handle="sim0/motorctl0" signal_id="motor1_duty" value="{d}" />`,
);

/** The host's clock, its wall time stepped by the test (NTP), its monotonic time the host's. */
function steppedClock() {
  const step = { wallOffsetMs: 0 };
  const clock: Clock = { ...systemClock, nowMs: () => systemClock.nowMs() + step.wallOffsetMs };
  return { clock, step };
}

/** chaos_control inject_device_unavailable(motorctl0, 60 s): its reads fail from now on. */
function failMotor(rt: Kernel): Promise<unknown> {
  return manualCall(rt, "sim0", "chaos_control", 1, {
    device_id: { type: "string", string: "motorctl0" },
    duration_ms: i(60_000),
  });
}

/** sim0/motorctl0's `since_epoch_ms` in automation status now (null: not listed, or undated). */
function motorSince(rt: Kernel): number | null {
  return rt.automation!.status().blocked_devices.find((b) => b.device_handle === "sim0/motorctl0")
    ?.since_epoch_ms ?? null;
}

/** Asserts `since` lies between `from` and `observed` (wall ms, 5 ms either side). */
function assertDatedBetween(since: number | null, from: number, observed: number, what: string) {
  assert.ok(
    since !== null && since >= from - 5 && since <= observed + 5,
    `${what} between ${from} and ${observed}, dated ${since} (` +
      `${since === null ? "none" : since - observed} ms from when it was seen)`,
  );
}

/**
 * Runs `body` over the real kernel (MANUAL) whose tree is `tree` (default: NAMES_MOTOR), on the
 * stepped clock; `restart: false` leaves sim0 down once it crashed.
 */
async function withSteppedRuntime(
  o: { tree?: string; restart?: false },
  body: (rt: Kernel, clock: Clock, step: { wallOffsetMs: number }, dir: TreeDir) => Promise<void>,
): Promise<void> {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("tree.xml", o.tree ?? NAMES_MOTOR);
    const { clock, step } = steppedClock();
    const config = o.restart === false
      ? automationConfig(tree, { config: { providers: [simProvider("sim0", { restart: false })] } })
      : automationConfig(tree);
    const rt = await startRuntime(config, { host: { clock } });
    try {
      await rt.modes.request("MANUAL");
      await body(rt, clock, step, dir);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
}

/** sim0 crashed (chaos_control crash, exit 9) and seen down. */
async function crashSim0(rt: Kernel): Promise<void> {
  await callAs(rt, "manual", "sim0/chaos_control", "crash", { exit_code: tv.i(9) }).catch(() => {});
  await waitFor("sim0 down", () => !rt.registry.host("sim0")!.available);
}

/**
 * NTP steps the wall clock back an hour before anyone asks: motorctl0 dated between `from` and
 * `observed`; then forward an hour: the same date.
 */
function assertStepsKeepDate(
  rt: Kernel,
  step: { wallOffsetMs: number },
  from: number,
  observed: number,
  what: string,
): void {
  step.wallOffsetMs = -3_600_000;
  const since = motorSince(rt);
  assertDatedBetween(since, from, observed, what);
  step.wallOffsetMs = 3_600_000;
  assert.equal(motorSince(rt), since, "the date moved with the wall clock");
}

Deno.test("automation status dates a blocked device from when it started failing: a wall clock stepped back an hour since does not move the date", async () => {
  await withSteppedRuntime({}, async (rt, clock, step) => {
    const before = clock.nowMs();
    await failMotor(rt);
    // Its reads fail (nobody has read automation status yet).
    await waitFor(
      "motorctl0 failing",
      () => rt.outages.condition("sim0", "motorctl0").kind !== "up",
    );
    // Stepped back an hour before anyone asks, then forward two hours: the device has been
    // failing since the same moment.
    assertStepsKeepDate(rt, step, before, clock.nowMs(), "started failing");
  });
});

Deno.test("automation status keeps a down device's outage date through its provider's crash (the condition stays down): a wall clock stepped back since does not move the date", async () => {
  // Not restarted: sim0 stays down once it crashed.
  await withSteppedRuntime({ restart: false }, async (rt, _clock, step) => {
    await failMotor(rt);
    // Its reads have failed long enough: down (read once, as an operator's screen does).
    await waitFor(
      "motorctl0 down",
      () => rt.outages.condition("sim0", "motorctl0").kind === "down",
    );
    const readsFailedSince = rt.outages.condition("sim0", "motorctl0").sinceMono;
    const dated = motorSince(rt);
    assert.ok(dated !== null, "dated once down");
    // Its provider crashes: down still (no change of condition told), since its loss -- the
    // reason is its provider's now, the date is not moved to the crash.
    await crashSim0(rt);
    const c = rt.outages.condition("sim0", "motorctl0");
    assert.equal(c.kind, "down");
    assert.match(c.reason, /^provider sim0 is unavailable/);
    assert.equal(c.sinceMono, readsFailedSince, "down since its loss, not its provider's crash");
    step.wallOffsetMs = -3_600_000;
    assert.equal(motorSince(rt), dated, "the date of its loss, the wall clock stepped back");
    step.wallOffsetMs = 3_600_000;
    assert.equal(motorSince(rt), dated, "the date moved with the wall clock");
  });
});

Deno.test("automation status dates a device a reload's tree names from when it started failing before the reload: a wall clock stepped back before the first read does not move the date", async () => {
  // The tree at start names no device.
  await withSteppedRuntime(
    { tree: treeXml(`<AlwaysSuccess />`) },
    async (rt, clock, step, dir) => {
      const tree = await dir.write("names_motor.xml", NAMES_MOTOR);
      const before = clock.nowMs();
      await failMotor(rt);
      await waitFor(
        "motorctl0 failing",
        () => rt.outages.condition("sim0", "motorctl0").kind !== "up",
      );
      const observed = clock.nowMs();
      // NTP steps the wall clock back an hour; then a reload's tree names the device.
      step.wallOffsetMs = -3_600_000;
      const report = await rt.reload({
        ...rt.config,
        automation: { ...rt.config.automation, behaviorTree: tree },
      });
      assert.deepEqual(report.applied, ["automation.behavior_tree"]);
      assertDatedBetween(motorSince(rt), before, observed, "started failing");
    },
  );
});

Deno.test("automation status dates a device that was up from its provider's crash: a wall clock stepped back since does not move the date", async () => {
  // Not restarted: sim0 stays down once it crashed.
  await withSteppedRuntime({ restart: false }, async (rt, clock, step) => {
    assert.equal(rt.outages.condition("sim0", "motorctl0").kind, "up");
    // Each change of motorctl0 as told (the date a listener keeps is the one it is told).
    const told: (number | null)[] = [];
    rt.outages.onChange((c) => {
      if (c.deviceId === "motorctl0" && c.condition.kind === "down") {
        told.push(c.condition.sinceMono);
      }
    });
    const crashed = clock.nowMs();
    await crashSim0(rt);
    const c = rt.outages.condition("sim0", "motorctl0");
    assert.equal(c.kind, "down");
    assert.deepEqual(told, [c.sinceMono], "told down once, with the date it has");
    assertStepsKeepDate(rt, step, crashed, clock.nowMs(), "down since its provider crashed,");
  });
});
