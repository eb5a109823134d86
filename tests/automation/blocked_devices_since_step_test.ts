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
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { i, manualCall } from "../safety/_fixture.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

const NAMES_MOTOR = treeXml(
  `<ReadSignal device_handle="sim0/motorctl0" signal_id="motor1_duty" value="{d}" />`,
);

Deno.test("automation status dates a blocked device from when it started failing: a wall clock stepped back an hour since does not move the date", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("names_motor.xml", NAMES_MOTOR);
    // The host's clock, its wall time stepped by the test (NTP), its monotonic time the host's.
    let wallOffsetMs = 0;
    const clock: Clock = { ...systemClock, nowMs: () => systemClock.nowMs() + wallOffsetMs };
    const rt = await startRuntime(automationConfig(tree), { host: { clock } });
    try {
      await rt.modes.request("MANUAL");
      const before = clock.nowMs();
      // chaos_control inject_device_unavailable(motorctl0, 60 s): its reads fail from now on.
      await manualCall(rt, "sim0", "chaos_control", 1, {
        device_id: { type: "string", string: "motorctl0" },
        duration_ms: i(60_000),
      });
      const blocked = () =>
        rt.automation!.status().blocked_devices.find((b) => b.device_handle === "sim0/motorctl0");
      // Its reads fail (nobody has read automation status yet).
      await waitFor(
        "motorctl0 failing",
        () => rt.outages.condition("sim0", "motorctl0").kind !== "up",
      );
      const observed = clock.nowMs();
      // NTP steps the wall clock back an hour before anyone asks.
      wallOffsetMs = -3_600_000;
      const since = blocked()?.since_epoch_ms ?? null;
      assert.ok(
        since !== null && since >= before - 5 && since <= observed + 5,
        `started failing between ${before} and ${observed}, dated ${since} (` +
          `${since === null ? "none" : since - observed} ms from when it was seen)`,
      );
      // And forward two hours: the device has been failing since the same moment.
      wallOffsetMs = 3_600_000;
      assert.equal(blocked()?.since_epoch_ms, since, "the date moved with the wall clock");
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
