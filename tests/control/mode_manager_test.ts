import assert from "node:assert/strict";
import { deviceCapabilities } from "../helpers/capabilities.ts";
import { rigNotStarted } from "../helpers/rig.ts";
import type { DeviceCapabilities, FunctionCategory, FunctionSpec } from "../../src/common/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { type HookConfig, RUNTIME_MODES, type RuntimeMode } from "../../src/config/mod.ts";
import {
  type AuditDecision,
  type CallOrigin,
  FAULT_HOOKS_ANSWER_WAIT_MS,
  type HookFailure,
  isTransitionAllowed,
  ModeManager,
  QUOTED_FAULT_REASON_CHARS,
} from "../../src/control/mod.ts";
import { type RuntimeEvent } from "../../src/events/mod.ts";
import { call, hook } from "../safety/_fixture.ts";
import { ManualClock, withRealTimers } from "../helpers/clock.ts";
import { LineLogger } from "../../src/host/mod.ts";

/**
 * The runtime's mode manager (tests/helpers/rig.ts: the Kernel, not started) over an empty
 * registry (no processes): hook calls fail with NOT_FOUND. The wall clock stands at NOW_MS.
 */
function setup(o: {
  automation?: boolean;
  policy?: "BLOCK" | "OVERRIDE";
  before?: HookConfig[];
  after?: HookConfig[];
} = {}) {
  const r = rigNotStarted({
    clock: withRealTimers({ nowMs: () => NOW_MS, monoMs: () => 0 }),
    // Log lines at warn and above, kept for the tests that pin a log level (a failed hook call).
    logLevel: "warn",
    automation: {
      enabled: o.automation ?? true,
      manualGatingPolicy: o.policy ?? "BLOCK",
      modeTransitionHooks: {
        beforeTransition: o.before ?? [],
        afterTransition: o.after ?? [],
      },
    },
    // Its own (empty) safe state: the FAULT hooks are not adopted by the e-stop.
    safety: { present: true },
  });
  const { modes, bus, router, inventory, host } = r.kernel;
  return {
    modes,
    events: r.events,
    bus,
    router,
    inventory,
    log: host.log,
    lines: r.lines,
  };
}

/** The wall clock the manager under test reads (event timestamps). */
const NOW_MS = 1_700_000_000_123;

/** Drives the manager from IDLE to `mode` along allowed edges. */
async function reach(modes: ModeManager, mode: RuntimeMode): Promise<void> {
  const path: Record<RuntimeMode, RuntimeMode[]> = {
    IDLE: [],
    MANUAL: ["MANUAL"],
    AUTO: ["MANUAL", "AUTO"],
    FAULT: ["FAULT"],
  };
  for (const m of path[mode]) await modes.request(m);
  assert.equal(modes.current(), mode);
}

// The table of docs/http-api.md "Modes and calls": row = from, column = to; "=" no-op, "y"
// allowed, "n" 409.
const TABLE: Record<RuntimeMode, Record<RuntimeMode, "=" | "y" | "n">> = {
  IDLE: { IDLE: "=", MANUAL: "y", AUTO: "n", FAULT: "y" },
  MANUAL: { IDLE: "y", MANUAL: "=", AUTO: "y", FAULT: "y" },
  AUTO: { IDLE: "n", MANUAL: "y", AUTO: "=", FAULT: "y" },
  FAULT: { IDLE: "n", MANUAL: "y", AUTO: "n", FAULT: "=" },
};

Deno.test("ModeManager starts in IDLE", () => {
  assert.equal(setup().modes.current(), "IDLE");
  assert.equal(setup({ automation: false }).modes.current(), "IDLE");
});

for (const from of RUNTIME_MODES) {
  for (const to of RUNTIME_MODES) {
    const expected = TABLE[from][to];
    Deno.test(
      `ModeManager transition ${from} -> ${to} is ${
        {
          "=": "a no-op",
          y: "allowed",
          n: "refused with FAILED_PRECONDITION",
        }[expected]
      }`,
      async () => {
        const { modes, events } = setup();
        await reach(modes, from);
        const before = events.length;
        assert.equal(isTransitionAllowed(from, to), expected === "y");
        if (expected === "n") {
          await assert.rejects(modes.request(to), (e: RuntimeError) => {
            assert.equal(e.code, "FAILED_PRECONDITION");
            assert.equal(
              e.message,
              `Invalid mode transition: ${from} -> ${to}`,
            );
            return true;
          });
          assert.equal(modes.current(), from);
          assert.equal(events.length, before);
        } else {
          assert.equal(await modes.request(to), to);
          assert.equal(modes.current(), to);
          const published = events.slice(before);
          assert.deepEqual(
            published.map((e) => e.kind === "mode_change" && [e.previous_mode, e.new_mode]),
            expected === "=" ? [] : [[from, to]],
          );
        }
      },
    );
  }
}

