/** A failing tree reports bt_error once and turns blocked; a throwing tree faults the runtime. */
import assert from "node:assert/strict";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import {
  automationConfig,
  cached,
  enterAuto,
  eventsOf,
  TreeDir,
  treeXml,
} from "./automation_helpers.ts";

Deno.test("AutomationEngine reports a FAILURE tick as one bt_error and turns blocked after 10 failures", async () => {
  const dir = await TreeDir.create();
  try {
    // A misspelt signal: CheckQuality fails on every tick.
    const tree = await dir.write(
      "failing.xml",
      treeXml(
        `<Sequence>
      <AlwaysSuccess />
      <CheckQuality device_handle="sim0/tempctl0" signal_id="tc9_temp" />
    </Sequence>`,
      ),
    );
    const rt = await startRuntime(automationConfig(tree));
    const rec = recordEvents(rt);
    try {
      await enterAuto(rt);
      const status = await waitFor("blocked", () => {
        const s = rt.automation!.status();
        return s.execution_status === "blocked" ? s : null;
      });
      assert.equal(status.execution_reason, "waiting");
      assert.equal(status.engine_diagnostics.stall_suspected, true);
      assert.ok(status.engine_diagnostics.ticks_since_progress > 10);
      assert.equal(status.engine_diagnostics.last_tick_status, "FAILURE");
      assert.equal(status.engine_diagnostics.error_count, 0);
      assert.equal(status.last_error, null);
      // Reported once (first FAILURE after progress), not once per tick.
      const errors = eventsOf(rec.events, "bt_error");
      assert.equal(errors.length, 1);
      assert.equal(errors[0]!.node, "Main/Sequence[0]/CheckQuality[1]");
      assert.equal(errors[0]!.error, "BT returned FAILURE");
      assert.deepEqual(eventsOf(rec.events, "automation_fault"), []);
      assert.equal(rt.modes.current(), "AUTO", "an ordinary FAILURE does not fault the runtime");
    } finally {
      rec.stop();
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("AutomationEngine turns a tick that throws into bt_error, automation_fault and FAULT", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "throwing.xml",
      treeXml(
        `<Sequence>
      <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty"
                  args='json:{"motor_index": 1, "duty": 0.5}' />
      <Script code="level := undefined_variable + 1; undefined_variable := 0" />
    </Sequence>`,
      ),
    );
    const rt = await startRuntime(automationConfig(tree));
    const rec = recordEvents(rt);
    try {
      await enterAuto(rt);
      await waitFor("FAULT", () => rt.modes.current() === "FAULT");
      const fault = eventsOf(rec.events, "automation_fault");
      assert.equal(fault.length, 1);
      assert.equal(fault[0]!.locus, "tick");
      assert.match(fault[0]!.error, /undefined_variable/);
      const errors = eventsOf(rec.events, "bt_error");
      assert.equal(errors.length, 1);
      assert.equal(errors[0]!.node, "Main/Sequence[0]/Script[1]");
      assert.equal(errors[0]!.error, fault[0]!.error);

      const status = rt.automation!.status();
      assert.equal(status.execution_status, "failed");
      assert.equal(status.engine_diagnostics.error_count, 1);
      assert.equal(status.engine_diagnostics.last_tick_status, "THROWN");
      assert.match(status.last_error ?? "", /undefined_variable.*Main\/Sequence\[0\]\/Script\[1\]/);
      assert.equal(rt.automation!.runner!.active, false);
      // The AUTO -> FAULT hook stopped the motor the tree had started.
      await waitFor(
        "motor stopped by the FAULT hook",
        () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0,
      );
    } finally {
      rec.stop();
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
