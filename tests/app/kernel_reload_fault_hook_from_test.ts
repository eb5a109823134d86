/**
 * A reload that keeps a hook's calls into FAULT in the file but narrows the modes it runs from
 * (`from: *` -> `from: MANUAL`): the calls are no longer made on AUTO -> FAULT, so it takes stop
 * actions away from that transition (docs/safety.md sec. 9: "drops a call of a hook into FAULT").
 * A real kernel with the inert simulated provider as a child process.
 */
import assert from "node:assert/strict";
import type { Config, HookConfig } from "../../src/config/mod.ts";
import { protectionWeakenings } from "../../src/app/run_gate.ts";
import { startRuntime } from "../helpers/kernel.ts";
import {
  automationConfig,
  callAs,
  TreeDir,
  treeXml,
  tv,
  withSecondHook,
} from "../scenarios/automation_helpers.ts";
import { call, inertSim, readSignal } from "../safety/_fixture.ts";

/** The hook switching relay ch1 off on `from` -> FAULT (second before_transition hook). */
function relayOffIntoFault(from: HookConfig["from"]): HookConfig {
  const path = "automation.mode_transition_hooks.before_transition[1]";
  return {
    from,
    to: "FAULT",
    failOnError: false,
    path,
    calls: [call("sim0/relayio0", "set_relay_ch1", { enabled: false }, `${path}.calls[0]`)],
  };
}

/** A `safety:` section of its own: the e-stop adopts no hook (only the hooks are judged here). */
const SAFETY = {
  hooks: [call("sim0/motorctl0", "set_motor_duty", { motor_index: 2, duty: { double: 0 } })],
};

/** A runtime with a tree that idles and SAFETY. */
async function withRuntime(run: (rt: Awaited<ReturnType<typeof startRuntime>>) => Promise<void>) {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree, {
      config: {
        providers: [inertSim("sim0")],
        safety: SAFETY,
      },
    });
    const rt = await startRuntime(withSecondHook(base, relayOffIntoFault("*")));
    try {
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

const NARROWED =
  "a hook into FAULT no longer calls sim0/relayio0 set_relay_ch1 on IDLE -> FAULT, AUTO -> FAULT";

Deno.test("Kernel.reload in AUTO narrowing a * -> FAULT hook to MANUAL -> FAULT is refused: AUTO -> FAULT still makes its call", async () => {
  await withRuntime(async (rt) => {
    await rt.modes.request("AUTO");
    const report = await rt.reload(withSecondHook(rt.config, relayOffIntoFault("MANUAL")));
    assert.deepEqual(report.applied, []);
    assert.deepEqual(report.refused, [{
      section: "automation.mode_transition_hooks",
      why: `mode is AUTO: it would weaken a protection: ${NARROWED}`,
    }]);
    await rt.modes.request("FAULT");
    assert.equal(rt.modes.current(), "FAULT");
    assert.equal(
      await readSignal(rt, "sim0", "relayio0", "relay_ch1_state"),
      false,
      "AUTO -> FAULT switched the relay off",
    );
  });
});

Deno.test("Kernel.reload outside AUTO narrowing a * -> FAULT hook applies and names the transitions it no longer covers", async () => {
  await withRuntime(async (rt) => {
    const report = await rt.reload(withSecondHook(rt.config, relayOffIntoFault("MANUAL")));
    assert.deepEqual(report.applied, ["automation.mode_transition_hooks"]);
    assert.deepEqual(report.weakened, [{
      section: "automation.mode_transition_hooks",
      what: NARROWED,
    }]);
  });
});

Deno.test("protectionWeakenings: a hook into FAULT whose calls move to another hook of the same reach loses nothing; one removed entirely is named without modes", () => {
  const base = automationConfig(null, { config: { safety: SAFETY } });
  // null: the motor stop on AUTO -> FAULT alone (no relay hook).
  const withRelayOff = (from: HookConfig["from"] | null): Config =>
    from === null ? base : withSecondHook(base, relayOffIntoFault(from));
  const machine = { actuatingFunctions: 1, longerStaleBounds: () => [], slowerPolls: () => [] };
  const whats = (before: HookConfig["from"] | null, after: HookConfig["from"] | null) =>
    protectionWeakenings(withRelayOff(before ?? "AUTO"), withRelayOff(after), machine)
      .map((w) => w.what);
  assert.deepEqual(whats("AUTO", "*"), [], "widened: nothing lost");
  assert.deepEqual(whats("*", "*"), []);
  assert.deepEqual(whats("*", "AUTO"), [
    "a hook into FAULT no longer calls sim0/relayio0 set_relay_ch1 on IDLE -> FAULT, MANUAL -> FAULT",
  ]);
  assert.deepEqual(whats("*", null), [
    "a hook into FAULT no longer calls sim0/relayio0 set_relay_ch1",
  ]);
});
