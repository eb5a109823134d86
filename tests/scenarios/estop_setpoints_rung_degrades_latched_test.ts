/**
 * The ladder's rung 2 (`setpoints`) applies only while the setpoints cover every actuating
 * function (docs/safety.md "The ladder"; the product spec's e-stop table: "2 setpoints, only if
 * they cover every actuating output"). A provider that comes back while the latch holds declaring
 * an actuating function no setpoint covers turns the plan to the next rung (`zero` here): the
 * provider that came back is secured with that rung, and what the stop's setpoints did on the
 * other providers stands -- nothing of theirs is made again or undone. Real child processes
 * (tests/safety/_plant_provider.ts, `--grow-marker`).
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, d, manualCall, plantProvider, readSignal } from "../safety/_fixture.ts";

Deno.test("Estop: a provider back while latched with an uncovered actuating function is secured by the next rung, and the others keep their setpoints", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop-setpoints-degrade-" });
  const rt = await startRuntime(testConfig({
    providers: [
      plantProvider("a"),
      plantProvider("g", { growMarker: `${dir}/started`, restartBackoffMs: 50 }),
    ],
    safety: {
      // 0.25, not 0: a fan zeroed by rung 3 would read 0.
      setpoints: [
        call("a/plant0", "set_heater", { enabled: false }),
        call("a/plant0", "set_fan", { duty: { double: 0.25 } }),
      ],
      zeroIsSafe: true,
    },
  }));
  try {
    // g's first process declares only its READ function: the setpoints cover everything.
    assert.equal(rt.estop.status().software_safe_state, "setpoints");
    await rt.modes.request("MANUAL");
    await manualCall(rt, "a", "plant0", 2, { duty: d(0.8) });
    assert.equal(await readSignal(rt, "a", "plant0", "fan_duty"), 0.8);

    const stop = await rt.estop.trigger("setpoints");
    assert.equal(stop.software_safe_state, "setpoints");
    assert.deepEqual(stop.actions.map((x) => x.success), [true, true]);
    assert.equal(await readSignal(rt, "a", "plant0", "fan_duty"), 0.25);
    const latchedAt = Date.now();

    const g = rt.registry.host("g")!;
    const pid = g.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("g restarted", () => g.available && g.session!.pid !== pid, 20_000);
    const status = rt.estop.status();
    assert.equal(status.software_safe_state, "zero");
    assert.deepEqual(
      status.plan!.uncovered,
      [],
      "rung 3 zeroes every function of both (bool and 0..1 double)",
    );
    // g is secured with rung 3: its fan and heater set to zero after the latch.
    await waitFor("g secured", async () => {
      const t = await readSignal(rt, "g", "plant0", "last_call_ms");
      return typeof t === "number" && t >= latchedAt ? t : undefined;
    }, 20_000);
    assert.equal(await readSignal(rt, "g", "plant0", "fan_duty"), 0);
    assert.equal(await readSignal(rt, "g", "plant0", "heater_on"), false);
    // a keeps the stop's setpoint: not zeroed by the new rung, no call made to it since.
    assert.equal(await readSignal(rt, "a", "plant0", "fan_duty"), 0.25);
    const aLast = await readSignal(rt, "a", "plant0", "last_call_ms");
    assert.ok(typeof aLast === "number" && aLast < latchedAt, `a called at ${aLast}`);
    assert.equal(rt.estop.status().latched, true);
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
