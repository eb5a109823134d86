/**
 * The refuse-hookless AUTO gate (docs/automation.md, "Configuration") over the plant provider
 * (two ACTUATE functions and one READ function) served in-process, one runtime per hook set
 * (tests/helpers/rig.ts).
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import type { HookConfig } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { recordEvents } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { hook, plantProvider } from "../safety/_fixture.ts";

const REFUSAL = "refusing AUTO: 2 actuating function(s) are registered but no " +
  "mode_transition_hook covers AUTO -> FAULT (add one with from AUTO or * and to FAULT or *)";

/** A runtime over the plant (in-process) with automation on and these mode-transition hooks. */
async function withPlant(
  body: (rt: Kernel) => Promise<void>,
  hooks: { before?: HookConfig[]; after?: HookConfig[] } = {},
): Promise<void> {
  await using r = await rig({
    providers: [plantProvider("plant")],
    automation: {
      enabled: true,
      modeTransitionHooks: {
        beforeTransition: hooks.before ?? [],
        afterTransition: hooks.after ?? [],
      },
    },
  });
  await body(r.kernel);
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
  const covering: Array<[string, { before?: HookConfig[]; after?: HookConfig[] }]> = [
    ["before AUTO->FAULT", { before: [hook("AUTO", "FAULT", [])] }],
    ["after AUTO->FAULT", { after: [hook("AUTO", "FAULT", [])] }],
    ["before *->FAULT", { before: [hook("MANUAL", "AUTO", []), hook("*", "FAULT", [])] }],
    ["after AUTO->*", { after: [hook("AUTO", "*", [])] }],
    ["before *->*", { before: [hook("*", "*", [])] }],
  ];
  for (const [name, hooks] of covering) {
    await withPlant(async ({ modes }) => {
      assert.equal(modes.autoGateProblem(), null, name);
      await modes.request("MANUAL");
      assert.equal(await modes.request("AUTO"), "AUTO", name);
      await modes.recheckAutoGate();
      assert.equal(modes.current(), "AUTO", `${name}: the re-check keeps AUTO`);
    }, hooks);
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
    await withPlant(async ({ modes }) => {
      assert.equal(modes.autoGateProblem(), REFUSAL, name);
      await modes.request("MANUAL");
      await assert.rejects(modes.request("AUTO"), { message: REFUSAL }, name);
    }, hooks);
  }
});