Deno.test("ModeManager refuses AUTO with FAILED_PRECONDITION when automation is disabled", async () => {
  const { modes } = setup({ automation: false });
  await modes.request("MANUAL");
  await assert.rejects(modes.request("AUTO"), (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(
      e.message,
      "Invalid mode transition: MANUAL -> AUTO requires automation.enabled (automation is disabled)",
    );
    return true;
  });
  assert.equal(modes.current(), "MANUAL");
  // Only AUTO needs automation: the other transitions work as usual.
  assert.equal(await modes.request("IDLE"), "IDLE");
  assert.equal(await modes.request("FAULT"), "FAULT");
});

Deno.test("ModeManager tells mode-change listeners and stops after unsubscribe", async () => {
  const { modes } = setup();
  const seen: string[] = [];
  const off = modes.onModeChange((c) => seen.push(`${c.previous}->${c.current}`));
  await modes.request("MANUAL");
  await modes.request("AUTO");
  off();
  await modes.request("MANUAL");
  assert.deepEqual(seen, ["IDLE->MANUAL", "MANUAL->AUTO"]);
});

Deno.test("ModeManager dates a mode change no earlier than the change before it when the wall clock steps back (NTP)", async () => {
  let wall = NOW_MS;
  const r = rigNotStarted({
    clock: withRealTimers({ nowMs: () => wall, monoMs: () => 0 }),
    automation: { enabled: true },
  });
  const { modes, bus } = r.kernel;
  const changes: [string, number][] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "mode_change") {
      changes.push([`${event.previous_mode}->${event.new_mode}`, event.timestamp_ms - NOW_MS]);
    }
  });
  await modes.request("MANUAL");
  wall = NOW_MS - 10_000; // NTP steps the wall clock back 10 s
  await modes.request("AUTO");
  await modes.forceFault("test");
  wall = NOW_MS + 5_000; // past it again: the clock's own time
  await modes.request("MANUAL");
  assert.deepEqual(
    changes,
    [["IDLE->MANUAL", 0], ["MANUAL->AUTO", 0], ["AUTO->FAULT", 0], ["FAULT->MANUAL", 5_000]],
    "never earlier than the change before it",
  );
});

Deno.test("ModeManager forceFault enters FAULT from every mode and reports it", async () => {
  for (const from of RUNTIME_MODES) {
    const { modes } = setup();
    await reach(modes, from);
    assert.equal(await modes.forceFault("test"), true);
    assert.equal(modes.current(), "FAULT");
  }
});

// ---- hook veto (hook calls target a provider that does not exist: they fail with NOT_FOUND) ----

const FAILING = call("ghost/dev0", "do_it");

Deno.test("ModeManager vetoes a transition when a before-hook with fail_on_error fails", async () => {
  const { modes, events } = setup({
    before: [hook("MANUAL", "AUTO", [FAILING], true)],
  });
  await modes.request("MANUAL");
  const modeChanges = () => events.filter((e) => e.kind === "mode_change").length;
  const n = modeChanges();
  await assert.rejects(modes.request("AUTO"), (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.match(
      e.message,
      /vetoed.*before_transition hook .*ghost\/dev0 do_it.*NOT_FOUND/,
    );
    return true;
  });
  assert.equal(modes.current(), "MANUAL");
  assert.equal(
    modeChanges(),
    n,
    "no mode_change event for a vetoed transition",
  );
});

Deno.test("ModeManager continues when a before-hook without fail_on_error fails", async () => {
  const { modes } = setup({ before: [hook("*", "AUTO", [FAILING], false)] });
  await modes.request("MANUAL");
  assert.equal(await modes.request("AUTO"), "AUTO");
});

Deno.test("ModeManager cannot be vetoed when the target is FAULT", async () => {
  const { modes } = setup({
    before: [hook("*", "FAULT", [FAILING, FAILING], true)],
  });
  await modes.request("MANUAL");
  assert.equal(await modes.request("FAULT"), "FAULT");
});

Deno.test("ModeManager only logs after-hook failures, even with fail_on_error", async () => {
  const { modes } = setup({ after: [hook("IDLE", "MANUAL", [FAILING], true)] });
  assert.equal(await modes.request("MANUAL"), "MANUAL");
});

Deno.test("ModeManager does not fire hooks whose from/to do not match", async () => {
  const { modes } = setup({
    before: [hook("AUTO", "MANUAL", [FAILING]), hook("*", "IDLE", [FAILING])],
  });
  assert.equal(await modes.request("MANUAL"), "MANUAL");
  assert.equal(await modes.request("AUTO"), "AUTO");
  await assert.rejects(modes.request("MANUAL"), {
    code: "FAILED_PRECONDITION",
  });
});

// ---- the mode gate ----

function fnSpec(category: FunctionCategory): FunctionSpec {
  return {
    functionId: 1,
    name: `fn_${category.toLowerCase()}`,
    description: "",
    category,
    actuating: category !== "READ",
    args: [],
  };
}
const DEVICE: DeviceCapabilities = deviceCapabilities("p", "d");

// allowed[mode][policy][origin] for an actuating function; READ is always allowed.
const GATE: Record<
  RuntimeMode,
  Record<"BLOCK" | "OVERRIDE", Record<CallOrigin, boolean>>
