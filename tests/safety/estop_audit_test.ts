/**
 * The e-stop's audit records (trigger, clear, the FAULT it commits), its trigger count and a
 * configuration reload (reconfigure), with the real router over a registry without providers (no
 * processes). Providers that come up while latched: tests/scenarios/estop_restart_test.ts.
 */
import { ManualClock } from "../helpers/clock.ts";
import assert from "node:assert/strict";
import type { HookConfig, ProviderConfig } from "../../src/config/mod.ts";
import { type AuditDecision, type AuditOrigin, CallRouter } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { ProviderRegistry } from "../../src/providers/mod.ts";
import {
  Estop,
  type EstopModes,
  PLAN_LOG_INTERVAL_MS,
  type SafeStateConfig,
} from "../../src/safety/mod.ts";
import { StateCache } from "../../src/state/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { call, plantProvider } from "./_fixture.ts";
import { readPorts } from "../helpers/kernel.ts";

const NOW_MS = 1_767_000_000_123;

function parts(safe: Partial<SafeStateConfig> = {}, providers: ProviderConfig[] = []) {
  const logLines: string[] = [];
  const log = new LineLogger({
    level: "info",
    journald: true,
    now: () => NOW_MS,
    write: (line) => {
      const m = /^<\d>\[estop\] (.*)$/.exec(line);
      if (m) logLines.push(m[1]!);
    },
  });
  const bus = new EventBus();
  // Time and timers stand still unless a test moves them.
  const clock = new ManualClock(1_000, NOW_MS);
  const registry = new ProviderRegistry(providers, {
    spawn: () => {
      throw new Error("no processes in this test");
    },
    clock,
    log,
    bus,
    cwd: ".",
    shutdownTimeoutMs: 100,
  });
  const cache = new StateCache({ registry, bus, clock, log, intervalMs: 100 });
  const router = new CallRouter({ registry, cache, log, clock });
  const audit: AuditDecision[] = [];
  const faults: { reason: string; source?: AuditOrigin | undefined }[] = [];
  const modes: EstopModes = {
    current: () => "FAULT",
    enterFault: (reason, source) => {
      faults.push({ reason, source });
      return {
        committed: true,
        from: "IDLE",
        runHooks: () => Promise.resolve([]),
        hookFailuresSoFar: () => [],
      };
    },
    addArmCheck: () => {},
  };
  const safeState: SafeStateConfig = {
    hooks: [],
    setpoints: [],
    zeroIsSafe: false,
    expect: [],
    verifyTimeoutMs: 2000,
    ...safe,
  };
  const estop = new Estop({
    router,
    ...readPorts(registry),
    clock,
    log,
    safeState,
    bus,
    modes,
    audit: { record: (d) => audit.push(d) },
  });
  return { estop, audit, faults, logLines, registry, clock };
}

const HOOKS: HookConfig["calls"] = [
  call("alpha/relays", "set_relay", { enabled: false }),
  call("beta/heater", "set_power", { watts: 0 }),
  call("alpha/valve", "close"),
];

Deno.test("Estop trigger without a source audits an alarm cause as the alarm, any other as HTTP", async () => {
  const { estop, audit } = parts();
  await estop.trigger("too hot", { cause: "alarm:tc1_overtemp" });
  await estop.trigger("operator");
  await estop.trigger("named", { cause: "x:alarm:y" });
  await estop.trigger("given", { cause: "alarm:a", source: { kind: "automation" } });
  assert.deepEqual(audit.filter((d) => d.action === "estop").map((d) => [d.origin, d.args]), [
    [{ kind: "alarm", alarm_id: "tc1_overtemp" }, {
      reason: "too hot",
      cause: "alarm:tc1_overtemp",
    }],
    [{ kind: "http" }, { reason: "operator", cause: "api" }],
    [{ kind: "http" }, { reason: "named", cause: "x:alarm:y" }],
    [{ kind: "automation" }, { reason: "given", cause: "alarm:a" }],
  ]);
});

Deno.test("Estop commits FAULT with the e-stop as its source, naming the cause", async () => {
  const { estop, faults } = parts();
  await estop.trigger("t", { cause: "alarm:leak" });
  await estop.trigger();
  assert.deepEqual(faults, [
    { reason: "e-stop", source: { kind: "estop", cause: "alarm:leak" } },
    { reason: "e-stop", source: { kind: "estop", cause: "api" } },
  ]);
});

