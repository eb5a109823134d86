/**
 * The Automation view's why line (console/automation.js automationWhy), under Deno: the runtime's
 * own why (GET /v0/automation/status `not_running`, `why_not_running`, `blocked_devices`), an older
 * runtime's answer without those fields, and a reason the console does not know.
 */
import assert from "node:assert/strict";
import { automationWhy, latchedProvidersText } from "../../console/automation.js";

const timeOf = (ms: number) => `t${ms}`;
/** Today's answer in AUTO, as the runtime writes it (no reason while running). */
const today = {
  execution_status: "running",
  last_error: null,
  device_loss_latched: [],
  device_outages: [],
};
const why = (s: Record<string, unknown>, mode?: string) =>
  automationWhy({ ...today, ...s }, { ...(mode === undefined ? {} : { mode }), timeOf });

Deno.test("automationWhy shows the runtime's own why: not_running, why_not_running, blocked_devices", () => {
  // The runtime's answer always carries not_running (null while the tree runs in AUTO).
  assert.deepEqual(why({ mode: "AUTO", not_running: null, why_not_running: null }), {
    kind: "running",
    text: "Running",
  });
  const mode = {
    mode: "MANUAL",
    not_running: { cause: "mode", mode: "MANUAL" },
    why_not_running: "mode is MANUAL: the tree ticks only in AUTO",
    blocked_devices: [],
  };
  assert.deepEqual(why(mode), {
    kind: "stopped",
    text: "Not running: mode is MANUAL: the tree ticks only in AUTO",
  });
  // A device the tree names is down: AUTO would be refused, the line says so.
  const blocked = {
    ...mode,
    why_not_running: "mode is MANUAL: the tree ticks only in AUTO; AUTO is refused while " +
      "sim0/motorctl0 is down (its reads fail)",
    blocked_devices: [{
      device_handle: "sim0/motorctl0",
      condition: "down",
      reason: "its reads fail",
      since_epoch_ms: 5,
    }],
  };
  assert.deepEqual(why(blocked), {
    kind: "blocked",
    text: `Blocked: ${blocked.why_not_running}`,
  });
  assert.deepEqual(
    why({
      mode: "FAULT",
      not_running: { cause: "device_loss_latch", mode: "FAULT" },
      why_not_running: "device-loss latch: sim0/motorctl0 was lost (its reads fail); mode FAULT: " +
        "re-arm deliberately (FAULT -> MANUAL -> AUTO)",
      device_loss_latched: ["sim0/motorctl0"],
    }).kind,
    "latched",
  );
  assert.equal(
    why({ not_running: { cause: "automation_fault", mode: "FAULT" }, why_not_running: "x" }).text,
    "Fault: x",
  );
  assert.equal(why({ not_running: { cause: "stalled", mode: "AUTO" } }).kind, "blocked");
  assert.deepEqual(why({ not_running: { cause: "future_cause", mode: "AUTO" } }), {
    kind: "unknown",
    text: "Not running: future_cause",
  });
});

Deno.test("automationWhy shows a tree whose calls are refused as blocked, not running (refused_calls)", () => {
  // In AUTO, ticking, but every call to the device is refused by an interlock: nothing moves.
  const refused = {
    mode: "AUTO",
    not_running: null,
    why_not_running: null,
    blocked_devices: [],
    last_error: "calls refused: sim0/motorctl0 by interlock probe_guard (3 in a row)",
    refused_calls: [{
      device_handle: "sim0/motorctl0",
      consecutive_refusals: 3,
      refused_by: "interlock probe_guard",
      last_refusal: "Interlock probe_guard holds",
      since_epoch_ms: 9,
    }],
  };
  assert.deepEqual(why(refused), {
    kind: "blocked",
    text: "Blocked: calls to sim0/motorctl0 are refused by interlock probe_guard (3 in a row " +
      "since t9)",
  });
  // A runtime that counts per function names it: two refused functions of one device are two.
  assert.deepEqual(
    why({
      ...refused,
      refused_calls: [
        { ...refused.refused_calls[0], function: "set_motor_duty" },
        { ...refused.refused_calls[0], function: "set_speed", consecutive_refusals: 1 },
      ],
    }),
    {
      kind: "blocked",
      text:
        "Blocked: calls to sim0/motorctl0 set_motor_duty are refused by interlock probe_guard " +
        "(3 in a row since t9); calls to sim0/motorctl0 set_speed are refused by interlock " +
        "probe_guard (1 in a row since t9)",
    },
  );
  assert.deepEqual(why({ ...refused, refused_calls: [] }), { kind: "running", text: "Running" });
  // Out of AUTO the mode is why: the last session's refusals do not block a tree not ticking.
  assert.equal(
    why({
      ...refused,
      mode: "MANUAL",
      not_running: { cause: "mode", mode: "MANUAL" },
      why_not_running: "mode is MANUAL: the tree ticks only in AUTO",
    }).kind,
    "stopped",
  );
});

Deno.test("automationWhy reads an older runtime's answer from execution_status and its reasons", () => {
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

Deno.test("latchedProvidersText shows each provider-wide latch entry in words, with its exempt devices", () => {
  assert.equal(latchedProvidersText([], timeOf), "none");
  const entry = {
    provider_id: "sim0",
    losses: 10,
    since_epoch_ms: 5,
    last_device_handle: "sim0/dev73",
    last_reason: "provider sim0 is unavailable (RESTARTING)",
    exempt_devices: 0,
  };
  assert.equal(
    latchedProvidersText([entry, { ...entry, provider_id: "sim1", exempt_devices: 3 }], timeOf),
    "sim0: 10 more lost device(s) held as one entry since t5, the latest sim0/dev73 (provider " +
      "sim0 is unavailable (RESTARTING)); automated calls to every device of sim0 are refused; " +
      "sim1: 10 more lost device(s) held as one entry since t5, the latest sim0/dev73 (provider " +
      "sim0 is unavailable (RESTARTING)); automated calls to every device of sim1 but the 3 not " +
      "lost when it was made or AUTO was last entered are refused",
  );
  // A runtime that names them: the first three, and how many more.
  const ids = ["a", "b", "c", "d", "e"];
  assert.match(
    latchedProvidersText([{ ...entry, exempt_devices: 5, exempt_device_ids: ids }], timeOf),
    / of sim0 but the 5 not lost when it was made or AUTO was last entered \(sim0\/a, sim0\/b, sim0\/c and 2 more\) are refused$/,
  );
  assert.match(
    latchedProvidersText([{ ...entry, exempt_devices: 1, exempt_device_ids: ["a"] }], timeOf),
    / but the 1 not lost when it was made or AUTO was last entered \(sim0\/a\) are refused$/,
  );
});
