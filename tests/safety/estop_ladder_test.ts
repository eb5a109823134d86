/**
 * The e-stop ladder against providers served in-process (the plant, the read-back provider;
 * tests/helpers/rig.ts): every call attempted and each failure reported at once (never retried
 * into the provider's timeout), the plan as status shows it, the bounded drain of in-flight
 * calls, and a ladder call to a provider whose queue is full, never refused as busy. The two
 * tests of an e-stop without a mode manager build their router and e-stop by hand over the rig's
 * providers and read ports (the Kernel's router has the mode gate, which would refuse first).
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import { type AuditDecision, CallRouter } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { type ProviderHost } from "../../src/providers/mod.ts";
import { Estop, UNVERIFIED_NO_EXPECTATION } from "../../src/safety/mod.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { b, call, callFlood, d, expectation, manualCall, plantProvider } from "./_fixture.ts";
import { readbackProvider } from "./_readback.ts";
import { ManualClock, runToSettle, runUntil } from "../helpers/clock.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { rig, rigNotStarted } from "../helpers/rig.ts";

/** Bound on an e-stop whose failed calls fail at once, on the test's virtual clock. */
const FAILS_AT_ONCE_BOUND_MS = 2500;

Deno.test("Estop attempts every ladder call and reports each failure at once, in plan order", async () => {
  const logFile = await Deno.makeTempFile({ prefix: "estop-ladder-" });
  // Virtual time: "at once" is measured on the test's clock, not on a loaded machine's.
  const clock = new ManualClock();
  const r = await rig({
    clock,
    providers: [
      plantProvider("plant"),
      readbackProvider("rb", {
        dev0: { signals: { out: "bool" }, reads: [{ out: { v: false } }], actuate: "unavailable" },
      }, { logFile }),
      readbackProvider("gone", {
        dev0: { signals: { out: "bool" }, reads: [{ out: { v: false } }], actuate: "ok" },
      }),
    ],
    safety: {
      hooks: [
        call("plant/plant0", "no_such_function"),
        call("ghost/dev0", "set_output", { level: 1 }),
        call("gone/dev0", "set_output"),
        call("rb/dev0", "set_output"),
        call("plant/plant0", "set_fan", { duty: 0 }), // an integer literal for a double
      ],
      expect: [expectation("rb/dev0/out", { equals: false })],
    },
  });
  const rt = r.kernel;
  try {
    await runToSettle(clock, rt.registry.host("gone")!.stop(2000), "gone stopped");
    assert.equal(rt.registry.host("gone")!.available, false);
    const before = rt.estop.status();
    assert.deepEqual(before.plan.calls, [
      { device_handle: "plant/plant0", function: "no_such_function", args: {} },
      // No such provider: the arguments as configured.
      {
        device_handle: "ghost/dev0",
        function: "set_output",
        args: { level: { type: "int64", int64: 1 } },
      },
      { device_handle: "gone/dev0", function: "set_output", args: {} },
      { device_handle: "rb/dev0", function: "set_output", args: {} },
      // Resolved: typed as the function declares them.
      {
        device_handle: "plant/plant0",
        function: "set_fan",
        args: { duty: { type: "double", double: 0 } },
      },
    ]);
    assert.deepEqual(before.plan.uncovered, [
      { device_handle: "plant/plant0", function: "set_heater" },
    ]);
    // ghost/dev0: no provider lists it (none is configured); the ladder calls it all the same.
    assert.deepEqual(before.unverified_devices, ["plant/plant0", "gone/dev0", "ghost/dev0"]);
    assert.deepEqual(before.unverified_reasons.slice(1), [
      { device_handle: "gone/dev0", reason: UNVERIFIED_NO_EXPECTATION },
      { device_handle: "ghost/dev0", reason: "no provider ghost is configured" },
    ]);

    await runToSettle(clock, rt.modes.request("MANUAL"), "MANUAL");
    await runToSettle(clock, manualCall(rt, "plant", "plant0", 2, { duty: d(0.8) }), "the call");
    const t0 = clock.monoMs();
    const result = await runToSettle(clock, rt.estop.trigger("ladder"), "the e-stop");
    const took = clock.monoMs() - t0;
    assert.deepEqual(result.actions, [
      {
        device_handle: "plant/plant0",
        function: "no_such_function",
        success: false,
        error: 'NOT_FOUND: Function not found: plant/plant0 "no_such_function"',
      },
      {
        device_handle: "ghost/dev0",
        function: "set_output",
        success: false,
        error: "NOT_FOUND: Provider not found: ghost",
      },
      {
        device_handle: "gone/dev0",
        function: "set_output",
        success: false,
        error: "UNAVAILABLE: Provider unavailable: gone",
      },
      {
        device_handle: "rb/dev0",
        function: "set_output",
        success: false,
        error: "UNAVAILABLE: provider answered UNAVAILABLE: scripted call failure",
      },
      { device_handle: "plant/plant0", function: "set_fan", success: true },
    ]);
    // The provider-side failure was attempted once, not retried.
    const calls = Deno.readTextFileSync(logFile).split("\n").filter((l) => l.startsWith("call "));
    assert.deepEqual(calls, ["call dev0 set_output"]);
    assert.ok(took < FAILS_AT_ONCE_BOUND_MS, `the e-stop answered after ${took} ms`);
    // A stop action ends with its call's answer; the device's post-call poll follows
    // (e5b9bd44), so the cache shows the effect once that poll is in.
    await runUntil(clock, "the ladder call's effect in the cache", () => {
      const v = rt.cache.signal("plant", "plant0", "fan_duty")?.value;
      return v?.type === "double" && v.double === 0;
    });
    assert.equal(rt.cache.signal("plant", "plant0", "fan_duty")?.value?.type, "double");
    assert.deepEqual(rt.cache.signal("plant", "plant0", "fan_duty")?.value, d(0));
    assert.equal(result.verification.outcome, "verified");
    assert.equal(result.uncovered_actuating_functions, 1);
    assert.deepEqual(result.uncovered, [{ device_handle: "plant/plant0", function: "set_heater" }]);
    assert.match(
      result.warning ?? "",
      /^The 'hooks' rung leaves 1 actuating function\(s\) untouched: "plant\/plant0" "set_heater"\. /,
    );
  } finally {
    await runToSettle(clock, rt.stop(), "the stop");
    await Deno.remove(logFile);
  }
});

