import assert from "node:assert/strict";
import type { DeviceCapabilities, FunctionCategory, FunctionSpec } from "../../src/common/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { type HookConfig, RUNTIME_MODES, type RuntimeMode } from "../../src/config/mod.ts";
import {
  type CallOrigin,
  CallRouter,
  isTransitionAllowed,
  ModeManager,
} from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { ProviderRegistry } from "../../src/providers/mod.ts";
import { StateCache } from "../../src/state/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { call, hook } from "../safety/_fixture.ts";

/** A mode manager over an empty registry (no processes): hook calls fail with NOT_FOUND. */
function setup(o: {
  automation?: boolean;
  policy?: "BLOCK" | "OVERRIDE";
  before?: HookConfig[];
  after?: HookConfig[];
} = {}) {
  const log = testLogger();
  const bus = new EventBus();
  const registry = new ProviderRegistry([], {
    spawn: () => {
      throw new Error("no processes in this test");
    },
    clock: systemClock,
    log,
    bus,
    cwd: ".",
    shutdownTimeoutMs: 100,
  });
  const cache = new StateCache({ registry, bus, clock: systemClock, log, intervalMs: 100 });
  const router = new CallRouter({ registry, cache, log });
  const modes = new ModeManager({
    router,
    registry,
    bus,
    clock: systemClock,
    log,
    automationEnabled: o.automation ?? true,
    manualGatingPolicy: o.policy ?? "BLOCK",
    hooks: { beforeTransition: o.before ?? [], afterTransition: o.after ?? [] },
  });
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  return { modes, events };
}

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

// http-api.md §8, row = from, column = to; "=" no-op, "y" allowed, "n" 409.
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
        { "=": "a no-op", y: "allowed", n: "refused with FAILED_PRECONDITION" }[expected]
      }`,
      async () => {
        const { modes, events } = setup();
        await reach(modes, from);
        const before = events.length;
        assert.equal(isTransitionAllowed(from, to), expected === "y");
        if (expected === "n") {
          await assert.rejects(modes.request(to), (e: RuntimeError) => {
            assert.equal(e.code, "FAILED_PRECONDITION");
            assert.equal(e.message, `Invalid mode transition: ${from} -> ${to}`);
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
  await assert.rejects(modes.request("AUTO"), { code: "FAILED_PRECONDITION" });
  assert.equal(modes.current(), "MANUAL");
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
  const { modes, events } = setup({ before: [hook("MANUAL", "AUTO", [FAILING], true)] });
  await modes.request("MANUAL");
  const modeChanges = () => events.filter((e) => e.kind === "mode_change").length;
  const n = modeChanges();
  await assert.rejects(modes.request("AUTO"), (e: RuntimeError) => {
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.match(e.message, /vetoed.*before_transition hook .*ghost\/dev0 do_it.*NOT_FOUND/);
    return true;
  });
  assert.equal(modes.current(), "MANUAL");
  assert.equal(modeChanges(), n, "no mode_change event for a vetoed transition");
});

Deno.test("ModeManager continues when a before-hook without fail_on_error fails", async () => {
  const { modes } = setup({ before: [hook("*", "AUTO", [FAILING], false)] });
  await modes.request("MANUAL");
  assert.equal(await modes.request("AUTO"), "AUTO");
});

Deno.test("ModeManager cannot be vetoed when the target is FAULT", async () => {
  const { modes } = setup({ before: [hook("*", "FAULT", [FAILING, FAILING], true)] });
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
  await assert.rejects(modes.request("MANUAL"), { code: "FAILED_PRECONDITION" });
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
const DEVICE: DeviceCapabilities = {
  device: {
    providerId: "p",
    deviceId: "d",
    providerName: "",
    typeId: "",
    typeVersion: "",
    label: "",
    address: "",
    tags: {},
  },
  functions: [],
  signals: [],
};

// allowed[mode][policy][origin] for an actuating function; READ is always allowed.
const GATE: Record<RuntimeMode, Record<"BLOCK" | "OVERRIDE", Record<CallOrigin, boolean>>> = {
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
        for (const category of ["READ", "ACTUATE", "CONFIG", "UNSPECIFIED"] as const) {
          const refusal = modes.gate({ fn: fnSpec(category), device: DEVICE, origin });
          const allowed = category === "READ" || GATE[mode][policy][origin];
          assert.equal(refusal === null, allowed, `${origin} ${category}`);
          if (refusal) {
            assert.ok(refusal instanceof RuntimeError);
            assert.equal(refusal.code, "FAILED_PRECONDITION");
            if (mode === "IDLE") assert.match(refusal.message, /blocked in IDLE/);
          }
        }
      }
    });
  }
}
