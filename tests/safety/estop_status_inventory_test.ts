/**
 * An e-stop built without the device-condition port (EstopOptions.devices), as an embedding that
 * wires only the inventory does: its status says whether each verification check's device can be
 * read now from the inventory alone. The kernel always wires the port, so only this construction
 * reaches that path. Real child processes (the simulated provider, twice): after a stop verified on
 * both, sim1 (no restart) is killed and its check shows `device_available: false` with the
 * inventory's reason, the other `device_available: true`. While a reload restarts sim1 (its new
 * process registered, not up; or not registered at all), the inventory's reason is said in the
 * device conditions' words, not "unavailable (DOWN)" nor "not configured".
 */
import assert from "node:assert/strict";
import { CallRouter } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { tempDir } from "../helpers/kernel.ts";
import { inertSim, twoSimsVerifiedStop } from "./_fixture.ts";

Deno.test("Estop without a device-condition port marks a check whose provider is down device_available false from the inventory", async () => {
  const setup = twoSimsVerifiedStop();
  await using r = await rig({ ...setup, programs: false, pollingIntervalMs: 100 });
  const { registry, cache, inventory } = r.kernel;
  const log = testLogger();
  // A router of its own (no mode gate) and an e-stop with no `devices` port.
  const router = new CallRouter({ registry, cache, log, clock: systemClock });
  const estop = new Estop({
    router,
    inventory,
    reads: cache,
    clock: systemClock,
    log,
    safeState: {
      hooks: setup.safety.hooks,
      setpoints: [],
      zeroIsSafe: false,
      expect: setup.safety.expect,
      verifyTimeoutMs: setup.safety.verifyTimeoutMs,
    },
  });
  const checks = () => {
    const v = estop.status().verification;
    assert.ok(v != null, "a verification after the stop");
    return v.checks;
  };

  const stop = await estop.trigger("no device port");
  assert.equal(stop.verification?.outcome, "verified");
  assert.deepEqual(
    checks().map((c) => [c.signal, c.outcome, c.device_available]),
    [
      ["sim0/motorctl0/motor1_duty", "verified", true],
      ["sim1/motorctl0/motor1_duty", "verified", true],
    ],
  );

  // sim1 crashes after the stop (restart disabled): the inventory says it is unavailable.
  const sim1 = registry.host("sim1")!;
  r.kill("sim1");
  await waitFor("sim1 down", () => !sim1.available);

  const after = checks();
  assert.deepEqual(
    after.map((c) => [c.signal, c.outcome, c.device_available]),
    [
      ["sim0/motorctl0/motor1_duty", "verified", true],
      ["sim1/motorctl0/motor1_duty", "verified", false],
    ],
  );
  assert.equal(after[0]!.device_unavailable_reason, undefined);
  assert.match(after[1]!.device_unavailable_reason ?? "", /^down: provider sim1 is unavailable \(/);
  estop.clear();
});

/**
 * An e-stop over the kernel's inventory with no device-condition port, its stop triggered and
 * verified on both sims; `reason(i)` is check i's device_unavailable_reason now.
 */
async function portlessVerifiedStop(
  r: Rig,
  setup: ReturnType<typeof twoSimsVerifiedStop>,
): Promise<{ estop: Estop; reason: (i: number) => string | undefined }> {
  const { registry, cache, inventory } = r.kernel;
  const log = testLogger();
  const router = new CallRouter({ registry, cache, log, clock: systemClock });
  const estop = new Estop({
    router,
    inventory,
    reads: cache,
    clock: systemClock,
    log,
    safeState: { ...setup.safety, setpoints: [], zeroIsSafe: false },
  });
  const stop = await estop.trigger("no device port");
  assert.equal(stop.verification?.outcome, "verified");
  return {
    estop,
    reason: (i) => estop.status().verification?.checks[i]?.device_unavailable_reason,
  };
}

Deno.test("Estop without a device-condition port says a provider a reload restarts, its new process registered and not up, is being restarted, as its device conditions do", async () => {
  const setup = twoSimsVerifiedStop();
  const dir = tempDir("estop-portless-restart-");
  const hangFile = `${dir}/hang.json`;
  await Deno.writeTextFile(
    hangFile,
    JSON.stringify({
      hello: { hang: true },
      devices: { motorctl0: { signals: [{ id: "x", type: T.DOUBLE }] } },
    }),
  );
  await using r = await rig({ ...setup, programs: false });
  const rt = r.kernel;
  const { estop, reason } = await portlessVerifiedStop(r, setup);
  const before = rt.registry.host("sim1")!;
  // sim1's entry changed: its new process never answers Hello while the test looks.
  const reload = rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, programmableProvider("sim1", hangFile)],
  });
  try {
    await waitFor("sim1's new host registered, not up", () => {
      const h = rt.registry.host("sim1");
      return h !== undefined && h !== before && !h.available;
    }, 10_000);
    const restarting = "provider sim1 is being restarted by a configuration reload";
    assert.equal(rt.outages.condition("sim1", "motorctl0").reason, restarting);
    // Before: "down: provider sim1 is unavailable (DOWN)".
    assert.equal(reason(1), `down: ${restarting}`);
    assert.equal(reason(0), undefined);
  } finally {
    estop.clear();
    await rt.stop();
    await reload.catch(() => {});
  }
});

Deno.test("Estop without a device-condition port says a provider a reload failed to register failed to start, as its device conditions do, not that it is not configured", async () => {
  const setup = twoSimsVerifiedStop();
  await using r = await rig({ ...setup, programs: false });
  const rt = r.kernel;
  const { estop, reason } = await portlessVerifiedStop(r, setup);
  // A host listener that fails for sim1's successor: the reload cannot register it.
  let refuse = false;
  rt.registry.eachHost((h) => {
    if (refuse && h.id === "sim1") throw new Error("wiring refused");
  });
  refuse = true;
  try {
    await rt.reload({
      ...rt.config,
      providers: [rt.config.providers[0]!, inertSim("sim1", { restart: false, timeoutMs: 4321 })],
    }).catch(() => {});
    assert.equal(rt.registry.host("sim1"), undefined, "no host registered under sim1");
    const why = rt.outages.condition("sim1", "motorctl0").reason;
    assert.match(
      why,
      /^provider sim1 failed to start at a configuration reload \(.*wiring refused/,
    );
    // Before: "down: provider sim1 is not configured".
    assert.equal(reason(1), `down: ${why}`);
  } finally {
    refuse = false;
    estop.clear();
  }
});

Deno.test("Estop without a device-condition port says a provider a reload failed to start, listed down, failed to start, as its device conditions do", async () => {
  const setup = twoSimsVerifiedStop();
  await using r = await rig({ ...setup, programs: false });
  const rt = r.kernel;
  const { estop, reason } = await portlessVerifiedStop(r, setup);
  try {
    // sim1's changed entry cannot be spawned: its host is listed down with its start error.
    await rt.reload({
      ...rt.config,
      providers: [
        rt.config.providers[0]!,
        { ...inertSim("sim1", { restart: false }), command: `${tempDir("no-such-")}/provider` },
      ],
    }).catch(() => {});
    const host = rt.registry.host("sim1");
    assert.ok(host !== undefined && !host.available && host.startError !== null, "listed down");
    const why = rt.outages.condition("sim1", "motorctl0").reason;
    assert.match(why, /^provider sim1 failed to start at a configuration reload \(/);
    // Before: "down: provider sim1 is unavailable (<lifecycle>)".
    assert.equal(reason(1), `down: ${why}`);
  } finally {
    estop.clear();
  }
});