> = {
  IDLE: {
    BLOCK: { manual: false, automated: false, hook: false, safety: true },
    OVERRIDE: { manual: false, automated: false, hook: false, safety: true },
  },
  MANUAL: {
    BLOCK: { manual: true, automated: true, hook: true, safety: true },
    OVERRIDE: { manual: true, automated: true, hook: true, safety: true },
  },
  AUTO: {
    BLOCK: { manual: false, automated: true, hook: true, safety: true },
    OVERRIDE: { manual: true, automated: true, hook: true, safety: true },
  },
  FAULT: {
    BLOCK: { manual: false, automated: false, hook: false, safety: true },
    OVERRIDE: { manual: false, automated: false, hook: false, safety: true },
  },
};

for (const mode of RUNTIME_MODES) {
  for (const policy of ["BLOCK", "OVERRIDE"] as const) {
    Deno.test(`ModeManager gate in ${mode} with policy ${policy} per origin and category`, async () => {
      const { modes } = setup({ policy });
      await reach(modes, mode);
      for (const origin of ["manual", "automated", "hook", "safety"] as const) {
        for (
          const category of [
            "READ",
            "ACTUATE",
            "CONFIG",
            "UNSPECIFIED",
          ] as const
        ) {
          const refusal = modes.gate({
            fn: fnSpec(category),
            device: DEVICE,
            origin,
          });
          const allowed = category === "READ" || GATE[mode][policy][origin];
          if (allowed) assert.equal(refusal, null, `${origin} ${category}`);
          else {
            assert.ok(
              refusal instanceof RuntimeError,
              `${origin} ${category}: ${refusal}`,
            );
            assert.equal(refusal.code, "FAILED_PRECONDITION");
            const what = `p/d fn_${category.toLowerCase()} is actuating`;
            assert.equal(
              refusal.message,
              {
                IDLE: `Call blocked in IDLE mode: ${what} (switch to MANUAL to arm)`,
                FAULT: `Call blocked in FAULT mode: ${what} (switch to MANUAL to re-arm)`,
                AUTO: `Manual call blocked in AUTO mode: ${what} (manual_gating_policy BLOCK)`,
                MANUAL: "(MANUAL refuses nothing)",
              }[mode],
            );
          }
        }
      }
    });
  }
}

// ---- reports, FAULT entry, hook failures ----

/** A hook call that fails with NOT_FOUND (no provider `ghost`), told apart by its function. */
const ghost = (fn: string) => call("ghost/dev0", fn);

/** What a hook call to `ghost/dev0 fn` reports when it fails. */
function ghostFailure(
  transition: string,
  phase: "before" | "after",
  hookPath: string,
  fn: string,
): HookFailure {
  return {
    transition,
    phase,
    hook: hookPath,
    device_handle: "ghost/dev0",
    function: fn,
    error: "NOT_FOUND: Provider not found: ghost",
  };
}

function hookFailureEvents(events: RuntimeEvent[]): RuntimeEvent[] {
  return events.filter((e) => e.kind === "hook_failure");
}

/** The level of each log line (lines start with the level). */
function levels(lines: string[]): string[] {
  return lines.map((l) => l.split(" ", 1)[0]!);
}

Deno.test("ModeManager requestWithReport of the current mode reports no hook failures and runs no hooks", async () => {
  for (const mode of RUNTIME_MODES) {
    const { modes, events } = setup({
      before: [hook("*", "*", [ghost("b")], false)],
      after: [hook("*", "*", [ghost("a")], false)],
    });
    await reach(modes, mode);
    const n = events.length;
    assert.deepEqual(await modes.requestWithReport(mode), {
      mode,
      hook_failures: [],
    });
    assert.equal(events.length, n, `${mode}: nothing published`);
  }
});

Deno.test("ModeManager FAULT entry runs before- then after-hooks as stop actions and reports every failure", async () => {
  const B0 = "automation.mode_transition_hooks.before_transition[0]";
  const B2 = "automation.mode_transition_hooks.before_transition[2]";
  const A0 = "automation.mode_transition_hooks.after_transition[0]";
  const { modes, events, lines } = setup({
    before: [
      hook("AUTO", "FAULT", [ghost("b0_first"), ghost("b0_second")], false, B0),
      hook("MANUAL", "FAULT", [ghost("not_matching")], true, "b1"),
      hook("*", "FAULT", [ghost("b2")], true, B2),
    ],
    after: [
      hook("AUTO", "*", [ghost("a0")], false, A0),
      hook("MANUAL", "*", [ghost("not_matching")], true, "a1"),
    ],
  });
  await reach(modes, "AUTO");
  const n = events.length;
  lines.length = 0;
  const report = await modes.requestWithReport("FAULT");
  const expected = [
    ghostFailure("AUTO->FAULT", "before", B0, "b0_first"),
    ghostFailure("AUTO->FAULT", "before", B0, "b0_second"),
    ghostFailure("AUTO->FAULT", "before", B2, "b2"),
    ghostFailure("AUTO->FAULT", "after", A0, "a0"),
  ];
  assert.deepEqual(report, { mode: "FAULT", hook_failures: expected });
  // FAULT is committed first; each failure is published, stamped with the clock.
  assert.deepEqual(events.slice(n), [
    {
      kind: "mode_change",
      previous_mode: "AUTO",
      new_mode: "FAULT",
      timestamp_ms: NOW_MS,
    },
    ...expected.map((f) => ({
      kind: "hook_failure",
      ...f,
      timestamp_ms: NOW_MS,
    })),
  ]);
  // A failed stop action is an error, whatever the hook's fail_on_error says.
  assert.deepEqual(levels(lines), ["ERROR", "ERROR", "ERROR", "ERROR"]);
});

