/**
 * The e-stop latch, its events, its status and its answer, with the runtime's router, mode
 * manager and event bus (the Kernel, not started) over a registry without providers (no processes): what happens synchronously
 * on a trigger, what a clear does, the arm check, the gate's refusal, the FAULT hooks' failures
 * in the answer, and the warning texts. The ladder against real providers: estop_ladder_test.ts.
 */
import { waitFor } from "../helpers/kernel.ts";
import assert from "node:assert/strict";
import { deviceCapabilities } from "../helpers/capabilities.ts";
import type { DeviceCapabilities, FunctionSpec, RuntimeError } from "../../src/common/mod.ts";
import type { HookConfig } from "../../src/config/mod.ts";
import { CallRouter } from "../../src/control/mod.ts";
import {
  Estop,
  NO_SAFE_STATE_WARNING,
  type SafeStateConfig,
  uncoveredWarning,
} from "../../src/safety/mod.ts";
import { call, hook, plantProvider } from "./_fixture.ts";
import { ManualClock } from "../helpers/clock.ts";
import { rigNotStarted } from "../helpers/rig.ts";

/** Wall clock fixed at a known instant (the e-stop stamps its events and latch with it). */
const NOW_MS = 1_767_000_000_123;

/**
 * The runtime's e-stop and mode manager (tests/helpers/rig.ts: the Kernel, not started) over a
 * registry without providers, on a clock whose time stands still unless a test sets it.
 */
function parts(o: { hooks?: HookConfig[]; safeState?: Partial<SafeStateConfig> } = {}) {
  /** The e-stop's own warn and error lines (journald form: `<N>[estop] text`). */
  const logLines: string[] = [];
  // The wall clock is set by hand (clock.wall); nothing here waits for time.
  const clock = new ManualClock(1_000, NOW_MS);
  const r = rigNotStarted({
    clock,
    logLevel: "warn",
    journald: true,
    onLine: (line) => {
      const m = /^<\d>\[estop\] (.*)$/.exec(line);
      if (m) logLines.push(m[1]!);
    },
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: { beforeTransition: [], afterTransition: o.hooks ?? [] },
    },
    safety: { present: true, ...o.safeState },
  });
  const { estop, modes } = r.kernel;
  const events = r.events;
  const estopEvents = () =>
    events.filter((e) => e.kind === "estop_change" || e.kind === "estop_verification");
  return { estop, modes, clock, events, estopEvents, logLines };
}

const RELAYS: DeviceCapabilities = deviceCapabilities("p", "relays");
const SET_RELAY: FunctionSpec = {
  functionId: 1,
  name: "set_relay",
  description: "",
  category: "ACTUATE",
  actuating: true,
  args: [],
};

Deno.test("Estop trigger latches, commits FAULT and publishes estop_change before its first await", async () => {
  const { estop, modes, estopEvents } = parts();
  await modes.request("MANUAL");
  assert.equal(estop.status().latched_at_epoch_ms, null);

  const pending = estop.trigger("operator pressed stop");
  // Nothing has been awaited yet.
  assert.equal(estop.latched, true);
  assert.equal(modes.current(), "FAULT");
  assert.equal(estop.status().latched, true);
  assert.equal(estop.status().latched_at_epoch_ms, NOW_MS);
  assert.deepEqual(estopEvents(), [
    {
      kind: "estop_change",
      latched: true,
      reason: "operator pressed stop",
      cause: "api",
      timestamp_ms: NOW_MS,
    },
  ]);
  assert.equal(estop.status().cause, "api");
  const refusal = estop.gate({ fn: SET_RELAY, device: RELAYS, origin: "manual" });
  assert.equal(refusal?.code, "FAILED_PRECONDITION");
  assert.equal(
    refusal?.message,
    "E-stop latched: actuating call p/relays set_relay refused; release the latch " +
      "(POST /v0/estop/clear), then re-arm (POST /v0/mode MANUAL)",
  );

  const result = await pending;
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(result.hook_failures, []);
  assert.equal(result.warning, NO_SAFE_STATE_WARNING);
  assert.deepEqual(estopEvents().slice(1), [{
    kind: "estop_verification",
    outcome: "unverifiable",
    elapsed_ms: 0,
    checks_total: 0,
    checks_verified: 0,
    failed_signals: [],
    timestamp_ms: NOW_MS,
  }]);
});

