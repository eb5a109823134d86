/**
 * A configuration reload while the e-stop latch holds, for providers it does not restart (they stay
 * up): a reload that changes what their safe state is expected to read back has them read back
 * against the new expectations (status never says "verified" against values no longer required),
 * and one that adds ladder calls for them makes those calls. Real child processes (the inert
 * simulated provider), the e-stop and status over HTTP on loopback.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import type { EstopStatus } from "../../src/safety/mod.ts";
import { startServing } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, expectation, inertSim, readSignal } from "../safety/_fixture.ts";

async function post(rt: Kernel, path: string): Promise<unknown> {
  const res = await fetch(`http://127.0.0.1:${rt.http!.port}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: "{}",
  });
  assert.equal(res.status, 200, path);
  return await res.json();
}

async function estopStatus(rt: Kernel): Promise<EstopStatus> {
  const res = await fetch(`http://127.0.0.1:${rt.http!.port}/v0/runtime/status`);
  assert.equal(res.status, 200);
  return (await res.json()).estop;
}

const setpoint = (handle: string, value: number, i: number) =>
  call(handle, "set_setpoint", { value: { double: value } }, `safety.safe_state.hooks[${i}]`);

Deno.test("Estop reads providers a reload does not restart back against the expectations it puts in force while latched", async () => {
  const safety = (expected: number) => ({
    hooks: [setpoint("sim0/tempctl0", 10, 0)],
    expect: [expectation("sim0/tempctl0/setpoint", { equals: expected })],
    verifyTimeoutMs: 300,
  });
  const rt = await startServing(testConfig({ providers: [inertSim("sim0")], safety: safety(10) }));
  try {
    await post(rt, "/v0/estop");
    assert.equal((await estopStatus(rt)).verification?.outcome, "verified");
    // Only the expectation changes: sim0 stays up, its ladder calls stay the same.
    const report = await rt.reload({
      ...rt.config,
      safety: { ...rt.config.safety, safeState: { ...rt.config.safety.safeState, ...safety(20) } },
    });
    assert.ok(report.applied.includes("safety"), JSON.stringify(report));
    assert.deepEqual(report.providers.restarted, []);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 10);
    const shown = (await estopStatus(rt)).verification;
    assert.deepEqual(
      shown?.checks.map((c) => [c.expected, c.outcome]),
      [[{ equals: 20 }, "mismatch"]],
      "status shows sim0 read back against the expectation in force",
    );
    assert.notEqual(shown?.outcome, "verified");
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop makes the ladder calls a reload adds for a provider that is up while latched", async () => {
  const rt = await startServing(testConfig({
    providers: [inertSim("sim0"), inertSim("sim1")],
    safety: {
      hooks: [setpoint("sim0/tempctl0", 10, 0)],
      expect: [expectation("sim0/tempctl0/setpoint", { equals: 10 })],
      verifyTimeoutMs: 300,
    },
  }));
  try {
    await post(rt, "/v0/estop");
    assert.equal((await estopStatus(rt)).verification?.outcome, "verified");
    const before = await readSignal(rt, "sim1", "tempctl0", "setpoint");
    assert.notEqual(before, 20);
    // The reload adds a ladder call (and its expectation) for sim1, up and not restarted.
    const report = await rt.reload({
      ...rt.config,
      safety: {
        ...rt.config.safety,
        safeState: {
          ...rt.config.safety.safeState,
          hooks: [setpoint("sim0/tempctl0", 10, 0), setpoint("sim1/tempctl0", 20, 1)],
          expect: [
            expectation("sim0/tempctl0/setpoint", { equals: 10 }),
            expectation("sim1/tempctl0/setpoint", { equals: 20 }, 1),
          ],
        },
      },
    });
    assert.ok(report.applied.includes("safety"), JSON.stringify(report));
    assert.deepEqual(report.providers.restarted, []);
    assert.equal(
      await readSignal(rt, "sim1", "tempctl0", "setpoint"),
      20,
      "sim1 is brought to the safe state of the ladder in force",
    );
    const shown = (await estopStatus(rt)).verification;
    assert.deepEqual(shown?.checks.map((c) => [c.signal, c.outcome]), [
      ["sim0/tempctl0/setpoint", "verified"],
      ["sim1/tempctl0/setpoint", "verified"],
    ]);
    assert.equal(shown?.outcome, "verified");
  } finally {
    await rt.stop();
  }
});