Deno.test("ModeManager requestWithReport(FAULT) while FAULT's hooks have not run waits for them, then says hooks_pending", async () => {
  const clock = new ManualClock();
  const r = rigNotStarted({
    clock,
    automation: {
      enabled: true,
      modeTransitionHooks: {
        beforeTransition: [hook("*", "FAULT", [ghost("stop")], false, "h")],
        afterTransition: [],
      },
    },
    safety: { present: true },
  });
  const modes = r.kernel.modes;
  // An e-stop's entry: committed, its hooks run only after its ladder.
  const entry = modes.enterFault("e-stop");
  let answered = false;
  const report = modes.requestWithReport("FAULT").finally(() => answered = true);
  await clock.advanceAsync(FAULT_HOOKS_ANSWER_WAIT_MS - 1);
  assert.equal(answered, false, "answered before the FAULT hooks in force had run");
  await clock.advanceAsync(1);
  assert.deepEqual(await report, { mode: "FAULT", hook_failures: [], hooks_pending: true });
  // Once they have run, a FAULT request changes nothing and reports nothing.
  assert.equal((await entry.runHooks()).length, 1);
  assert.deepEqual(await modes.requestWithReport("FAULT"), { mode: "FAULT", hook_failures: [] });
});

Deno.test("ModeManager.forceFault while FAULT's hooks never run (their committer failed) answers after FAULT_HOOKS_ANSWER_WAIT_MS", async () => {
  const clock = new ManualClock();
  const r = rigNotStarted({
    clock,
    logLevel: "warn",
    automation: {
      enabled: true,
      modeTransitionHooks: {
        beforeTransition: [hook("*", "FAULT", [ghost("stop")], false, "h")],
        afterTransition: [],
      },
    },
    safety: { present: true },
  });
  const modes = r.kernel.modes;
  // An e-stop's entry whose committer never gets to run its hooks (its ladder threw).
  modes.enterFault("e-stop");
  let answered = false;
  const forced = modes.forceFault("alarm").finally(() => answered = true);
  await clock.advanceAsync(FAULT_HOOKS_ANSWER_WAIT_MS - 1);
  assert.equal(answered, false, "answered before the FAULT hooks in force could have run");
  await clock.advanceAsync(1);
  assert.equal(answered, true, "forceFault still waits for FAULT hooks nobody runs");
  assert.equal(await forced, true);
  assert.ok(
    r.lines.some((l) =>
      l.startsWith("WARN") &&
      l.includes(`FAULT hooks in force had not finished within ${FAULT_HOOKS_ANSWER_WAIT_MS} ms`)
    ),
    r.lines.join("\n"),
  );
});

Deno.test("ModeManager enterFault commits FAULT synchronously and runs its hooks once, on demand", async () => {
  const { modes, events } = setup({
    before: [hook("*", "FAULT", [ghost("stop")], true, "h")],
  });
  await reach(modes, "MANUAL");
  const seen: string[] = [];
  modes.onModeChange((c) => seen.push(`${c.previous}->${c.current}`));
  const n = events.length;
  const entry = modes.enterFault("test");
  // No await yet: the mode, the event and the listeners already show FAULT, no hook ran.
  assert.equal(entry.committed, true);
  assert.equal(entry.from, "MANUAL");
  assert.equal(modes.current(), "FAULT");
  assert.deepEqual(seen, ["MANUAL->FAULT"]);
  assert.deepEqual(events.slice(n).map((e) => e.kind), ["mode_change"]);
  const first = entry.runHooks();
  assert.equal(entry.runHooks(), first, "later calls return the same promise");
  assert.deepEqual(await first, [
    ghostFailure("MANUAL->FAULT", "before", "h", "stop"),
  ]);
  assert.equal(hookFailureEvents(events).length, 1, "the hooks ran once");

  // Already in FAULT: nothing is committed and no hook runs.
  const again = modes.enterFault("again");
  assert.equal(again.committed, false);
  assert.equal(again.from, "FAULT");
  assert.deepEqual(await again.runHooks(), []);
  assert.equal(await modes.forceFault("and again"), true);
  assert.deepEqual(events.slice(n).map((e) => e.kind), [
    "mode_change",
    "hook_failure",
  ]);
  assert.deepEqual(seen, ["MANUAL->FAULT"]);
});

