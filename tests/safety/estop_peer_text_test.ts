/**
 * The e-stop's plan lines quote what the provider sent (rung `zero` plans from the inventory: the
 * device id, the function and argument names), cut, so that a quote in them cannot make the rest
 * of the line ambiguous nor 10 KB flood it. The programmable provider in-process.
 */
import assert from "node:assert/strict";
import { CallRouter } from "../../src/control/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { Estop, ESTOP_QUOTED_NAME_CHARS, type EstopModes } from "../../src/safety/mod.ts";
import { readPorts } from "../helpers/kernel.ts";
import { startProgrammable, T } from "../helpers/programmable_provider.ts";

Deno.test("Estop quotes the provider's device id and function name in its plan and failed-call lines, cut to a bound", async () => {
  const forged = 'd"0\nERROR forged';
  const long = "L".repeat(10_000);
  const off = (name: string) => ({
    function_id: 9,
    name,
    policy: { category: 3 },
    args: [{ name: 'on"', type: T.BOOL, required: true }],
  });
  const fx = await startProgrammable({
    devices: {
      [forged]: { signals: [], functions: [off('off" now')] },
      [long]: { signals: [], functions: [off(long)] },
    },
  }, { inProcess: true });
  const lines: string[] = [];
  const log = new LineLogger({
    level: "info",
    journald: true,
    now: () => 0,
    write: (line) => {
      const m = /^<\d>\[estop\] (e-stop plan call: .*|safe-state call .*)$/.exec(line);
      if (m) lines.push(m[1]!);
    },
  });
  try {
    const modes: EstopModes = {
      current: () => "MANUAL",
      enterFault: () => ({
        committed: true,
        from: "MANUAL",
        runHooks: () => Promise.resolve([]),
        hookFailuresSoFar: () => [],
      }),
      addArmCheck: () => {},
    };
    const estop = new Estop({
      router: new CallRouter({ registry: fx.registry, cache: fx.cache, log, clock: fx.clock }),
      ...readPorts(fx.registry),
      clock: fx.clock,
      log,
      safeState: { hooks: [], setpoints: [], zeroIsSafe: true, expect: [], verifyTimeoutMs: 100 },
      modes,
    });
    estop.logPlan("start-up");
    const cut = `${"L".repeat(ESTOP_QUOTED_NAME_CHARS)}\u2026`;
    await estop.trigger("test");
    const failed = lines.filter((l) => l.startsWith("safe-state call "));
    // The provider's error names the device again: cut too (ESTOP_QUOTED_ERROR_CHARS).
    assert.equal(failed.length, 2);
    assert.ok(failed.every((l) => l.length < 1000), "bounded");
    assert.ok(failed.includes(
      'safe-state call "p0/d\\"0\\nERROR forged" "off\\" now" failed: ' +
        '"NOT_FOUND: provider answered NOT_FOUND: d\\"0\\nERROR forged: function 9 not found"',
    ));
    assert.deepEqual(lines.filter((l) => l.startsWith("e-stop plan call: ")).sort(), [
      `e-stop plan call: "p0/${cut.slice(3)}" "${cut}"("on\\""=false)`,
      'e-stop plan call: "p0/d\\"0\\nERROR forged" "off\\" now"("on\\""=false)',
    ]);
  } finally {
    await fx.close();
  }
});