Deno.test("Estop clear is audited with whether it was latched and who asked (default HTTP)", async () => {
  const { estop, audit } = parts();
  estop.clear();
  await estop.trigger();
  estop.clear({ kind: "alarm", alarm_id: "reset" });
  estop.clear();
  const clears = audit.filter((d) => d.action === "estop_clear");
  assert.deepEqual(clears.map((d) => [d.origin, d.args, d.outcome]), [
    [{ kind: "http" }, { was_latched: false }, "accepted"],
    [{ kind: "alarm", alarm_id: "reset" }, { was_latched: true }, "accepted"],
    [{ kind: "http" }, { was_latched: false }, "accepted"],
  ]);
  assert.equal(estop.latched, false);
});

Deno.test("Estop triggerCount counts every trigger, also while latched and after a clear", async () => {
  const { estop } = parts();
  assert.equal(estop.triggerCount, 0);
  await estop.trigger();
  await estop.trigger();
  assert.equal(estop.triggerCount, 2);
  estop.clear();
  await estop.trigger();
  assert.equal(estop.triggerCount, 3);
});

Deno.test("Estop reconfigure: the plan follows the new safe state and is logged once logging began", () => {
  const { estop, logLines } = parts();
  assert.equal(estop.plan().rung, "none");
  estop.reconfigure({
    hooks: [HOOKS[0]!],
    setpoints: [],
    zeroIsSafe: false,
    expect: [],
    verifyTimeoutMs: 2000,
  });
  assert.equal(estop.plan().rung, "hooks");
  assert.deepEqual(estop.planView().calls.map((c) => c.device_handle), ["alpha/relays"]);
  assert.deepEqual(logLines, [], "nothing logged before the start-up plan was logged");
  estop.logPlan("start-up");
  logLines.length = 0;
  estop.reconfigure({
    hooks: HOOKS,
    setpoints: [],
    zeroIsSafe: false,
    expect: [],
    verifyTimeoutMs: 2000,
  });
  assert.equal(
    logLines[0],
    "e-stop plan (configuration reloaded): rung 'hooks', 3 call(s), 0 actuating function(s) untouched",
  );
  assert.equal(estop.plan().calls.length, 3);
});

Deno.test("Estop logs a plan change at once, and changes within PLAN_LOG_INTERVAL_MS of it once more, together", () => {
  // Three configured providers, never started: removing one changes the plan.
  const { estop, logLines, registry, clock } = parts(
    { zeroIsSafe: true },
    [plantProvider("a"), plantProvider("b"), plantProvider("c")],
  );
  try {
    estop.logPlan("start-up");
    const headers = () => logLines.filter((l) => l.startsWith("e-stop plan ("));
    registry.remove("a");
    assert.deepEqual(headers().slice(1), [
      "e-stop plan (provider a removed): rung 'zero', 0 call(s), 0 actuating function(s) untouched",
    ]);
    registry.remove("b");
    registry.remove("c");
    assert.equal(headers().length, 2, "within the interval: not yet");
    assert.deepEqual(estop.plan().calls, [], "the plan itself is current at once");
    clock.advance(PLAN_LOG_INTERVAL_MS - 1);
    assert.equal(headers().length, 2, "one millisecond before the interval is up: not yet");
    clock.advance(1);
    assert.equal(headers().length, 3);
    assert.equal(
      headers()[2],
      "e-stop plan (provider b removed; provider c removed): rung 'zero', 0 call(s), 0 actuating function(s) untouched",
    );
  } finally {
    estop.close();
  }
});

Deno.test("Estop close drops a plan log that waits for its turn", () => {
  const { estop, logLines, registry, clock } = parts({}, [plantProvider("a"), plantProvider("b")]);
  estop.logPlan("start-up");
  registry.remove("a");
  registry.remove("b");
  assert.equal(clock.pendingTimers, 1, "the plan log waiting for its turn");
  estop.close();
  assert.equal(clock.pendingTimers, 0);
  clock.advance(PLAN_LOG_INTERVAL_MS);
  assert.equal(logLines.filter((l) => l.includes("provider b removed")).length, 0);
});
