/**
 * A `verified` check of the e-stop status keeps what was read back at the time, but says whether
 * its device can be read now: after the stop, the provider of one checked device crashes (no
 * restart), and GET /v0/runtime/status shows that check still `verified` with
 * `device_available: false` and why, while the check of the device still up says
 * `device_available: true`. Real child processes (the simulated provider, twice) and real HTTP on
 * loopback.
 */
import assert from "node:assert/strict";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { twoSimsVerifiedStop } from "../safety/_fixture.ts";

interface StatusCheck {
  signal: string;
  outcome: string;
  device_available?: boolean;
  device_unavailable_reason?: string;
}

Deno.test("GET /v0/runtime/status marks a verified e-stop check whose provider crashed after the stop device_available false, keeping it verified", async () => {
  const rt = await startServing(testConfig(twoSimsVerifiedStop()));
  const base = `http://127.0.0.1:${rt.http!.port}`;
  const checks = async (): Promise<StatusCheck[]> => {
    const res = await fetch(`${base}/v0/runtime/status`);
    assert.equal(res.status, 200);
    const body = await res.json();
    return body.estop.verification.checks;
  };
  try {
    const res = await fetch(`${base}/v0/estop`, { method: "POST" });
    assert.equal(res.status, 200);
    const stop = await res.json();
    assert.equal(stop.verification.outcome, "verified");

    // Both read back and both devices readable now.
    assert.deepEqual(
      (await checks()).map((c) => [c.signal, c.outcome, c.device_available]),
      [
        ["sim0/motorctl0/motor1_duty", "verified", true],
        ["sim1/motorctl0/motor1_duty", "verified", true],
      ],
    );

    // sim1 crashes after the stop (restart disabled): nobody can read its device any more.
    const sim1 = rt.registry.host("sim1")!;
    Deno.kill(sim1.session!.pid, "SIGKILL");
    await waitFor("sim1 down", () => !sim1.available);

    const after = await checks();
    // What was read back at the time stands; the device's condition now is said beside it.
    assert.deepEqual(
      after.map((c) => [c.signal, c.outcome, c.device_available]),
      [
        ["sim0/motorctl0/motor1_duty", "verified", true],
        ["sim1/motorctl0/motor1_duty", "verified", false],
      ],
    );
    assert.equal(after[0]!.device_unavailable_reason, undefined);
    assert.match(
      after[1]!.device_unavailable_reason ?? "",
      /^down: provider sim1 is unavailable \(/,
    );
  } finally {
    await rt.stop();
  }
});