Deno.test("Estop status follows the inventory: a plan asked for before discovery is not kept", async () => {
  const rt = rigNotStarted({
    providers: [plantProvider("plant")],
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: 0 })] },
  }).kernel;
  try {
    const early = rt.estop.status();
    assert.equal(early.uncovered_actuating_functions, 0, "no devices known yet");
    assert.deepEqual((early.plan.calls[0])!.args, { duty: { type: "int64", int64: 0 } });
    await rt.start();
    const status = rt.estop.status();
    assert.equal(status.uncovered_actuating_functions, 1);
    assert.deepEqual(status.plan.uncovered, [{
      device_handle: "plant/plant0",
      function: "set_heater",
    }]);
    assert.deepEqual((status.plan.calls[0])!.args, { duty: { type: "double", double: 0 } });
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop drain waits for in-flight calls up to each provider's timeout_ms + 1 s, and says which did not finish", async () => {
  // `held`: a call on the wire when the e-stop fires, then the ladder's own call, 1400 ms each:
  // the drain barrier behind them needs ~2800 ms, past 1500 + 1000. `busy`: one call of 1000 ms
  // in flight, inside its bound (but past timeout_ms - 1 s). Virtual time: the latencies and
  // every bound run on the test's clock (runUntil), nothing waits in real time.
  const clock = new ManualClock();
  const r = await rig({
    providers: [
      plantProvider("held", { latencyMs: 1400, timeoutMs: 1500 }),
      plantProvider("busy", { latencyMs: 1000, timeoutMs: 1500 }),
    ],
    pollingIntervalMs: 60000, // no polls waiting behind the slow calls
    safety: { hooks: [call("held/plant0", "set_fan", { duty: { double: 0 } })] },
    clock,
    host: { files: new MemoryFiles() },
  });
  const rt = r.kernel;
  try {
    await runToSettle(clock, rt.modes.request("MANUAL"), "MANUAL");
    const inFlight = [
      manualCall(rt, "held", "plant0", 2, { duty: d(0.5) }).catch((e: RuntimeError) => e.code),
      manualCall(rt, "busy", "plant0", 2, { duty: d(0.5) }).catch((e: RuntimeError) => e.code),
    ];
    await runUntil(
      clock,
      "both calls on the wire",
      () => ["held", "busy"].every((id) => r.provider<FakeProvider>(id).count("call") === 1),
    );
    const result = await runToSettle(clock, rt.estop.trigger("drain bound"), "the e-stop");
    assert.deepEqual(result.drain, { complete: false, pending_providers: ["held"] });
    await runToSettle(clock, Promise.all(inFlight), "the calls");
  } finally {
    await runToSettle(clock, rt.stop(), "the stop");
  }
});