Deno.test("ModeManager reports before- and after-hook failures of a transition, every after-hook call attempted", async () => {
  const B0 = "automation.mode_transition_hooks.before_transition[0]";
  const A0 = "automation.mode_transition_hooks.after_transition[0]";
  const A1 = "automation.mode_transition_hooks.after_transition[1]";
  const { modes, events, lines } = setup({
    before: [hook("MANUAL", "AUTO", [ghost("b0"), ghost("b1")], false, B0)],
    after: [
      // fail_on_error on an after-hook changes only the log level: the rest still runs.
      hook("MANUAL", "AUTO", [ghost("a0"), ghost("a1")], true, A0),
      hook("*", "AUTO", [ghost("a2")], false, A1),
    ],
  });
  await reach(modes, "MANUAL");
  const n = events.length;
  lines.length = 0;
  const report = await modes.requestWithReport("AUTO");
  const expected = [
    ghostFailure("MANUAL->AUTO", "before", B0, "b0"),
    ghostFailure("MANUAL->AUTO", "before", B0, "b1"),
    ghostFailure("MANUAL->AUTO", "after", A0, "a0"),
    ghostFailure("MANUAL->AUTO", "after", A0, "a1"),
    ghostFailure("MANUAL->AUTO", "after", A1, "a2"),
  ];
  assert.deepEqual(report, { mode: "AUTO", hook_failures: expected });
  // Before-hook failures come before the commit, after-hook failures after it.
  assert.deepEqual(events.slice(n), [
    ...expected.slice(0, 2).map((f) => ({
      kind: "hook_failure",
      ...f,
      timestamp_ms: NOW_MS,
    })),
    {
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "AUTO",
      timestamp_ms: NOW_MS,
    },
    ...expected.slice(2).map((f) => ({
      kind: "hook_failure",
      ...f,
      timestamp_ms: NOW_MS,
    })),
  ]);
  // A failed hook call is a warning; an error when its hook has fail_on_error (or enters FAULT).
  assert.deepEqual(levels(lines), ["WARN", "WARN", "ERROR", "ERROR", "WARN"]);
});

Deno.test("ModeManager veto names the failed hook call and skips every remaining hook call", async () => {
  const B1 = "automation.mode_transition_hooks.before_transition[1]";
  const { modes, events } = setup({
    before: [
      hook("MANUAL", "AUTO", [ghost("tolerated")], false, "b0"),
      hook("MANUAL", "AUTO", [ghost("vetoing"), ghost("skipped")], true, B1),
      hook("*", "AUTO", [ghost("skipped_too")], false, "b2"),
    ],
    after: [hook("*", "*", [ghost("after")], false, "a0")],
  });
  await reach(modes, "MANUAL");
  const n = events.length;
  await assert.rejects(modes.request("AUTO"), (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(
      e.message,
      `Mode transition MANUAL -> AUTO vetoed: before_transition hook ${B1} call ghost/dev0 vetoing failed: NOT_FOUND: Provider not found: ghost`,
    );
    return true;
  });
  assert.equal(modes.current(), "MANUAL");
  assert.deepEqual(
    events.slice(n).map((e) => e.kind === "hook_failure" ? e.function : e.kind),
    ["tolerated", "vetoing"],
  );
  // The vetoed transition is over: the next one is accepted.
  assert.equal(await modes.request("IDLE"), "IDLE");
});

Deno.test("ModeManager refuses a transition while another one's hooks run; FAULT gets through", async () => {
  const { modes, events } = setup({
    before: [hook("MANUAL", "AUTO", [ghost("slow")], false)],
  });
  await reach(modes, "MANUAL");
  // Both requests are made while MANUAL -> AUTO runs its before-hooks (no await in between).
  const toAuto = modes.request("AUTO");
  const toIdle = modes.request("IDLE");
  const toFault = modes.request("FAULT");
  await assert.rejects(toIdle, (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(
      e.message,
      "Mode transition MANUAL -> AUTO is in progress; retry MANUAL -> IDLE",
    );
    return true;
  });
  assert.equal(await toFault, "FAULT");
  await assert.rejects(toAuto, (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(
      e.message,
      "Mode changed concurrently during MANUAL -> AUTO hooks (now FAULT)",
    );
    return true;
  });
  assert.equal(modes.current(), "FAULT");
  assert.deepEqual(
    events.filter((e) => e.kind === "mode_change").map((e) =>
      e.kind === "mode_change" && `${e.previous_mode}->${e.new_mode}`
    ),
    ["IDLE->MANUAL", "MANUAL->FAULT"],
  );
  // The refused transition released the manager: re-arming works.
  assert.equal(await modes.request("MANUAL"), "MANUAL");
});

