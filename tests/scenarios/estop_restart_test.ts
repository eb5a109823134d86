/**
 * A provider that becomes AVAILABLE while the e-stop latch holds is brought to the safe state and
 * its verification is redone. Real child processes: the test plant provider is killed with SIGKILL,
 * the e-stop latches while it is down (its ladder calls fail UNAVAILABLE, its check is
 * unreachable), and the supervisor restarts it: the new process receives the ladder's calls, its
 * expectations are read back again, status, an `estop_verification` event and the audit trail say
 * so.
 */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import {
  call,
  d,
  expectation,
  inertSim,
  manualCall,
  plantProvider,
  readSignal,
} from "../safety/_fixture.ts";

Deno.test("Estop brings a provider the supervisor restarts while latched to the safe state, and redoes and publishes its verification", async () => {
  const rt = await startRuntime(testConfig({
    providers: [
      // Restarted 2 s after it is found down: the e-stop latches meanwhile.
      plantProvider("plant", { restartBackoffMs: 2000 }),
      plantProvider("other"),
    ],
    safety: {
      zeroIsSafe: true,
      expect: [
        expectation("plant/plant0/fan_duty", { equals: 0 }, 0),
        expectation("other/plant0/fan_duty", { equals: 0 }, 1),
      ],
      verifyTimeoutMs: 300,
    },
  }));
  const rec = recordEvents(rt);
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "other", "plant0", 2, { duty: d(0.5) });
    const plant = rt.registry.host("plant")!;
    Deno.kill(plant.session!.pid, "SIGKILL");
    await waitFor("plant down", () => !plant.available);

    const stop = await rt.estop.trigger("while plant is down");
    assert.deepEqual(stop.actions.map((a) => [a.device_handle, a.function, a.success]), [
      ["plant/plant0", "set_heater", false],
      ["plant/plant0", "set_fan", false],
      ["other/plant0", "set_heater", true],
      ["other/plant0", "set_fan", true],
    ]);
    assert.match(stop.actions[0]!.error!, /^UNAVAILABLE: Provider unavailable: plant/);
    assert.equal(stop.verification.outcome, "unreachable");
    assert.deepEqual(stop.verification.checks.map((c) => c.outcome), ["unreachable", "verified"]);
    const latchedAt = Date.now();

    // The supervisor restarts it, still latched: the ladder's calls reach the new process.
    await waitFor("plant restarted", () => plant.available, 20_000);
    const verifications = () =>
      rec.events.filter((e): e is Extract<RuntimeEvent, { kind: "estop_verification" }> =>
        e.kind === "estop_verification"
      );
    const redone = await waitFor("a second estop_verification", () => verifications()[1], 20_000);
    // The new process starts with no call at all: last_call_ms is set by the ladder's calls.
    const lastCall = await readSignal(rt, "plant", "plant0", "last_call_ms");
    assert.ok(typeof lastCall === "number" && lastCall >= latchedAt, `last_call_ms ${lastCall}`);
    assert.equal(await readSignal(rt, "plant", "plant0", "heater_on"), false);

    // Verification redone for its expectation, merged into status, published, audited.
    assert.deepEqual(
      { ...redone, elapsed_ms: 0, timestamp_ms: 0 },
      {
        kind: "estop_verification",
        outcome: "verified",
        elapsed_ms: 0,
        checks_total: 2,
        checks_verified: 2,
        failed_signals: [],
        timestamp_ms: 0,
      },
    );
    const status = rt.estop.status();
    assert.equal(status.latched, true);
    assert.equal(status.verification?.outcome, "verified");
    assert.deepEqual(status.verification?.checks.map((c) => [c.signal, c.outcome, c.observed]), [
      ["plant/plant0/fan_duty", "verified", d(0)],
      ["other/plant0/fan_duty", "verified", d(0)],
    ]);
    assert.equal(verifications().length, 2, "one re-verification for one restart");

    const audit = (await rt.audit.query({ limit: 1000, origin: "estop" })).entries;
    const ladderCalls = audit.filter((e) => e.action === "call" && e.outcome === "accepted")
      .map((e) => [e.device_handle, e.function]);
    assert.deepEqual(ladderCalls, [
      ["other/plant0", "set_heater"],
      ["other/plant0", "set_fan"],
      ["plant/plant0", "set_heater"],
      ["plant/plant0", "set_fan"],
    ]);
    const secured = audit.filter((e) => e.action === "estop");
    assert.equal(secured.length, 1, JSON.stringify(audit));
    assert.deepEqual(secured[0]!.origin, { kind: "estop", rung: "zero", cause: "api" });
    assert.equal(secured[0]!.outcome, "accepted");
    assert.deepEqual(secured[0]!.args, {
      provider_ids: ["plant"],
      reason: "available while latched",
    });
    assert.deepEqual(secured[0]!.result, {
      actions: 2,
      actions_failed: 0,
      verification: "verified",
      checks_total: 2,
      checks_verified: 2,
    });
  } finally {
    rec.stop();
    await rt.stop();
  }
});

