/**
 * The refuse-hookless AUTO gate is re-checked after a provider restart while in AUTO
 * (docs/automation.md, "Configuration"): a rediscovery that adds actuating functions with no hook
 * covering AUTO -> FAULT forces FAULT.
 */
import assert from "node:assert/strict";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { plantProvider } from "../safety/_fixture.ts";

Deno.test("ModeManager forces FAULT when a restarted provider brings actuating functions no hook covers", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mode_auto_gate_" });
  try {
    const rt = await startRuntime(testConfig({
      // The first process declares only its READ function; the restarted one adds two ACTUATE.
      providers: [plantProvider("plant", { growMarker: `${dir}/started`, restartBackoffMs: 50 })],
      automation: { enabled: true },
    }));
    const rec = recordEvents(rt);
    try {
      await rt.modes.request("MANUAL");
      assert.equal(rt.modes.autoGateProblem(), null, "nothing actuating yet");
      assert.equal(await rt.modes.request("AUTO"), "AUTO");
      const host = rt.registry.host("plant")!;
      const pid = host.session!.pid;
      Deno.kill(pid, "SIGKILL");
      await waitFor("restarted", () => host.available && host.session!.pid !== pid);
      await waitFor("FAULT", () => rt.modes.current() === "FAULT");
      assert.match(rt.modes.autoGateProblem() ?? "", /^refusing AUTO: 2 actuating function/);
      assert.deepEqual(
        rec.events.flatMap((e) =>
          e.kind === "mode_change" ? [`${e.previous_mode}->${e.new_mode}`] : []
        ),
        ["IDLE->MANUAL", "MANUAL->AUTO", "AUTO->FAULT"],
      );
    } finally {
      rec.stop();
      await rt.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