Deno.test("ModeManager refuses to leave FAULT while its hooks run, and re-arms once they have finished", async () => {
  const { modes, events } = setup({
    before: [hook("*", "FAULT", [ghost("stop")], true, "b")],
    after: [hook("*", "FAULT", [ghost("after_stop")], true, "a")],
  });
  await reach(modes, "MANUAL");
  // The re-arm is asked while the FAULT hooks run (no await in between).
  const toFault = modes.requestWithReport("FAULT");
  const rearm = modes.request("MANUAL");
  await assert.rejects(rearm, (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(
      e.message,
      "FAULT hooks are still running (making the machine safe); retry FAULT -> MANUAL when they " +
        "have finished",
    );
    return true;
  });
  assert.equal(modes.current(), "FAULT");
  // Every stop action was attempted, and only then does re-arming work.
  assert.deepEqual((await toFault).hook_failures.map((f) => f.function), [
    "stop",
    "after_stop",
  ]);
  assert.equal(await modes.request("MANUAL"), "MANUAL");
  assert.deepEqual(
    events.filter((e) => e.kind === "mode_change").map((e) =>
      e.kind === "mode_change" && `${e.previous_mode}->${e.new_mode}`
    ),
    ["IDLE->MANUAL", "MANUAL->FAULT", "FAULT->MANUAL"],
  );
  // A FAULT entry whose hooks are run later (the e-stop runs its ladder first) blocks re-arming
  // from when they start until they end.
  modes.enterFault("test");
  assert.equal(
    await modes.request("MANUAL"),
    "MANUAL",
    "hooks not started: nothing to wait for",
  );
  const late = modes.enterFault("again");
  const hooks = late.runHooks();
  await assert.rejects(
    modes.request("MANUAL"),
    /FAULT hooks are still running/,
  );
  await hooks;
  assert.equal(await modes.request("MANUAL"), "MANUAL");
});

Deno.test("ModeManager arm checks refuse MANUAL and AUTO only, first refusal first, before the table", async () => {
  const { modes, events } = setup();
  const asked: string[] = [];
  let refusing = false;
  modes.addArmCheck((from, to) => {
    asked.push(`${from}->${to}`);
    return refusing ? "E-stop latched: clear it first" : null;
  });
  modes.addArmCheck(() => refusing ? "second check" : null);
  const refused = (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(e.message, "E-stop latched: clear it first");
    return true;
  };
  assert.equal(await modes.request("MANUAL"), "MANUAL");
  assert.equal(await modes.request("AUTO"), "AUTO");
  // Asked before the hooks and again right before the commit.
  assert.deepEqual(asked, [
    "IDLE->MANUAL",
    "IDLE->MANUAL",
    "MANUAL->AUTO",
    "MANUAL->AUTO",
  ]);
  refusing = true;
  await assert.rejects(modes.request("MANUAL"), refused);
  assert.equal(modes.current(), "AUTO");
  // Leaving for IDLE or FAULT is never refused by an arm check.
  assert.equal(await modes.request("FAULT"), "FAULT");
  asked.length = 0;
  // FAULT -> AUTO is not in the table, but the latch is what the operator must see.
  await assert.rejects(modes.request("AUTO"), refused);
  await assert.rejects(modes.request("MANUAL"), refused);
  assert.deepEqual(asked, ["FAULT->AUTO", "FAULT->MANUAL"]);
  refusing = false;
  assert.equal(await modes.request("MANUAL"), "MANUAL");
  refusing = true;
  asked.length = 0;
  assert.equal(await modes.request("IDLE"), "IDLE");
  assert.deepEqual(asked, [], "no check for a transition into IDLE");
  assert.equal(events.filter((e) => e.kind === "mode_change").length, 5);
});

Deno.test("ModeManager re-checks arming after the before-hooks: a latch engaged meanwhile refuses", async () => {
  const { modes, events, bus } = setup({
    before: [hook("IDLE", "MANUAL", [ghost("slow")], false)],
    after: [hook("IDLE", "MANUAL", [ghost("after")], false)],
  });
  let latched = false;
  modes.addArmCheck(() => latched ? "E-stop latched" : null);
  // The latch engages while the before-hook call runs (its failure is published meanwhile).
  bus.subscribe(({ event }) => {
    if (event.kind === "hook_failure") latched = true;
  });
  await assert.rejects(modes.request("MANUAL"), (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(e.message, "E-stop latched");
    return true;
  });
  assert.equal(modes.current(), "IDLE");
  assert.deepEqual(
    events.map((e) => e.kind === "hook_failure" ? e.function : e.kind),
    ["slow"],
  );
});

Deno.test("ModeManager commits and tells every listener even when one throws", async () => {
  const { modes, events } = setup();
  const seen: string[] = [];
  modes.onModeChange(() => {
    throw new Error("listener bug");
  });
  modes.onModeChange((c) => seen.push(`${c.previous}->${c.current}`));
  assert.equal(await modes.request("MANUAL"), "MANUAL");
  assert.equal(modes.enterFault("test").committed, true);
  assert.deepEqual(seen, ["IDLE->MANUAL", "MANUAL->FAULT"]);
  assert.equal(events.filter((e) => e.kind === "mode_change").length, 2);
});

// ---- a reload's new hooks and policy; what the audit trail is told ----

