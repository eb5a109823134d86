/**
 * The e-stop's ladder never weakens unseen within its rung either (docs/safety.md, "The ladder"):
 * under `zero_is_safe` a provider that crashes and comes back (its supervisor's restart, no reload)
 * declaring its motor's duty with bounds that no longer admit 0 leaves that function untouched by
 * the stop -- the rung is still 'zero', the plan's call to it gone. In AUTO that forces FAULT, as a
 * rung that drops does (AUTO is not kept on a weaker e-stop than the one it ran with); outside AUTO
 * it is one WARN line. A restart whose new declaration the zero still fits changes nothing. Before,
 * AUTO ran on with a stop that no longer reached the motor. A real kernel with the programmable
 * provider as a child process (its inventory read from a file at each start).
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { startRuntime, testHost, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { call, hook } from "../safety/_fixture.ts";

/** `p/m0`: a speed signal and set_duty(duty) with duty in [minDuty, 1]. */
function inventory(minDuty: number): Inventory {
  return {
    devices: {
      m0: {
        signals: [{ id: "speed", type: T.DOUBLE }],
        values: [dbl("speed", 0)],
        functions: [{
          function_id: 7,
          name: "set_duty",
          policy: { category: 3 },
          args: [{
            name: "duty",
            type: T.DOUBLE,
            required: true,
            min_double: minDuty,
            max_double: 1,
          }],
        }],
      },
    },
  };
}

const LOST =
  /the e-stop's safe-state ladder \(rung 'zero'\) no longer covers 1 actuating function\(s\) it covered \(inventory of p changed\): "p\/m0" "set_duty"/;

async function withRestart(
  run: (
    rt: Kernel,
    restartWith: (minDuty: number) => Promise<void>,
    lines: string[],
  ) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "estop_coverage_drop_" });
  const file = `${dir}/inventory.json`;
  Deno.writeTextFileSync(file, JSON.stringify(inventory(0)));
  const { log, lines } = capturingLogger({ level: "warn" });
  try {
    const rt = await startRuntime(
      testConfig({
        providers: [programmableProvider("p", file, { restart: { backoffMs: [0, 0, 0] } })],
        // AUTO's gate: a hook into FAULT (a read-only call: the ladder is rung 3, zero).
        automation: {
          enabled: true,
          modeTransitionHooks: {
            beforeTransition: [],
            afterTransition: [hook("*", "FAULT", [call("p/m0", "stats")], false)],
          },
        },
        safety: { zeroIsSafe: true },
      }),
      { host: testHost({ log }) },
    );
    try {
      assert.deepEqual(
        rt.estop.planView().calls.map((c) => [c.device_handle, c.function]),
        [["p/m0", "set_duty"]],
      );
      const restartWith = async (minDuty: number) => {
        Deno.writeTextFileSync(file, JSON.stringify(inventory(minDuty)));
        const host = rt.registry.host("p")!;
        const pid = host.session!.pid;
        Deno.kill(pid, "SIGKILL");
        await waitFor("p restarted", () => host.available && host.session!.pid !== pid);
      };
      await run(rt, restartWith, lines);
    } finally {
      await rt.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("Kernel forces FAULT when a provider restarted in AUTO declares a function the zero rung can no longer reach", async () => {
  await withRestart(async (rt, restartWith, lines) => {
    await rt.modes.request("MANUAL");
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    await restartWith(0.1);
    await waitFor("the plan without set_duty", () => rt.estop.planView().calls.length === 0);
    // Before: AUTO ran on, the stop no longer reaching p/m0 set_duty.
    await waitFor("FAULT", () => rt.modes.current() === "FAULT");
    assert.equal(rt.estop.plan().rung, "zero");
    const lost = lines.filter((l) => LOST.test(l));
    assert.equal(lost.length, 1, lines.join("\n"));
    assert.match(lost[0]!, /^WARN .*; AUTO is not kept on a weaker e-stop: FAULT/);
  });
});

Deno.test("Kernel says outside AUTO once that a restart took a function out of the ladder's reach, and keeps the mode", async () => {
  await withRestart(async (rt, restartWith, lines) => {
    await rt.modes.request("MANUAL");
    await restartWith(0.1);
    await waitFor("the line", () => lines.some((l) => LOST.test(l)));
    assert.equal(rt.modes.current(), "MANUAL");
    assert.equal(lines.filter((l) => LOST.test(l)).length, 1);
    assert.ok(!lines.some((l) => l.includes("AUTO is not kept")), lines.join("\n"));
  });
});

Deno.test("Kernel keeps AUTO when a provider restarted in AUTO declares new bounds the zero still fits", async () => {
  await withRestart(async (rt, restartWith, lines) => {
    await rt.modes.request("MANUAL");
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    // [-1, 1]: another declaration (an inventory change), the zero still admitted.
    await restartWith(-1);
    await waitFor(
      "the new declaration",
      () => rt.registry.host("p")!.devices[0]?.functions.some((f) => f.name === "set_duty"),
    );
    assert.deepEqual(
      rt.estop.planView().calls.map((c) => [c.device_handle, c.function]),
      [["p/m0", "set_duty"]],
    );
    assert.equal(rt.modes.current(), "AUTO");
    assert.ok(!lines.some((l) => LOST.test(l)), lines.join("\n"));
  });
});