Deno.test("Estop sends nothing to a provider that comes back after the latch was released", async () => {
  const rt = await startRuntime(testConfig({
    providers: [plantProvider("plant", { restartBackoffMs: 1000 })],
    safety: {
      zeroIsSafe: true,
      expect: [expectation("plant/plant0/fan_duty", { equals: 0 })],
      verifyTimeoutMs: 300,
    },
  }));
  const rec = recordEvents(rt);
  try {
    const plant = rt.registry.host("plant")!;
    Deno.kill(plant.session!.pid, "SIGKILL");
    await waitFor("plant down", () => !plant.available);
    await rt.estop.trigger("while plant is down");
    rt.estop.clear();

    await waitFor("plant restarted", () => plant.available, 20_000);
    // Decided when it came up: a reset permits, it never starts anything.
    assert.equal(rt.estop.securing(plant), null);
    assert.equal(await readSignal(rt, "plant", "plant0", "last_call_ms"), 0);
    assert.equal(rec.events.filter((e) => e.kind === "estop_verification").length, 1);
  } finally {
    rec.stop();
    await rt.stop();
  }
});

Deno.test("Estop secures a provider one reload restarts while latched with the ladder that same reload put in force", async () => {
  const ladder = (setpoint: number) => ({
    hooks: [
      call(
        "sim0/tempctl0",
        "set_setpoint",
        { value: { double: setpoint } },
        "safety.safe_state.hooks[0]",
      ),
    ],
    expect: [expectation("sim0/tempctl0/setpoint", { equals: setpoint })],
    verifyTimeoutMs: 1000,
  });
  const rt = await startRuntime(testConfig({ providers: [inertSim("sim0")], safety: ladder(10) }));
  try {
    const stop = await rt.estop.trigger("test");
    assert.equal(stop.verification.outcome, "verified");
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 10);
    // One reload changes sim0's entry (restarted: the providers section applies first, so the new
    // process comes back before the safety section) and the ladder.
    const [sim0] = rt.config.providers;
    const report = await rt.reload({
      ...rt.config,
      providers: [{ ...sim0!, timeoutMs: sim0!.timeoutMs + 1 }],
      safety: { ...rt.config.safety, safeState: { ...rt.config.safety.safeState, ...ladder(20) } },
    });
    assert.deepEqual(report.providers.restarted, ["sim0"]);
    assert.ok(report.applied.includes("safety"), JSON.stringify(report));
    assert.equal(
      await readSignal(rt, "sim0", "tempctl0", "setpoint"),
      20,
      "the restarted sim0 is at the safe state of the ladder in force",
    );
    assert.equal(rt.estop.status().verification?.outcome, "verified");
    assert.deepEqual(rt.estop.status().verification?.checks.map((c) => c.expected), [{
      equals: 20,
    }]);
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop reads a provider one reload restarts while latched back against the expectations that same reload put in force, when only they changed", async () => {
  const safety = (expected: number) => ({
    hooks: [
      call(
        "sim0/tempctl0",
        "set_setpoint",
        { value: { double: 10 } },
        "safety.safe_state.hooks[0]",
      ),
    ],
    expect: [expectation("sim0/tempctl0/setpoint", { equals: expected })],
    verifyTimeoutMs: 300,
  });
  const rt = await startRuntime(testConfig({ providers: [inertSim("sim0")], safety: safety(10) }));
  const rec = recordEvents(rt);
  try {
    const stop = await rt.estop.trigger("test");
    assert.equal(stop.verification.outcome, "verified");
    // One reload restarts sim0 and changes only what its safe state is expected to read back:
    // its ladder calls stay the same.
    const [sim0] = rt.config.providers;
    const report = await rt.reload({
      ...rt.config,
      providers: [{ ...sim0!, timeoutMs: sim0!.timeoutMs + 1 }],
      safety: { ...rt.config.safety, safeState: { ...rt.config.safety.safeState, ...safety(20) } },
    });
    assert.deepEqual(report.providers.restarted, ["sim0"]);
    assert.ok(report.applied.includes("safety"), JSON.stringify(report));
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 10);
    const shown = rt.estop.status().verification;
    assert.deepEqual(
      shown?.checks.map((c) => [c.expected, c.outcome]),
      [[{ equals: 20 }, "mismatch"]],
      "the restarted sim0 is read back against the expectations in force",
    );
    assert.notEqual(shown?.outcome, "verified");
    const last = rec.events.filter((e) => e.kind === "estop_verification").at(-1);
    assert.equal(last?.kind === "estop_verification" && last.outcome, shown?.outcome);
  } finally {
    rec.stop();
    await rt.stop();
  }
});