Deno.test("ModeManager reconfigure: the next transition runs the new hooks and the gate follows the new policy", async () => {
  const { modes } = setup({
    before: [hook("IDLE", "MANUAL", [FAILING], true)],
    policy: "BLOCK",
  });
  await assert.rejects(modes.request("MANUAL"), /vetoed/);
  modes.reconfigure(
    {
      beforeTransition: [],
      afterTransition: [hook("MANUAL", "AUTO", [ghost("new")], false)],
    },
    "OVERRIDE",
  );
  assert.equal(await modes.request("MANUAL"), "MANUAL", "the old veto is gone");
  const auto = await modes.requestWithReport("AUTO");
  assert.deepEqual(
    auto.hook_failures.map((f) => f.function),
    ["new"],
    "the new hook ran",
  );
  const manual = {
    fn: fnSpec("ACTUATE"),
    device: DEVICE,
    origin: "manual" as const,
  };
  assert.equal(
    modes.gate(manual),
    null,
    "OVERRIDE lets a manual call through in AUTO",
  );
  modes.reconfigure({ beforeTransition: [], afterTransition: [] }, "BLOCK");
  assert.equal(modes.gate(manual)?.code, "FAILED_PRECONDITION", "BLOCK again");
});

/** A mode manager of its own over the rig's router, recording what it tells the audit trail. */
function audited(o: { before?: HookConfig[] } = {}) {
  const { router, bus, inventory, log } = setup();
  const records: AuditDecision[] = [];
  const audit = {
    record: (d: AuditDecision) => void records.push(d),
    writeAhead: () => Promise.resolve(null),
  };
  let mono = 1_000;
  const modes = new ModeManager({
    router,
    inventory,
    bus,
    // Each read of the monotonic clock is 5 ms after the one before.
    clock: withRealTimers({ nowMs: () => NOW_MS, monoMs: () => (mono += 5) }),
    log,
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: o.before ?? [], afterTransition: [] },
    audit,
  });
  return { modes, records, audit };
}

Deno.test("ModeManager records each mode request: accepted with from, result and latency; refused with the check that refused; none for the current mode", async () => {
  const { modes, records } = audited({
    before: [hook("MANUAL", "AUTO", [ghost("b")], false)],
  });
  await assert.rejects(modes.request("AUTO"), /Invalid mode transition/); // the table refuses
  await modes.request("MANUAL");
  await modes.requestWithReport("AUTO", { kind: "http", address: "10.0.0.7" });
  await modes.request("AUTO"); // already AUTO: nothing to record
  modes.addArmCheck(() => "not now"); // no name: refused by "mode"
  await assert.rejects(modes.request("MANUAL"), /not now/);
  const latencies = records.map((r) => r.latency_ms);
  assert.ok(
    latencies.every((l) => typeof l === "number" && l >= 0 && l < 100),
    String(latencies),
  );
  assert.deepEqual(records.map(({ latency_ms: _, ...r }) => r), [
    {
      action: "mode",
      origin: { kind: "http" },
      outcome: "refused",
      function: "AUTO",
      args: { from: "IDLE" },
      reason: "FAILED_PRECONDITION: Invalid mode transition: IDLE -> AUTO",
      refused_by: "mode",
    },
    {
      action: "mode",
      origin: { kind: "http" },
      outcome: "accepted",
      function: "MANUAL",
      args: { from: "IDLE" },
      result: { mode: "MANUAL", hook_failures: 0 },
    },
    {
      action: "mode",
      origin: { kind: "http", address: "10.0.0.7" },
      outcome: "accepted",
      function: "AUTO",
      args: { from: "MANUAL" },
      result: { mode: "AUTO", hook_failures: 1 },
    },
    {
      action: "mode",
      origin: { kind: "http" },
      outcome: "refused",
      function: "MANUAL",
      args: { from: "AUTO" },
      reason: "FAILED_PRECONDITION: not now",
      refused_by: "mode",
    },
  ]);
});

Deno.test("ModeManager records an accepted mode request when the mode changes, before a FAULT its listeners force", async () => {
  const { modes, records } = audited();
  await modes.request("MANUAL");
  // A listener told of AUTO (the tree's start) forces FAULT in the same step.
  let faulted: Promise<boolean> | null = null;
  modes.onModeChange(({ current }) => {
    if (current === "AUTO") faulted = modes.forceFault("tree failed at once");
  });
  const report = await modes.requestWithReport("AUTO");
  assert.ok(faulted !== null);
  assert.equal(await faulted, true);
  assert.equal(report.mode, "FAULT");
  assert.deepEqual(records.map((r) => [r.function, r.outcome, r.origin.kind, r.result ?? null]), [
    ["MANUAL", "accepted", "http", { mode: "MANUAL", hook_failures: 0 }],
    ["AUTO", "accepted", "http", { mode: "AUTO", hook_failures: 0 }],
    ["FAULT", "accepted", "automation", null],
  ]);
});

Deno.test("ModeManager enters FAULT and tells every listener when its logger throws on every line", async () => {
  const { router, bus, inventory } = setup();
  // A logger that cannot write (a closed stderr, for a logger that does not swallow it).
  const log = new LineLogger({
    level: "debug",
    journald: false,
    now: () => NOW_MS,
    write: () => {
      throw new Error("stderr is closed");
    },
  });
  const modes = new ModeManager({
    router,
    inventory,
    bus,
    clock: withRealTimers({ nowMs: () => NOW_MS, monoMs: () => 0 }),
    log,
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: [], afterTransition: [] },
  });
  const told: string[] = [];
  modes.onModeChange(() => {
    throw new Error("a listener that fails");
  });
  modes.onModeChange(({ current }) => void told.push(current));
  assert.equal(await modes.forceFault("lost a device"), true);
  assert.equal(modes.current(), "FAULT");
  assert.deepEqual(told, ["FAULT"], "the listener after a failing one is told (the tree halts)");
});

