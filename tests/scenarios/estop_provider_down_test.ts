/** E-stop while one provider is down: its actions fail and are reported, the latch holds. */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";

Deno.test("Estop reports the actions of a down provider as failed and keeps the latch", async () => {
  const rt = await startRuntime(testConfig({
    providers: [
      inertSim("sim0"),
      // Exits on its own (code 42) two seconds after start and is not restarted.
      inertSim("sim1", { extraArgs: ["--crash-after", "2"], restart: false }),
    ],
    safety: { zeroIsSafe: true },
  }));
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) });
    await waitFor("sim1 down", () => !rt.registry.host("sim1")!.available);

    const result = await rt.estop.trigger();
    assert.equal(result.latched, true);
    assert.equal(result.software_safe_state, "zero");
    const sim0 = result.actions.filter((a) => a.device_handle.startsWith("sim0/"));
    const sim1 = result.actions.filter((a) => a.device_handle.startsWith("sim1/"));
    assert.equal(sim0.length, 10);
    assert.equal(sim1.length, 10, "the down provider's devices are still planned");
    assert.ok(sim0.every((a) => a.success && a.error === undefined));
    for (const a of sim1) {
      assert.equal(a.success, false);
      assert.match(a.error!, /^UNAVAILABLE: Provider unavailable: sim1/);
    }
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), false);
    assert.equal(rt.estop.status().latched, true);
    await assert.rejects(
      manualCall(rt, "sim0", "relayio0", 1, { enabled: b(true) }),
      { code: "FAILED_PRECONDITION" },
    );
  } finally {
    await rt.stop();
  }
});
