/**
 * A reset permits, it never starts: while the e-stop latch holds, arming (MANUAL, AUTO) is
 * refused with 409 naming the latch; releasing the latch leaves the machine in FAULT, and the
 * tree does not actuate until an operator re-arms deliberately. Driven over HTTP.
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { afterPolls, waitFor } from "../helpers/kernel.ts";
import { automationOptions, cached, MOTOR_THEN_SLEEP, TreeDir } from "./automation_helpers.ts";

Deno.test("POST /v0/mode is refused while the e-stop is latched and a clear re-arms nothing", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("motor.xml", MOTOR_THEN_SLEEP);
    const fx = await startHttpFixture({
      config: automationOptions(tree, { config: { safety: { zeroIsSafe: true } } }),
    });
    try {
      const post = (path: string, body?: unknown) => fx.request("POST", path, { body });
      assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
      assert.equal((await post("/v0/mode", { mode: "AUTO" })).status, 200);
      await waitFor(
        "tree started motor 1",
        () => cached(fx.runtime, "sim0/motorctl0", "motor1_duty") === 0.5,
      );

      const stop = await post("/v0/estop");
      assert.equal(stop.status, 200, stop.text);
      // A stop action ends with its call's answer; the device's post-call poll follows
      // (e5b9bd44), so the cache shows the effect once that poll is in.
      await waitFor(
        "the ladder call's effect in the cache",
        () => cached(fx.runtime, "sim0/motorctl0", "motor1_duty") === 0,
      );
      assert.equal(cached(fx.runtime, "sim0/motorctl0", "motor1_duty"), 0);

      for (const mode of ["MANUAL", "AUTO"]) {
        const r = await post("/v0/mode", { mode });
        assert.equal(r.status, 409, `${mode}: ${r.text}`);
        assert.equal(r.json.status.code, "FAILED_PRECONDITION");
        assert.match(r.json.status.message, /E-stop latched/);
      }
      assert.equal((await fx.request("GET", "/v0/mode")).json.mode, "FAULT");

      // Released, but nothing re-armed: FAULT, no tick, the motor stays at 0 across polls --
      // three polls of the motor's device after the release prove the window has passed.
      const ticks = fx.runtime.automation!.status().engine_diagnostics.total_ticks;
      const polls = afterPolls(fx.runtime, "sim0/motorctl0", 3, "three polls after the release");
      const clear = await post("/v0/estop/clear");
      assert.equal(clear.status, 200);
      await polls;
      assert.equal((await fx.request("GET", "/v0/mode")).json.mode, "FAULT");
      assert.equal(fx.runtime.automation!.status().engine_diagnostics.total_ticks, ticks);
      assert.equal(cached(fx.runtime, "sim0/motorctl0", "motor1_duty"), 0);

      // A deliberate re-arm is accepted.
      assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
      assert.equal((await post("/v0/mode", { mode: "AUTO" })).status, 200);
      await waitFor(
        "motor restarted by the re-armed tree",
        () => cached(fx.runtime, "sim0/motorctl0", "motor1_duty") === 0.5,
      );
    } finally {
      await fx.close();
    }
  } finally {
    await dir.dispose();
  }
});
