/**
 * A mode listener that forces FAULT synchronously when it is told AUTO was entered (an alarm, a
 * check that finds the machine unsafe) supersedes that transition inside ModeManager's commit.
 * The listeners after it must not be told AUTO was entered then: the tree runner among them would
 * switch the tree on while the mode is FAULT. Each listener is told only transitions that are
 * still the mode when it hears them, and ends up told the mode in force. In-process: the real
 * ModeManager over a router that answers every call at once.
 */
import assert from "node:assert/strict";
import type { CallRouter } from "../../src/control/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { providersUp } from "../safety/_clock_rig.ts";

Deno.test("ModeManager tells no later listener of an AUTO entry a listener superseded with FAULT, and every listener of the FAULT", async () => {
  const clock = new ManualClock();
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: () => Promise.resolve({}),
  } as unknown as CallRouter;
  const bus = new EventBus();
  const published: string[] = [];
  bus.subscribe(({ event: e }) => {
    if (e.kind === "mode_change") published.push(`${e.previous_mode}->${e.new_mode}`);
  });
  const modes = new ModeManager({
    router,
    inventory: providersUp("plant"),
    bus,
    clock,
    log: testLogger(),
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: [], afterTransition: [] },
  });
  // What each listener was told, with the mode in force as it was told it.
  const first: string[] = [];
  const later: string[] = [];
  modes.onModeChange(({ previous, current }) => {
    first.push(`${previous}->${current} (mode ${modes.current()})`);
    if (current === "AUTO") modes.enterFault("unsafe on entering AUTO");
  });
  modes.onModeChange(({ previous, current }) => {
    later.push(`${previous}->${current} (mode ${modes.current()})`);
  });
  await modes.request("MANUAL");
  await modes.request("AUTO");
  assert.equal(modes.current(), "FAULT");
  // The bus follows the real history; the forcing listener heard AUTO (it was in force then),
  // then FAULT from inside its own call.
  assert.deepEqual(published, ["IDLE->MANUAL", "MANUAL->AUTO", "AUTO->FAULT"]);
  assert.deepEqual(first, [
    "IDLE->MANUAL (mode MANUAL)",
    "MANUAL->AUTO (mode AUTO)",
    "AUTO->FAULT (mode FAULT)",
  ]);
  // The later listener never hears AUTO entered: by its turn the mode was FAULT.
  assert.deepEqual(later, ["IDLE->MANUAL (mode MANUAL)", "AUTO->FAULT (mode FAULT)"]);
});
