/**
 * A reset does not cut a stop short: while the e-stop's safe-state calls (and the hooks into FAULT
 * after them) still run, re-arming is refused even once the latch is released, so none of the
 * stop's calls lands after an operator's first command. The simulated provider's motor controller
 * answers slowly (chaos_control inject_call_latency): the zero rung's motor calls hold the stop
 * while its relay calls wait. Driven over HTTP on loopback.
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { waitFor } from "../helpers/kernel.ts";
import { inertSim } from "../safety/_fixture.ts";

/** Every call to sim0/motorctl0 takes this long (the zero rung makes two of them). */
const MOTOR_LATENCY_MS = 1500;

Deno.test("Estop refuses re-arming while its stop still runs, also after the latch is released", async () => {
  const fx = await startHttpFixture({
    config: { providers: [inertSim()], safety: { zeroIsSafe: true } },
  });
  try {
    const server = await fx.serve();
    const post = async (path: string, body?: unknown) => {
      const res = await fetch(`http://127.0.0.1:${server.port}${path}`, {
        method: "POST",
        ...(body === undefined
          ? {}
          : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
      });
      // deno-lint-ignore no-explicit-any
      return { status: res.status, json: await res.json() as any };
    };
    const relay3State = async () => {
      await fx.runtime.cache.pollDevice("sim0", "relayio0");
      return fx.runtime.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
    };
    const relay3 = (on: boolean) =>
      post("/v0/call", {
        provider_id: "sim0",
        device_id: "relayio0",
        function_id: 3,
        args: { enabled: { type: "bool", bool: on } },
      });

    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const slow = await post("/v0/call", {
      provider_id: "sim0",
      device_id: "chaos_control",
      function_id: 3, // inject_call_latency
      args: {
        device_id: { type: "string", string: "motorctl0" },
        latency_ms: { type: "int64", int64: MOTOR_LATENCY_MS },
      },
    });
    assert.equal(slow.status, 200, JSON.stringify(slow.json));
    assert.equal((await relay3(true)).status, 200);

    const stop = post("/v0/estop", { reason: "test" });
    await waitFor("the latch", () => fx.runtime.estop.latched);
    // The operator releases the latch and re-arms while the motor calls still hold the stop.
    assert.equal((await post("/v0/estop/clear")).status, 200);
    const rearm = await post("/v0/mode", { mode: "MANUAL" });
    const early = rearm.status === 200 ? await relay3(true) : null;

    const answer = await stop;
    assert.equal(answer.status, 200);
    assert.equal(
      rearm.status,
      409,
      `re-armed while the stop still ran (then relay 3 on: ${early?.status}; the stop's answer: ` +
        `fault_engaged ${answer.json.fault_engaged}, mode ${fx.runtime.modes.current()}, ` +
        `relay 3 ${JSON.stringify(await relay3State())})`,
    );
    assert.equal(rearm.json.status.code, "FAILED_PRECONDITION");
    assert.match(rearm.json.status.message, /still running/);
    assert.equal(answer.json.fault_engaged, true);
    assert.deepEqual(
      answer.json.actions.filter((a: { success: boolean }) => !a.success),
      [],
      "every call of the stop went through",
    );
    assert.equal(fx.runtime.modes.current(), "FAULT");

    // Once the stop has answered, re-arming works, and nothing of the stop lands after it.
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.equal((await relay3(true)).status, 200);
    assert.deepEqual(await relay3State(), { type: "bool", bool: true });
  } finally {
    await fx.close();
  }
});