Deno.test("Estop ladder call to a provider whose queue is full is not refused as busy", async () => {
  // A call on the wire for 1500 ms and 64 queued behind it (the bound): the ladder's call is
  // queued all the same, before them, and sent once the call on the wire returns. Virtual time
  // (runUntil): the latency runs on the test's clock.
  const clock = new ManualClock();
  const r = await rig({
    providers: [plantProvider("plant", { latencyMs: 1500, timeoutMs: 2000 })],
    pollingIntervalMs: 60000, // no polls waiting behind the slow calls
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
    clock,
    host: { files: new MemoryFiles() },
  });
  const rt = r.kernel;
  try {
    await runToSettle(clock, rt.modes.request("MANUAL"), "MANUAL");
    const flood = callFlood(rt, "plant", "plant0", 2, (k) => ({ duty: d((k + 1) / 100) }));
    await runUntil(
      clock,
      "the first call on the wire",
      () => r.provider<FakeProvider>("plant").count("call") === 1,
    );
    const result = await runToSettle(clock, rt.estop.trigger("flood"), "the e-stop");
    const codes = await runToSettle(clock, flood, "the flood");
    assert.ok(codes.includes("UNAVAILABLE"), "the queue was full");
    assert.deepEqual(result.actions, [
      { device_handle: "plant/plant0", function: "set_fan", success: true },
    ]);
    // A stop action ends with its call's answer; the device's post-call poll follows
    // (e5b9bd44), so the cache shows the effect once that poll is in.
    await runUntil(clock, "the ladder call's effect in the cache", () => {
      const v = rt.cache.signal("plant", "plant0", "fan_duty")?.value;
      return v?.type === "double" && v.double === 0;
    });
    assert.deepEqual(rt.cache.signal("plant", "plant0", "fan_duty")?.value, d(0));
  } finally {
    await runToSettle(clock, rt.stop(), "the stop");
  }
});

Deno.test("Estop zero rung: status shows the calls with their arguments, a trigger makes them", async () => {
  const r = await rig({
    providers: [plantProvider("plant")],
    safety: { zeroIsSafe: true },
  });
  const rt = r.kernel;
  try {
    assert.deepEqual(rt.estop.status().plan, {
      rung: "zero",
      calls: [
        {
          device_handle: "plant/plant0",
          function: "set_heater",
          args: { enabled: { type: "bool", bool: false } },
        },
        {
          device_handle: "plant/plant0",
          function: "set_fan",
          args: { duty: { type: "double", double: 0 } },
        },
      ],
      uncovered: [],
    });
    await rt.modes.request("MANUAL");
    await manualCall(rt, "plant", "plant0", 1, { enabled: b(true) });
    await manualCall(rt, "plant", "plant0", 2, { duty: d(0.4) });
    const result = await rt.estop.trigger("zero");
    assert.deepEqual(result.actions, [
      { device_handle: "plant/plant0", function: "set_heater", success: true },
      { device_handle: "plant/plant0", function: "set_fan", success: true },
    ]);
    assert.deepEqual(result.uncovered, []);
    assert.equal(result.uncovered_actuating_functions, 0);
    assert.equal(Object.hasOwn(result, "warning"), false, "nothing untouched: no warning");
    // A stop action ends with its call's answer; the device's post-call poll follows
    // (e5b9bd44), so the cache shows the effect once that poll is in.
    await waitFor("the ladder calls' effect in the cache", () => {
      const heater = rt.cache.signal("plant", "plant0", "heater_on")?.value;
      const fan = rt.cache.signal("plant", "plant0", "fan_duty")?.value;
      return heater?.type === "bool" && !heater.bool && fan?.type === "double" && fan.double === 0;
    });
    assert.deepEqual(rt.cache.signal("plant", "plant0", "heater_on")?.value, b(false));
    assert.deepEqual(rt.cache.signal("plant", "plant0", "fan_duty")?.value, d(0));
  } finally {
    await rt.stop();
  }
});

