/**
 * A device that drops out while its provider stays up (the simulated provider's
 * `inject_device_unavailable`: every read of the device answers NOT_FOUND, its calls fail): entering
 * AUTO is refused while it is out; an outage in AUTO engages the device-loss latch (FAULT, the
 * tree halted, the event and the audit entry naming the device); when the device returns nothing
 * is re-commanded until an operator re-arms.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { deviceDownAfterMs } from "../../src/state/mod.ts";
import { afterPolls, recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { i, manualCall } from "../safety/_fixture.ts";
import { automationConfig, cached, eventsOf, TreeDir, treeXml } from "./automation_helpers.ts";

/** Keeps motor 1 at duty 0.5: a call whenever the readback differs. */
const HOLD_MOTOR = treeXml(
  `<Sequence name="hold">
      <ReadSignal name="read" device_handle="sim0/motorctl0" signal_id="motor1_duty"
                  value="{duty_now}" />
      <Fallback name="at_duty">
        <ScriptCondition name="matches" code="duty_now == 0.5" />
        <CallDevice name="run" device_handle="sim0/motorctl0" function_name="set_motor_duty"
                    args='json:{"motor_index": 1, "duty": 0.5}' />
      </Fallback>
    </Sequence>`,
);

/** chaos_control inject_device_unavailable(motorctl0, ms). */
function dropOut(rt: Kernel, ms: number): Promise<unknown> {
  return manualCall(rt, "sim0", "chaos_control", 1, {
    device_id: { type: "string", string: "motorctl0" },
    duration_ms: i(ms),
  });
}

async function withRuntime(fn: (rt: Kernel) => Promise<void>): Promise<void> {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("hold.xml", HOLD_MOTOR);
    // OVERRIDE: the test injects the drop-out with a manual chaos call while in AUTO.
    const rt = await startRuntime(automationConfig(tree, { manualGatingPolicy: "OVERRIDE" }));
    try {
      await fn(rt);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
}

Deno.test("Device drop-out: AUTO is refused while a device the tree names does not answer its reads", async () => {
  await withRuntime(async (rt) => {
    await rt.modes.request("MANUAL");
    await dropOut(rt, 60_000);
    // The first failed read makes it failing; AUTO is refused from then on, bound or not.
    await waitFor(
      "motorctl0 read fails",
      () => rt.cache.device("sim0", "motorctl0")?.available === false,
    );
    await assert.rejects(rt.modes.request("AUTO"), (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.match(e.message, /refusing AUTO: .*sim0\/motorctl0 \(its reads fail\)/);
      return true;
    });
    assert.equal(rt.modes.current(), "MANUAL");
    // Past the bound it is down: still refused, and automation status says why nothing runs.
    await waitFor(
      "motorctl0 down (past the bound)",
      () => rt.outages.condition("sim0", "motorctl0").kind === "down",
      deviceDownAfterMs(rt.config.polling.intervalMs) + 10_000,
    );
    await assert.rejects(rt.modes.request("AUTO"), /sim0\/motorctl0 \(its reads fail\)/);
    const status = rt.automation!.status();
    assert.equal(status.not_running?.cause, "mode");
    assert.deepEqual(status.blocked_devices.map((b) => b.device_handle), ["sim0/motorctl0"]);
    assert.match(status.blocked_devices[0]!.reason, /its reads fail/);
    assert.match(status.why_not_running ?? "", /mode is MANUAL/);
    assert.match(status.why_not_running ?? "", /sim0\/motorctl0 is down/);
  });
});

Deno.test("Device drop-out in AUTO engages the device-loss latch: FAULT, tree halted, event and audit entry naming the device, no re-command after it returns", async () => {
  await withRuntime(async (rt) => {
    const rec = recordEvents(rt);
    try {
      await rt.modes.request("MANUAL");
      await rt.modes.request("AUTO");
      await waitFor("tree runs motor 1", () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.5);
      // Out for 1.5 s: it must not come back to be commanded by the tree.
      await dropOut(rt, 1500);
      await waitFor("FAULT", () => rt.modes.current() === "FAULT", 5000);
      const latched = eventsOf(rec.events, "device_loss_latch").find((e) =>
        e.latched && e.device_id === "motorctl0"
      );
      assert.ok(latched, "a device_loss_latch event names motorctl0");
      assert.match(latched.reason, /its reads fail/);
      const mode = eventsOf(rec.events, "mode_change").find((e) => e.new_mode === "FAULT");
      assert.ok(mode);
      const audit = (await rt.audit.query({ limit: 100 })).entries.find((e) =>
        e.action === "mode" && e.origin.kind === "device_loss"
      );
      assert.ok(audit, "the forced FAULT is on the audit trail with origin device_loss");
      assert.equal(audit.origin.device_handle, "sim0/motorctl0");
      const status = rt.automation!.status();
      assert.equal(status.not_running?.cause, "device_loss_latch");
      assert.deepEqual(status.device_loss_latched, ["sim0/motorctl0"]);
      // Nothing commands it when it returns: no automated call is decided after the FAULT.
      const faultAt = mode.timestamp_ms;
      await waitFor(
        "motorctl0 answers again",
        () => rt.cache.device("sim0", "motorctl0")?.available === true,
        5000,
      );
      // Three polls of the device it answers: the window in which a re-command would show.
      await afterPolls(rt, "sim0/motorctl0", 3, "three polls of motorctl0 back");
      const automated = (await rt.audit.query({ limit: 1000 })).entries.filter((e) =>
        e.origin.kind === "automation" && e.last_time_epoch_ms > faultAt
      );
      assert.deepEqual(automated, [], "no automated call after the device-loss FAULT");
      assert.equal(rt.modes.current(), "FAULT");
      // The operator re-arms: the tree runs it again.
      await rt.modes.request("MANUAL");
      await rt.modes.request("AUTO");
      await waitFor(
        "re-armed tree runs motor 1",
        () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.5,
      );
    } finally {
      rec.stop();
    }
  });
});
