/**
 * The call router writes one DEBUG line before it sends a call. On the e-stop's path (its ladder,
 * the hooks into FAULT: calls of origin safety) a logger that throws there held the call back:
 * the call failed with the logger's error and was never sent. No failing log line may hold an
 * action back (docs/safety.md). Real: the kernel with the simulated provider as a child process,
 * logging at DEBUG through a logger whose call lines throw; the e-stop's hooks rung.
 */
import assert from "node:assert/strict";
import { LineLogger } from "../../src/host/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { b, call, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";

Deno.test("CallRouter sends the e-stop's ladder calls when its DEBUG line before the send throws", async () => {
  const broken = { on: false, thrown: 0 };
  const log = new LineLogger({
    level: "debug",
    journald: false,
    now: () => 0,
    write: (line) => {
      if (broken.on && line.startsWith("DEBUG") && / safety call /.test(line)) {
        broken.thrown++;
        throw new Error("log sink failed");
      }
    },
  });
  const rt = await startRuntime(
    testConfig({
      providers: [inertSim()],
      safety: { hooks: [call("sim0/relayio0", "set_relay_ch2", { enabled: false })] },
    }),
    { host: { log } },
  );
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "relayio0", 2, { enabled: b(true) });
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch2_state"), true);
    broken.on = true;
    const result = await rt.estop.trigger("test");
    assert.equal(broken.thrown, 1, "the ladder call's DEBUG line threw");
    assert.deepEqual(result.actions, [
      { device_handle: "sim0/relayio0", function: "set_relay_ch2", success: true },
    ]);
    assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch2_state"), false);
  } finally {
    broken.on = false;
    await rt.stop();
  }
});
