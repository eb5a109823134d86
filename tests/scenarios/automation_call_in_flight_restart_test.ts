/**
 * A provider that crashes and is restarted by its supervisor while the behavior tree, in AUTO,
 * has a call in flight to one of its devices (docs/safety.md section 5: a device the tree commands
 * -- a call sent to it -- going down forces FAULT at once; nothing is re-commanded when it
 * returns). The tree names the device through a blackboard entry only, so the call in flight is
 * what makes the tree depend on it. The simulated provider runs as a child process; its
 * `inject_call_latency` holds the call in flight.
 */
import assert from "node:assert/strict";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { i, manualCall } from "../safety/_fixture.ts";
import { automationConfig, eventsOf, TreeDir, treeXml } from "./automation_helpers.ts";

const CALL_BY_ENTRY = treeXml(
  `<Sequence name="run">
      <SetBlackboard value="sim0/motorctl0" output_key="dev" />
      <CallDevice name="slow_call" device_handle="{dev}" function_name="set_motor_duty"
                  args='json:{"motor_index": 1, "duty": 0.5}' />
      <Sleep msec="60000" />
    </Sequence>`,
);

Deno.test("A provider restarted while the tree's call to its device is in flight forces FAULT, and the device is not commanded again when it returns", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("call.xml", CALL_BY_ENTRY);
    const rt = await startRuntime(automationConfig(tree, {
      // OVERRIDE: the test injects the latency and the crash with manual calls.
      manualGatingPolicy: "OVERRIDE",
      config: { providers: [simProvider("sim0", { restart: { backoffMs: [300, 300, 300] } })] },
    }));
    const rec = recordEvents(rt);
    const host = rt.registry.host("sim0")!;
    try {
      await rt.modes.request("MANUAL");
      // chaos_control inject_call_latency: every call to motorctl0 waits 3 s at the provider.
      await manualCall(rt, "sim0", "chaos_control", 3, {
        device_id: { type: "string", string: "motorctl0" },
        latency_ms: i(3000),
      });
      await rt.modes.request("AUTO");
      await waitFor(
        "the tree's call in flight",
        () =>
          rt.automation!.status().engine_diagnostics.current_running_node ===
            "Main/Sequence[0]/CallDevice[1]",
      );
      const pid = host.session!.pid;
      Deno.kill(pid, "SIGKILL");
      await waitFor("FAULT", () => rt.modes.current() === "FAULT", 10000);
      const latches = eventsOf(rec.events, "device_loss_latch");
      assert.ok(
        latches.some((e) => e.provider_id === "sim0" && e.device_id === "motorctl0" && e.latched),
        JSON.stringify(latches),
      );
      await waitFor("sim0 restarted", () => host.available && host.session!.pid !== pid, 10000);
      assert.equal(rt.modes.current(), "FAULT", "nothing re-arms by itself");
      assert.ok(
        rt.automation!.status().device_loss_latched.includes("sim0/motorctl0"),
        "the device stays latched after it returns",
      );
    } finally {
      rec.stop();
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
