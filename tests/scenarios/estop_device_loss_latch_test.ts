/**
 * The device-loss latch and the e-stop together (docs/safety.md §5): a device the tree names that
 * drops out while the e-stop is latched is latched too (every device that goes down, in any mode),
 * and its return while the e-stop holds does not release it; nor do the e-stop's clear and the
 * re-arm to MANUAL: the tree's call to it is refused naming the loss. Entering AUTO releases it, and
 * the tree commands it again. The simulated provider as a child process; the drop-out is its
 * `inject_device_unavailable` (the provider stays up).
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import {
  automationConfig,
  cached,
  enterAuto,
  MOTOR_THEN_SLEEP,
  TreeDir,
  tv,
} from "./automation_helpers.ts";

/** How long motorctl0 stops answering (reads and calls fail; sim0 stays up). */
const OUT_MS = 2500;

Deno.test("A device lost while the e-stop is latched stays device-loss latched through its return, the clear and the re-arm; entering AUTO releases it", async () => {
  const dir = await TreeDir.create();
  const tree = await dir.write("motor.xml", MOTOR_THEN_SLEEP);
  const rt = await startRuntime(automationConfig(tree));
  const latched = () => rt.automation!.status().device_loss_latched;
  try {
    await enterAuto(rt);
    await waitFor("tree runs motor 1", () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.5);
    await rt.estop.trigger("operator stop");
    assert.equal(rt.modes.current(), "FAULT");
    assert.deepEqual(latched(), []);

    // The drop-out, injected while latched (a test's fault injection, made as a stop action so
    // the latch lets it through).
    await rt.router.call({
      providerId: "sim0",
      deviceId: "chaos_control",
      functionName: "inject_device_unavailable",
      args: { device_id: tv.s("motorctl0"), duration_ms: tv.i(OUT_MS) },
      origin: "safety",
    });
    await waitFor("motorctl0 latched", () => latched().includes("sim0/motorctl0"));
    assert.equal(rt.estop.status().latched, true);
    await waitFor("motorctl0 back", () => rt.outages.condition("sim0", "motorctl0").kind === "up");
    assert.deepEqual(latched(), ["sim0/motorctl0"], "its return releases nothing");

    rt.estop.clear();
    // Its return makes the hooks into FAULT again (the device is back while FAULT stands): the
    // re-arm is refused until they have finished, as docs/safety.md says.
    await waitFor(
      "re-armed to MANUAL once the hooks made again at its return finished",
      () =>
        rt.modes.request("MANUAL").then(() => true, (err: unknown) => {
          if (/FAULT hooks are still running/.test(String(err))) return false;
          throw err;
        }),
    );
    assert.deepEqual(latched(), ["sim0/motorctl0"], "neither the clear nor the re-arm releases it");
    const refused = await rt.automation!.services.callDevice(
      "sim0/motorctl0",
      "set_motor_duty",
      { motor_index: tv.i(1), duty: tv.d(0.9) },
      new AbortController().signal,
    ).then(() => null, (err: unknown) => err as Error);
    assert.match(String(refused?.message), /^Device-loss latch: sim0\/motorctl0 was lost /);
    assert.notEqual(cached(rt, "sim0/motorctl0", "motor1_duty"), 0.9);

    await rt.modes.request("AUTO");
    assert.deepEqual(latched(), [], "entering AUTO releases it");
    await waitFor(
      "tree runs motor 1 again",
      () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.5,
    );
  } finally {
    await rt.stop();
    await dir.dispose();
  }
});
