/**
 * A provider whose rediscovery, while the e-stop latch holds, declares actuating functions its
 * first process did not (tests/safety/_plant_provider.ts --grow-marker): the restarted process is
 * brought to the safe state with the plan for its inventory now, its new functions included, and
 * read back. Real child processes.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { expectation, plantProvider, readSignal } from "../safety/_fixture.ts";

Deno.test("Estop secures a provider that comes back while latched with actuating functions it did not declare before", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop-grows-" });
  const rt = await startRuntime(testConfig({
    providers: [plantProvider("plant", { growMarker: `${dir}/started`, restartBackoffMs: 50 })],
    safety: {
      zeroIsSafe: true,
      expect: [expectation("plant/plant0/fan_duty", { equals: 0 }, 0)],
      verifyTimeoutMs: 300,
    },
  }));
  try {
    const plant = rt.registry.host("plant")!;
    const stop = await rt.estop.trigger("before the inventory grows");
    assert.deepEqual(stop.actions, [], "the first process declares no actuating function");
    const latchedAt = Date.now();
    const pid = plant.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("plant restarted", () => plant.available && plant.session!.pid !== pid, 20_000);
    assert.ok(
      rt.registry.host("plant")!.devices[0]!.functions.some((f) => f.actuating),
      "the restarted process declares actuating functions",
    );
    // The ladder's calls for its inventory now reached the new process.
    const lastCall = await waitFor("a ladder call", async () => {
      const t = await readSignal(rt, "plant", "plant0", "last_call_ms");
      return typeof t === "number" && t >= latchedAt ? t : undefined;
    }, 20_000);
    assert.ok(lastCall >= latchedAt);
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), false);
    assert.equal(rt.estop.status().latched, true);
    await waitFor(
      "re-verified",
      () => rt.estop.status().verification?.checks[0]?.outcome === "verified",
      20_000,
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
