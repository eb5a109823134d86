/**
 * The refuse-hookless AUTO gate (docs/automation.md, "Configuration") over a real provider process
 * (tests/safety/_plant_provider.ts: two ACTUATE functions and one READ function).
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import type { HookConfig } from "../../src/config/mod.ts";
import { CallRouter, ModeManager } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { recordEvents, startRuntime, testLogger } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { hook, plantProvider } from "../safety/_fixture.ts";

const REFUSAL = "refusing AUTO: 2 actuating function(s) are registered but no " +
  "mode_transition_hook covers AUTO -> FAULT (add one with from AUTO or * and to FAULT or *)";

async function withPlant(body: (rt: Kernel) => Promise<void>): Promise<void> {
  const rt = await startRuntime(
    testConfig({ providers: [plantProvider("plant")], automation: { enabled: true } }),
  );
  try {
    await body(rt);
  } finally {
    await rt.stop();
  }
}

/** A second mode manager over the runtime's providers with its own hooks (and its own router). */
function managerWith(
  rt: Kernel,
  hooks: { before?: HookConfig[]; after?: HookConfig[] },
): ModeManager {
  const log = testLogger();
  return new ModeManager({
    router: new CallRouter({ registry: rt.registry, cache: rt.cache, log, clock: rt.host.clock }),
    inventory: rt.inventory,
    bus: new EventBus(),
    clock: systemClock,
    log,
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: hooks.before ?? [], afterTransition: hooks.after ?? [] },
  });
}

Deno.test("ModeManager refuses AUTO with the count of actuating functions when no hook covers AUTO -> FAULT", async () => {
  await withPlant(async (rt) => {
    const rec = recordEvents(rt);
    try {
      await rt.modes.request("MANUAL");
      assert.equal(rt.modes.autoGateProblem(), REFUSAL);
      await assert.rejects(rt.modes.request("AUTO"), (e: RuntimeError) => {
        assert.equal(e.code, "FAILED_PRECONDITION");
        assert.equal(e.message, REFUSAL);
        return true;
      });
      // The re-check after a rediscovery acts only in AUTO.
      await rt.modes.recheckAutoGate();
      assert.equal(rt.modes.current(), "MANUAL");
      assert.deepEqual(rec.events.filter((e) => e.kind === "mode_change").length, 1);
    } finally {
      rec.stop();
    }
  });
});

Deno.test("ModeManager AUTO gate: a before- or after-hook from AUTO or * to FAULT or * satisfies it", async () => {
  await withPlant(async (rt) => {
    const covering: Array<[string, { before?: HookConfig[]; after?: HookConfig[] }]> = [
      ["before AUTO->FAULT", { before: [hook("AUTO", "FAULT", [])] }],
      ["after AUTO->FAULT", { after: [hook("AUTO", "FAULT", [])] }],
      ["before *->FAULT", { before: [hook("MANUAL", "AUTO", []), hook("*", "FAULT", [])] }],
      ["after AUTO->*", { after: [hook("AUTO", "*", [])] }],
      ["before *->*", { before: [hook("*", "*", [])] }],
    ];
    for (const [name, hooks] of covering) {
      const modes = managerWith(rt, hooks);
      assert.equal(modes.autoGateProblem(), null, name);
      await modes.request("MANUAL");
      assert.equal(await modes.request("AUTO"), "AUTO", name);
      await modes.recheckAutoGate();
      assert.equal(modes.current(), "AUTO", `${name}: the re-check keeps AUTO`);
    }
    const notCovering: Array<[string, { before?: HookConfig[]; after?: HookConfig[] }]> = [
      ["MANUAL->FAULT", { before: [hook("MANUAL", "FAULT", [])] }],
      ["AUTO->MANUAL", { after: [hook("AUTO", "MANUAL", [])] }],
      ["*->MANUAL", { before: [hook("*", "MANUAL", [])] }],
      ["IDLE->*", { after: [hook("IDLE", "*", [])] }],
      ["MANUAL->* and *->AUTO", {
        before: [hook("MANUAL", "*", [])],
        after: [hook("*", "AUTO", [])],
      }],
    ];
    for (const [name, hooks] of notCovering) {
      assert.equal(managerWith(rt, hooks).autoGateProblem(), REFUSAL, name);
    }
  });
});
