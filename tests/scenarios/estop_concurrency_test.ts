/**
 * 50 actuating calls in flight while the e-stop fires: none reaches the provider after the latch.
 * Each call is slowed to ~20 ms inside the provider, so most of them are still queued on the
 * provider lock when the latch engages; the gate re-check under the lock must refuse them.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { callFlood, d, i, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";

const CALLS = 50;

Deno.test("Estop lets no racing actuating call reach the provider after the latch", async () => {
  const rt = await startRuntime(testConfig({
    providers: [inertSim()],
    safety: { zeroIsSafe: true },
  }));
  try {
    await rt.modes.request("MANUAL");
    await rt.router.call({
      providerId: "sim0",
      deviceId: "chaos_control",
      functionName: "inject_call_latency",
      args: { device_id: { type: "string", string: "motorctl0" }, latency_ms: i(20) },
      origin: "manual",
    });

    let triggerResolved = false;
    const outcomes: Array<"ok-before" | "ok-after" | "refused" | string> = [];
    const calls = Array.from(
      { length: CALLS },
      (_, k) =>
        manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d((k + 1) / 100) }).then(
          () => outcomes.push(triggerResolved ? "ok-after" : "ok-before"),
          (e: RuntimeError) =>
            outcomes.push(e.code === "FAILED_PRECONDITION" ? "refused" : e.message),
        ),
    );
    await Promise.race(calls); // at least one call went through before the e-stop
    const result = await rt.estop.trigger("race");
    triggerResolved = true;
    await Promise.all(calls);

    const motor = result.actions.filter((a) => a.function === "set_motor_duty");
    assert.equal(motor.length, 2);
    assert.ok(motor.every((a) => a.success));
    assert.equal(outcomes.length, CALLS);
    assert.ok(outcomes.every((o) => o === "ok-before" || o === "refused"), outcomes.join(","));
    const ok = outcomes.filter((o) => o === "ok-before").length;
    assert.ok(ok >= 1 && ok < CALLS, `${ok} calls went through`);
    // The ladder's zero was the last write: no queued call landed after it.
    assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor1_duty"), 0);

    // A call issued after the latch cannot change the duty either.
    await assert.rejects(
      manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.9) }),
      { code: "FAILED_PRECONDITION" },
    );
    assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor1_duty"), 0);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop ladder gets through a provider whose call queue was full when it fired", async () => {
  const rt = await startRuntime(testConfig({
    providers: [inertSim()],
    safety: { zeroIsSafe: true },
  }));
  try {
    await rt.modes.request("MANUAL");
    await rt.router.call({
      providerId: "sim0",
      deviceId: "chaos_control",
      functionName: "inject_call_latency",
      args: { device_id: { type: "string", string: "motorctl0" }, latency_ms: i(20) },
      origin: "manual",
    });
    // One call on the wire, 64 queued (the bound), the rest refused as busy.
    const calls = callFlood(rt, "sim0", "motorctl0", 10, (k) => ({
      motor_index: i(2),
      duty: d((k + 1) / 100),
    }));
    const result = await rt.estop.trigger("flood");
    const codes = await calls;
    assert.ok(codes.includes("UNAVAILABLE"), "the queue was full");
    assert.ok(codes.every((c) => c === "ok" || c === "UNAVAILABLE" || c === "FAILED_PRECONDITION"));
    assert.ok(result.actions.every((a) => a.success), JSON.stringify(result.actions));
    assert.equal(await readSignal(rt, "sim0", "motorctl0", "motor2_duty"), 0);
  } finally {
    await rt.stop();
  }
});
