/**
 * A reload that adds `safety.safe_state.hooks` where there were none changes the e-stop's rung: rung
 * 1 runs those calls alone, so the setpoints (rung 2) and the zeroing (`zero_is_safe`, rung 3) of
 * the ladder in force are no longer made, though the file still has them. That takes ladder calls
 * away (docs/safety.md sec. 9: "The e-stop is judged on the ladder it runs"): refused while AUTO
 * runs, and named as a weakening outside AUTO. A real kernel with the inert simulated provider as
 * a child process.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { protectionWeakenings } from "../../src/app/run_gate.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { automationConfig, callAs, TreeDir, treeXml, tv } from "../scenarios/automation_helpers.ts";
import { call, inertSim, readSignal } from "../safety/_fixture.ts";

/** One ladder call: motor 2 to duty 0 (the relay is not among them). */
const ONE_HOOK = [
  call("sim0/motorctl0", "set_motor_duty", { motor_index: 2, duty: { double: 0 } }),
];

/** `config` with these safe-state hooks (the rest of its `safety:` section kept). */
function withSafetyHooks(config: Config, hooks: typeof ONE_HOOK): Config {
  return {
    ...config,
    safety: { ...config.safety, safeState: { ...config.safety.safeState, hooks } },
  };
}

/** A runtime whose e-stop zeroes (zero_is_safe, no hooks), the relay switched on in MANUAL. */
async function withRuntime(run: (rt: Awaited<ReturnType<typeof startRuntime>>) => Promise<void>) {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const rt = await startRuntime(automationConfig(tree, {
      config: { providers: [inertSim("sim0")], safety: { zeroIsSafe: true } },
    }));
    try {
      assert.equal(rt.estop.plan().rung, "zero");
      await rt.modes.request("MANUAL");
      await callAs(rt, "manual", "sim0/relayio0", "set_relay_ch1", { enabled: tv.b(true) });
      assert.equal(await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"), true);
      await run(rt);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
}

const RUNG_LOST = "zero_is_safe no longer applies: the safe_state.hooks added run alone (rung 1)";

Deno.test("Kernel.reload in AUTO adding safe-state hooks to a zeroing e-stop is refused: the e-stop still zeroes the relay", async () => {
  await withRuntime(async (rt) => {
    await rt.modes.request("AUTO");
    const report = await rt.reload(withSafetyHooks(rt.config, ONE_HOOK));
    assert.deepEqual(report.refused, [{
      section: "safety",
      why: `mode is AUTO: it would weaken a protection: ${RUNG_LOST}`,
    }]);
    assert.equal(rt.estop.plan().rung, "zero");
    await rt.estop.trigger("rung test");
    assert.equal(
      await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"),
      false,
      "the e-stop switched the relay off",
    );
  });
});

Deno.test("Kernel.reload outside AUTO adding safe-state hooks to a zeroing e-stop applies and names the zeroing it no longer makes", async () => {
  await withRuntime(async (rt) => {
    const report = await rt.reload(withSafetyHooks(rt.config, ONE_HOOK));
    assert.ok(report.applied.includes("safety"), JSON.stringify(report));
    assert.deepEqual(report.weakened, [{ section: "safety", what: RUNG_LOST }]);
    assert.equal(rt.estop.plan().rung, "hooks");
  });
});

Deno.test("protectionWeakenings: hooks added over setpoints leave the setpoints unmade; hooks added to hooks lose nothing", () => {
  const base = automationConfig(null, { config: { providers: [inertSim("sim0")] } });
  const setpoint = call("sim0/relayio0", "set_relay_ch1", { enabled: false });
  const safe = (hooks: typeof ONE_HOOK, setpoints: typeof ONE_HOOK): Config => ({
    ...base,
    safety: {
      present: true,
      safeState: { ...base.safety.safeState, hooks, setpoints },
    },
  });
  const machine = { actuatingFunctions: 1, longerStaleBounds: () => [], slowerPolls: () => [] };
  assert.deepEqual(
    protectionWeakenings(safe([], [setpoint]), safe(ONE_HOOK, [setpoint]), machine)
      .map((w) => [w.section, w.what]),
    [["safety", "the e-stop no longer sets sim0/relayio0 set_relay_ch1"]],
  );
  const more = [...ONE_HOOK, call("sim0/relayio0", "set_relay_ch1", { enabled: false })];
  assert.deepEqual(protectionWeakenings(safe(ONE_HOOK, []), safe(more, []), machine), []);
});