Deno.test("Estop trigger without a reason, or with one still arriving, publishes reason null", async () => {
  const { estop, estopEvents, logLines } = parts();
  await estop.trigger();
  let late: (r: string) => void = () => {};
  const arriving = new Promise<string>((resolve) => (late = resolve));
  const second = estop.trigger(arriving);
  const changes = estopEvents().filter((e) => e.kind === "estop_change");
  assert.deepEqual(changes, [
    { kind: "estop_change", latched: true, reason: null, cause: "api", timestamp_ms: NOW_MS },
    { kind: "estop_change", latched: true, reason: null, cause: "api", timestamp_ms: NOW_MS },
  ]);
  // The reason arriving later changes nothing the e-stop reports; it is logged when it arrives.
  late("body arrived");
  const result = await second;
  assert.equal(result.latched, true);
  assert.equal(estopEvents().filter((e) => e.kind === "estop_change").length, 2);
  assert.deepEqual(logLines.filter((l) => l.startsWith("E-STOP")), [
    "E-STOP latched",
    "E-STOP latched",
    "E-STOP reason: body arrived",
  ]);
});

Deno.test("Estop logs a reason once: given at once, arriving later, or arriving empty or failed", async () => {
  const { estop, logLines } = parts();
  await estop.trigger("at once");
  await estop.trigger(Promise.resolve(undefined));
  await estop.trigger(Promise.reject(new Error("body unreadable")));
  await estop.trigger(Promise.resolve("late"));
  await waitFor("the late reason", () => logLines.includes("E-STOP reason: late"));
  assert.deepEqual(logLines.filter((l) => l.startsWith("E-STOP")), [
    "E-STOP latched: at once",
    "E-STOP latched",
    "E-STOP latched",
    "E-STOP latched",
    "E-STOP reason: late",
  ]);
});

Deno.test("Estop clear releases the latch once, publishes it, and leaves the mode in FAULT", async () => {
  const { estop, modes, clock, estopEvents } = parts();
  assert.deepEqual(estop.clear(), { latched: false }, "a clear while released ...");
  assert.deepEqual(estopEvents(), [], "... publishes nothing");

  await estop.trigger("test");
  clock.wall = NOW_MS + 5000;
  assert.deepEqual(estop.clear(), { latched: false });
  assert.equal(estop.latched, false);
  assert.equal(estop.status().latched, false);
  assert.equal(estop.status().latched_at_epoch_ms, null);
  assert.equal(modes.current(), "FAULT");
  assert.equal(estop.gate({ fn: SET_RELAY, device: RELAYS, origin: "manual" }), null);
  assert.deepEqual(estopEvents().filter((e) => e.kind === "estop_change"), [
    { kind: "estop_change", latched: true, reason: "test", cause: "api", timestamp_ms: NOW_MS },
    {
      kind: "estop_change",
      latched: false,
      reason: null,
      cause: null,
      timestamp_ms: NOW_MS + 5000,
    },
  ]);
  assert.equal(estop.status().cause, null);
  estop.clear();
  assert.equal(estopEvents().filter((e) => e.kind === "estop_change").length, 2, "idempotent");
});

Deno.test("Estop answers the latch as it stands when it answers: released by a clear while its stop ran, latched again by a press after it", async () => {
  const { estop } = parts();
  assert.equal((await estop.trigger("held")).latched, true);
  const released = estop.trigger("released while it runs");
  estop.clear();
  const r = await released;
  assert.equal(r.latched, false, "the answer claimed a latch the operator had released");
  assert.equal(r.latched, estop.status().latched);
  // Cleared, then latched again by a press that joins the same stop: both answers say latched.
  const first = estop.trigger("first");
  estop.clear();
  const again = estop.trigger("latches again");
  const answers = await Promise.all([first, again]);
  assert.deepEqual(answers.map((a) => a.latched), [true, true]);
  assert.equal(estop.status().latched, true);
});

Deno.test("Estop status names what latched it until the latch is released; estop_change names each trigger's cause", async () => {
  const { estop, estopEvents } = parts();
  assert.equal(estop.status().cause, null);
  await estop.trigger("too hot", { cause: "alarm:tc1_overtemp" });
  assert.equal(estop.status().cause, "alarm:tc1_overtemp");
  await estop.trigger("operator");
  assert.equal(estop.status().cause, "alarm:tc1_overtemp", "a later trigger keeps the cause");
  estop.clear();
  assert.equal(estop.status().cause, null);
  await estop.trigger("operator");
  assert.equal(estop.status().cause, "api");
  assert.deepEqual(
    estopEvents().filter((e) => e.kind === "estop_change").map((e) =>
      e.kind === "estop_change" ? e.cause : undefined
    ),
    ["alarm:tc1_overtemp", "api", null, "api"],
  );
});

