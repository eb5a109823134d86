/**
 * AUTO with the commanded device gone: entering AUTO is refused while a device the tree names is
 * down; a device lost while in AUTO is latched and forces FAULT -- automation may not command it
 * again when it returns -- until an operator re-arms and enters AUTO again.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import { afterPolls, recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider } from "../helpers/sim_config.ts";
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

Deno.test("AutomationEngine refuses AUTO while a named device is down and latches a device lost in AUTO", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("hold.xml", HOLD_MOTOR);
    const rt = await startRuntime(automationConfig(tree, {
      // OVERRIDE: the test crashes the provider with a manual chaos call while in AUTO.
      manualGatingPolicy: "OVERRIDE",
      config: {
        providers: [simProvider("sim0", {
          restart: { backoffMs: [1000, 1000, 1000], successResetMs: 200 },
        })],
      },
    }));
    const rec = recordEvents(rt);
    const crash = () => manualCall(rt, "sim0", "chaos_control", 6, { exit_code: i(9) });
    const host = rt.registry.host("sim0")!;
    try {
      // 1. Provider down: entering AUTO is refused, naming the device.
      await rt.modes.request("MANUAL");
      await crash();
      await waitFor("sim0 down", () => !host.available);
      await assert.rejects(rt.modes.request("AUTO"), (e: RuntimeError) => {
        assert.equal(e.code, "FAILED_PRECONDITION");
        assert.match(e.message, /refusing AUTO: .*sim0\/motorctl0 \(provider sim0 is unavailable/);
        return true;
      });
      assert.equal(rt.modes.current(), "MANUAL");

      // 2. Back: AUTO is accepted (entering AUTO releases the latch the loss set).
      await waitFor("sim0 back", () => host.available, 10000);
      await waitFor("motorctl0 polled", () => rt.cache.device("sim0", "motorctl0")?.available);
      await rt.modes.request("AUTO");
      assert.deepEqual(rt.automation!.status().device_loss_latched, []);
      await waitFor("tree runs motor 1", () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.5);

      // 3. Lost while in AUTO: latched, and FAULT is forced (the tree depends on it); when it
      // returns nothing commands it.
      await crash();
      await waitFor("sim0 down again", () => !host.available);
      await waitFor("FAULT", () => rt.modes.current() === "FAULT");
      const status = rt.automation!.status();
      assert.ok(status.device_loss_latched.includes("sim0/motorctl0"));
      assert.equal(status.not_running?.cause, "device_loss_latch");
      assert.match(status.why_not_running ?? "", /sim0\/motorctl0 was lost \(provider sim0 is/);
      const latched = eventsOf(rec.events, "device_loss_latch").filter((e) =>
        e.latched && e.device_id === "motorctl0"
      );
      assert.equal(latched.length, 2, "one latch per loss");
      await waitFor("sim0 back again", () => host.available, 10000);
      await waitFor("fresh provider polled", () => rt.cache.device("sim0", "motorctl0")?.available);
      assert.equal(cached(rt, "sim0/motorctl0", "motor1_duty"), 0);
      // Three polls of the returned device: the window in which a restart would show.
      await afterPolls(rt, "sim0/motorctl0", 3, "three polls of the returned motorctl0");
      assert.equal(cached(rt, "sim0/motorctl0", "motor1_duty"), 0, "not restarted by itself");
      assert.equal(rt.modes.current(), "FAULT");

      // 4. An operator re-arms. Manual calls are exempt from the device-loss latch (still held
      // in MANUAL); entering AUTO releases it and the tree commands the motor again.
      await rt.modes.request("MANUAL");
      assert.ok(rt.automation!.status().device_loss_latched.includes("sim0/motorctl0"));
      await manualCall(rt, "sim0", "motorctl0", 10, {
        motor_index: i(2),
        duty: { type: "double", double: 0.1 },
      });
      await rt.modes.request("AUTO");
      assert.deepEqual(rt.automation!.status().device_loss_latched, []);
      await waitFor(
        "tree runs motor 1 again",
        () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.5,
      );
      assert.ok(
        eventsOf(rec.events, "device_loss_latch").some((e) =>
          !e.latched && e.device_id === "motorctl0"
        ),
      );
    } finally {
      rec.stop();
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

/** Commands sim1's motor 1 through a handle the tree computes (no literal device_handle). */
const COMPUTED_HANDLE = treeXml(
  `<Sequence name="run_sim1">
      <Script code="dev := 'sim1/motorctl0'" />
      <CallDevice name="run" device_handle="{dev}" function_name="set_motor_duty"
                  args='json:{"motor_index": 1, "duty": 0.5}' />
      <Sleep msec="60000" />
    </Sequence>`,
);

Deno.test("AutomationEngine: AUTO entered while a latched device is still down keeps it latched; its return does not restart it", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("computed.xml", COMPUTED_HANDLE);
    const rt = await startRuntime(automationConfig(tree, {
      config: {
        providers: [
          simProvider("sim0"),
          simProvider("sim1", { restart: { backoffMs: [1500], successResetMs: 200 } }),
        ],
      },
    }));
    const host = rt.registry.host("sim1")!;
    try {
      await rt.modes.request("MANUAL");
      await manualCall(rt, "sim1", "chaos_control", 6, { exit_code: i(9) });
      await waitFor("sim1 down", () => !host.available);
      await waitFor(
        "sim1/motorctl0 latched",
        () => rt.automation!.status().device_loss_latched.includes("sim1/motorctl0"),
      );
      // The tree names no device of sim1 literally: the AUTO gate cannot judge it.
      assert.equal(await rt.modes.request("AUTO"), "AUTO");
      assert.equal(host.available, false, "AUTO was entered while sim1 was still down");
      await waitFor("sim1 back", () => host.available, 10000);
      await waitFor("motorctl0 polled", () => rt.cache.device("sim1", "motorctl0")?.available);
      // Several ticks with sim1 back (20 Hz): five more counted, each one a chance to call it.
      const ticks = () => rt.automation!.status().engine_diagnostics.total_ticks;
      const from = ticks();
      await waitFor("five ticks with sim1 back", () => ticks() >= from + 5);
      await rt.cache.pollDevice("sim1", "motorctl0");
      assert.equal(
        cached(rt, "sim1/motorctl0", "motor1_duty"),
        0,
        "the tree restarted the motor of a device that returned after AUTO was entered",
      );
      assert.ok(rt.automation!.status().device_loss_latched.includes("sim1/motorctl0"));
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