Deno.test("Estop latch alone (no mode manager) refuses actuating calls through the router", async () => {
  // The runtime's providers and read ports; a router of its own with no gate but this e-stop's.
  await using r = await rig({ providers: [plantProvider("plant")], pollingIntervalMs: 60000 });
  const { registry, cache, inventory } = r.kernel;
  const log = testLogger();
  const router = new CallRouter({ registry, cache, log, clock: systemClock });
  const estop = new Estop({
    router,
    inventory,
    reads: cache,
    clock: systemClock,
    log,
    safeState: { hooks: [], setpoints: [], zeroIsSafe: false, expect: [], verifyTimeoutMs: 100 },
  });
  const heaterOn = () =>
    router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionId: 1,
      args: { enabled: b(true) },
      origin: "manual",
    });
  await heaterOn();
  await estop.trigger("latch only");
  await assert.rejects(heaterOn(), (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(
      e.message,
      "E-stop latched: actuating call plant/plant0 set_heater refused; release the latch " +
        "(POST /v0/estop/clear), then re-arm (POST /v0/mode MANUAL)",
    );
    return true;
  });
  // A read-only call passes the latch.
  await router.call({
    providerId: "plant",
    deviceId: "plant0",
    functionId: 3,
    args: {},
    origin: "manual",
  });
  estop.clear();
  await heaterOn();
});

Deno.test("Estop with two providers: the latch refuses as gate 'estop', a removed provider leaves the plan", async () => {
  // The runtime's providers and read ports; a router of its own with no gate but this e-stop's.
  await using r = await rig({
    providers: [plantProvider("plant"), plantProvider("other")],
    pollingIntervalMs: 60000,
  });
  const { registry, cache, inventory } = r.kernel;
  const { log, lines } = capturingLogger({ level: "info" });
  const audit: AuditDecision[] = [];
  const router = new CallRouter({
    registry,
    cache,
    log,
    clock: systemClock,
    audit: { record: (d) => audit.push(d) },
  });
  const estop = new Estop({
    router,
    inventory,
    reads: cache,
    clock: systemClock,
    log,
    safeState: { hooks: [], setpoints: [], zeroIsSafe: true, expect: [], verifyTimeoutMs: 100 },
  });
  let removed: ProviderHost | undefined;
  try {
    estop.logPlan("start-up");
    await estop.trigger("two providers");
    await assert.rejects(
      router.call({
        providerId: "plant",
        deviceId: "plant0",
        functionId: 1,
        args: { enabled: b(true) },
        origin: "manual",
      }),
    );
    const refused = audit.filter((a) => a.outcome === "refused");
    assert.deepEqual(refused.map((a) => [a.device_handle, a.refused_by]), [
      ["plant/plant0", "estop"],
    ]);

    removed = registry.remove("other");
    assert.deepEqual(estop.plan().calls.map((c) => c.label.device_handle), [
      "plant/plant0",
      "plant/plant0",
    ]);
    assert.ok(
      lines.some((l) => l.includes("e-stop plan (provider other removed): rung 'zero', 2 call(s)")),
      lines.join("\n"),
    );
  } finally {
    await removed?.stop(2000);
  }
});

Deno.test("Estop ladder calls name the rung of the stop they belong to, whatever a reload sets meanwhile", async () => {
  // Two ladder calls to one provider (declared order), 300 ms each: a reload of safety.safe_state
  // while the first runs changes the plan a next trigger would run, not the running stop's.
  await using r = await rig({
    providers: [plantProvider("plant", { latencyMs: 300 })],
    pollingIntervalMs: 60000,
  });
  const { registry, cache, inventory } = r.kernel;
  const log = testLogger();
  const audit: AuditDecision[] = [];
  const router = new CallRouter({
    registry,
    cache,
    log,
    clock: systemClock,
    audit: { record: (d) => audit.push(d) },
  });
  const safe = { setpoints: [], expect: [], verifyTimeoutMs: 100 };
  const estop = new Estop({
    router,
    inventory,
    reads: cache,
    clock: systemClock,
    log,
    safeState: {
      ...safe,
      hooks: [
        call("plant/plant0", "set_heater", { enabled: false }),
        call("plant/plant0", "set_fan", { duty: { double: 0 } }),
      ],
      zeroIsSafe: false,
    },
  });
  const stop = estop.trigger("hooks rung");
  await waitFor(
    "the first ladder call at the provider",
    () => r.provider<FakeProvider>("plant").count("call") === 1,
  );
  estop.reconfigure({ ...safe, hooks: [], zeroIsSafe: true });
  const result = await stop;
  assert.equal(result.software_safe_state, "hooks");
  const ladder = audit.filter((d) => d.action === "call" && d.origin.kind === "estop");
  assert.deepEqual(
    ladder.map((d) => [d.function, d.origin.kind === "estop" ? d.origin.rung : null]),
    [["set_heater", "hooks"], ["set_fan", "hooks"]],
  );
});