Deno.test("Estop refuses arming while latched, naming the transition and the way out", async () => {
  const { estop, modes } = parts();
  await estop.trigger();
  for (const to of ["MANUAL", "AUTO"] as const) {
    await assert.rejects(modes.request(to), (e: RuntimeError) => {
      assert.equal(e.code, "FAILED_PRECONDITION");
      assert.ok(
        e.message.includes(
          `E-stop latched: FAULT -> ${to} refused; the latch must be released first ` +
            "(POST /v0/estop/clear), then re-arm deliberately",
        ),
        e.message,
      );
      return true;
    });
  }
  estop.clear();
  await modes.request("MANUAL");
  assert.equal(modes.current(), "MANUAL");
});

Deno.test("Estop answers with every failed call of the hooks into FAULT", async () => {
  const { estop } = parts({
    hooks: [
      hook(
        "*",
        "FAULT",
        [
          call("ghost/dev0", "set_relay", { enabled: false }),
          call("p/relays", "set_relay", { enabled: false }),
        ],
        false,
        "automation.mode_transition_hooks.after_transition[0]",
      ),
    ],
  });
  const result = await estop.trigger();
  assert.equal(result.fault_engaged, true);
  assert.deepEqual(result.hook_failures, [
    {
      transition: "IDLE->FAULT",
      phase: "after",
      hook: "automation.mode_transition_hooks.after_transition[0]",
      device_handle: "ghost/dev0",
      function: "set_relay",
      error: "NOT_FOUND: Provider not found: ghost",
    },
    {
      transition: "IDLE->FAULT",
      phase: "after",
      hook: "automation.mode_transition_hooks.after_transition[0]",
      device_handle: "p/relays",
      function: "set_relay",
      error: "NOT_FOUND: Provider not found: p",
    },
  ]);
});

Deno.test("Estop runs the hooks into FAULT and answers when its drain fails", async () => {
  const clock = new ManualClock(1_000, NOW_MS);
  const r = rigNotStarted({
    clock,
    logLevel: "warn",
    // Configured, never started: the drain below is asked about it.
    providers: [plantProvider("plant")],
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: {
        beforeTransition: [],
        afterTransition: [hook("*", "FAULT", [call("ghost/dev0", "stop")], false, "h")],
      },
    },
    safety: { present: true },
  });
  const { registry, cache, inventory, modes, bus, host } = r.kernel;
  /** A router whose drain fails (it made the ladder step throw, and the trigger reject). */
  class ThrowingDrain extends CallRouter {
    override drainFrom(): () => Promise<boolean> {
      return () => Promise.reject(new Error("injected drain failure"));
    }
  }
  const estop = new Estop({
    router: new ThrowingDrain({ registry, cache, log: host.log, clock }),
    inventory,
    reads: cache,
    clock,
    log: host.log,
    safeState: { hooks: [], setpoints: [], zeroIsSafe: false, expect: [], verifyTimeoutMs: 100 },
    modes,
    bus,
  });
  const result = await estop.trigger("drain fails");
  assert.equal(result.latched, true);
  assert.deepEqual(result.drain, { complete: false, pending_providers: ["plant"] });
  assert.equal(modes.current(), "FAULT");
  assert.deepEqual(
    r.events.filter((e) => e.kind === "hook_failure").map((e) =>
      e.kind === "hook_failure" && e.error
    ),
    ["NOT_FOUND: Provider not found: ghost"],
    "the hooks into FAULT did not run",
  );
});

Deno.test("Estop re-triggered while latched stamps the latest trigger", async () => {
  const { estop, clock } = parts();
  await estop.trigger("first");
  clock.wall = NOW_MS + 1000;
  const second = await estop.trigger("second");
  assert.equal(second.latched, true);
  assert.equal(estop.status().latched_at_epoch_ms, NOW_MS + 1000);
});

Deno.test("uncoveredWarning names the rung, the count and every untouched function, quoted", () => {
  assert.equal(
    uncoveredWarning("zero", [
      { device_handle: "p/tools", function: "reboot" },
      { device_handle: "q/axis", function: "set_mode" },
    ]),
    "The 'zero' rung leaves 2 actuating function(s) untouched: " +
      '"p/tools" "reboot", "q/axis" "set_mode". ' +
      "The e-stop did not change them; cover them with safety.safe_state.hooks and check the " +
      "outputs that matter with safety.safe_state.expect, or use the hardware emergency stop.",
  );
});

Deno.test("NO_SAFE_STATE_WARNING says nothing was changed and to use the hardware stop", () => {
  assert.equal(
    NO_SAFE_STATE_WARNING,
    "No software safe state applies: safety.safe_state has no hooks, its setpoints do not cover " +
      "every actuating function and zero_is_safe is false. The latch blocks further actuating " +
      "calls but no output was changed; use the hardware emergency stop to remove power.",
  );
});