Deno.test("ModeManager records a FAULT when the mode changes, before anything its listeners record", async () => {
  const { modes, records, audit } = audited();
  await modes.request("MANUAL");
  // A listener told of FAULT that records a decision of its own (as a subsystem halting would).
  modes.onModeChange(({ current }) => {
    if (current !== "FAULT") return;
    audit.record({
      action: "mode",
      origin: { kind: "automation" },
      outcome: "accepted",
      function: "listener",
      args: {},
      latency_ms: 0,
    } as unknown as AuditDecision);
  });
  assert.equal(await modes.forceFault("lost a device"), true);
  assert.deepEqual(records.map((r) => r.function), ["MANUAL", "FAULT", "listener"]);
});

Deno.test("ModeManager records a FAULT it is forced into as the runtime's automation, with the reason", async () => {
  const { modes, records } = audited();
  await modes.request("MANUAL");
  records.length = 0;
  assert.equal(await modes.forceFault("tree failed"), true);
  assert.deepEqual(records, [{
    action: "mode",
    origin: { kind: "automation" },
    outcome: "accepted",
    function: "FAULT",
    args: { from: "MANUAL", reason: "tree failed" },
    latency_ms: 0,
  }]);
});

Deno.test("ModeManager: a FAULT requested while FAULT -> MANUAL runs its before-hooks keeps FAULT", async () => {
  const { modes, bus } = setup({
    before: [hook("FAULT", "MANUAL", [ghost("slow")], false)],
  });
  await reach(modes, "FAULT");
  // An alarm's fault action (or another console's FAULT) lands while the re-arm's hook call runs.
  let faulted: Promise<boolean> | null = null;
  bus.subscribe(({ event }) => {
    if (event.kind === "hook_failure") {
      faulted ??= modes.forceFault("alarm trip raised", { kind: "alarm", alarm_id: "trip" });
    }
  });
  const rearm = modes.request("MANUAL").then(
    (m) => `entered ${m}`,
    (e: RuntimeError) => `refused: ${e.message}`,
  );
  const outcome = await rearm;
  assert.ok(faulted !== null, "the FAULT was requested during the hooks");
  assert.equal(await faulted, true, "forceFault answered FAULT");
  assert.equal(
    modes.current(),
    "FAULT",
    `the re-arm ${outcome} over the FAULT requested meanwhile`,
  );
  assert.equal(
    outcome,
    "refused: FAULT was requested again (alarm: alarm trip raised) while FAULT -> MANUAL hooks ran; " +
      "the mode stays FAULT",
  );
});

Deno.test("ModeManager: a request for the current mode while a transition away from it runs is refused, not answered with a mode about to change", async () => {
  const { modes } = setup({ before: [hook("MANUAL", "AUTO", [ghost("slow")], false)] });
  await reach(modes, "MANUAL");
  const toAuto = modes.request("AUTO");
  // Another console asks for MANUAL (stay / go back) while MANUAL -> AUTO runs its before-hooks.
  const stay = modes.request("MANUAL").then(
    (m) => `answered ${m}`,
    (e: RuntimeError) => `refused: ${e.message}`,
  );
  assert.equal(await toAuto, "AUTO");
  assert.equal(
    await stay,
    "refused: Mode transition MANUAL -> AUTO is in progress; retry MANUAL when it has finished",
    `the mode is ${modes.current()}`,
  );
});

Deno.test("ModeManager quotes a FAULT reason in its transition line, cut to QUOTED_FAULT_REASON_CHARS: a lost device's id cannot forge a line", async () => {
  const r = rigNotStarted({
    clock: withRealTimers({ nowMs: () => NOW_MS, monoMs: () => 0 }),
    logLevel: "info",
    safety: { present: true },
  });
  const { modes } = r.kernel;
  // As the device-loss latch words it, with the id the provider sent.
  await modes.forceFault('device-loss latch: sim0/d"0\nERROR forged is down (its reads fail)');
  await modes.request("MANUAL");
  await modes.forceFault(`device-loss latch: sim0/${"L".repeat(10_000)} is down`);
  const transitions = r.lines.filter((l) => l.includes("-> FAULT")).map((l) =>
    l.slice(l.indexOf("transition "))
  );
  const cut = `device-loss latch: sim0/${"L".repeat(QUOTED_FAULT_REASON_CHARS - 24)}\u2026`;
  assert.deepEqual(transitions, [
    'transition IDLE -> FAULT ("device-loss latch: sim0/d\\"0\\nERROR forged is down (its reads fail)")',
    `transition MANUAL -> FAULT ("${cut}")`,
  ]);
  assert.equal(cut.length, QUOTED_FAULT_REASON_CHARS + 1);
});
