/**
 * The Automation view's why line (console/automation.js automationWhy), under Deno: every
 * `execution_reason` of the extended GET /v0/automation/status (issue 40 item 2), today's answer
 * without those fields, and a reason the console does not know.
 */
import assert from "node:assert/strict";
import { automationWhy } from "../../console/automation.js";

const timeOf = (ms: number) => `t${ms}`;
/** Today's answer in AUTO, as the runtime writes it (no reason while running). */
const today = {
  execution_status: "running",
  last_error: null,
  device_loss_latched: [],
  device_outages: [],
};
const why = (s: Record<string, unknown>, mode?: string) =>
  automationWhy({ ...today, ...s }, { mode, timeOf });

Deno.test("automationWhy reads each reason of the extended answer", () => {
  assert.deepEqual(why({ execution_reason: "running", mode: "AUTO" }), {
    kind: "running",
    text: "Running",
  });
  assert.deepEqual(why({ execution_reason: "gated_by_mode", mode: "MANUAL" }, "AUTO"), {
    kind: "stopped",
    text: "Not running: mode is MANUAL (enter AUTO to run)",
  });
  assert.deepEqual(
    why({
      execution_reason: "blocked_by_device_outage",
      mode: "AUTO",
      blocked_devices: [
        { device_handle: "sim0/motorctl0", reason: "device unavailable", since_epoch_ms: 5 },
        { device_handle: "sim0/tempctl0", reason: "", since_epoch_ms: null },
      ],
    }),
    {
      kind: "blocked",
      text: "Blocked: sim0/motorctl0 is down (device unavailable since t5); sim0/tempctl0 is down",
    },
  );
  assert.equal(
    why({ execution_reason: "blocked_by_device_outage", blocked_devices: [] }).text,
    "Blocked: a device the tree needs is down",
  );
  assert.deepEqual(
    why({ execution_reason: "device_loss_latched", device_loss_latched: ["sim0/a", "sim0/b"] }),
    {
      kind: "latched",
      text: "Latched: device-loss latch on sim0/a, sim0/b — re-arm by entering AUTO",
    },
  );
  assert.equal(why({ execution_reason: "stopped" }).text, "Not running: automation is stopped");
  assert.equal(
    why({ execution_reason: "no_definition" }).text,
    "Not running: no behavior tree is loaded",
  );
  assert.deepEqual(why({ execution_reason: "fault", last_error: "boom" }), {
    kind: "fault",
    text: "Fault: boom",
  });
  assert.equal(why({ execution_reason: "fault" }).text, "Fault: the tree stopped on an error");
});

Deno.test("automationWhy reads today's answer from execution_status and its reasons", () => {
  // Not in AUTO: the mode comes from the runtime status when the answer has none.
  assert.equal(
    why({ execution_reason: "mode_gate" }, "IDLE").text,
    "Not running: mode is IDLE (enter AUTO to run)",
  );
  assert.equal(
    why({ execution_reason: "mode_gate" }).text,
    "Not running: the mode is not AUTO (enter AUTO to run)",
  );
  // In AUTO the reason is absent (the page used to show "running (undefined)").
  assert.deepEqual(why({}), { kind: "running", text: "Running" });
  assert.equal(
    why({ device_loss_latched: ["sim0/motorctl0"] }).text,
    "Latched: device-loss latch on sim0/motorctl0 — re-arm by entering AUTO",
  );
  // A tick that threw forced FAULT: failed / mode_gate.
  assert.equal(
    why({ execution_status: "failed", execution_reason: "mode_gate", last_error: "x" }, "FAULT")
      .text,
    "Fault: x",
  );
  assert.equal(
    why({ execution_status: "failed", execution_reason: "terminal_failure" }).kind,
    "fault",
  );
  assert.deepEqual(
    why({
      execution_status: "blocked",
      execution_reason: "waiting",
      device_outages: [{
        device_handle: "sim0/motorctl0",
        consecutive_failures: 3,
        last_error: "refused",
        since_epoch_ms: 7,
      }],
    }),
    {
      kind: "blocked",
      text: "Blocked: the tree fails tick after tick; calls to sim0/motorctl0 fail (3 in a row " +
        "since t7)",
    },
  );
  assert.deepEqual(why({ execution_status: "idle", execution_reason: "no_definition" }), {
    kind: "stopped",
    text: "Not running: no behavior tree is loaded",
  });
  assert.equal(why({ execution_status: "idle", execution_reason: "stopped" }).kind, "stopped");
});

Deno.test("automationWhy shows a reason it does not know as the runtime words it", () => {
  assert.deepEqual(why({ execution_status: "idle", execution_reason: "warming_up" }), {
    kind: "unknown",
    text: "idle: warming_up",
  });
  assert.deepEqual(why({ execution_status: "paused" }), { kind: "unknown", text: "paused" });
});
