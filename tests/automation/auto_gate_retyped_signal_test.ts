/**
 * The AUTO gate and a blackboard entry a tree's earlier run typed: an entry takes the type of its
 * first write and keeps it for the tree's life (the blackboard survives leaving and re-entering
 * AUTO: docs/automation.md, "Tick semantics"). A provider that comes back with the signal a
 * ReadSignal writes into the entry retyped (double -> string) makes the next tick that writes it
 * throw, which faults the runtime. The gate judges the entry as the tick finds it, and refuses
 * AUTO instead of entering it to fault at once (over a real kernel: sim0 for the AUTO -> FAULT
 * hook, p0 the programmable provider, restarted, reading its inventory from a file).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import {
  dbl,
  type Inventory,
  programmableProvider,
  Q,
  T,
} from "../helpers/programmable_provider.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** p0/sen declares `level` as a double (25.5) or, after the change, a string ("high"). */
function inventory(kind: "double" | "string"): Inventory {
  return {
    devices: {
      sen: kind === "double"
        ? { signals: [{ id: "level", type: T.DOUBLE }], values: [dbl("level", 25.5)] }
        : {
          signals: [{ id: "level", type: T.STRING }],
          values: [{ id: "level", type: T.STRING, string: "high", quality: Q.OK }],
        },
    },
  };
}

/** Reads p0/sen level into {x}, then sleeps 20 ms: a tree whose ticks a test can wait for. */
const TREE = `<Sequence>
      <ReadSignal device_handle="p0/sen" signal_id="level" value="{x}" />
      <Sleep msec="20" />
    </Sequence>`;

Deno.test("AutomationEngine: AUTO is refused when a restart retyped (double -> string) the signal a ReadSignal writes into an entry an earlier run typed double", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("tree.xml", treeXml(TREE));
    const invFile = `${dir.path}/p0.json`;
    await Deno.writeTextFile(invFile, JSON.stringify(inventory("double")));
    const p0 = programmableProvider("p0", invFile, { restart: {} });
    await using r = await rig({
      config: automationConfig(tree, { config: { providers: [simProvider("sim0"), p0] } }),
      arm: true,
    });
    const rt = r.kernel;
    const engine = rt.automation!;
    const level = () => rt.cache.signal("p0", "sen", "level")?.value?.type;
    await waitFor("p0/sen level read", () => level() === "double");
    await rt.modes.request("AUTO");
    await waitFor("the tree ticking", () => engine.status().engine_diagnostics.total_ticks > 2);
    assert.equal(engine.status().engine_diagnostics.error_count, 0);
    // The entry the first run typed double is judged as held: the same signal type re-arms.
    await rt.modes.request("MANUAL");
    await rt.modes.request("AUTO");
    assert.equal(rt.modes.current(), "AUTO");
    // p0 comes back declaring `level` a string: the device-loss latch forces FAULT.
    await Deno.writeTextFile(invFile, JSON.stringify(inventory("string")));
    r.kill("p0");
    const retyped = () =>
      rt.inventory.capabilities("p0", "sen")?.signals.find((s) => s.signalId === "level")
        ?.valueType === "string";
    await waitFor("p0 back with level a string", retyped);
    await waitFor("level read as a string", () => level() === "string");
    assert.equal(rt.modes.current(), "FAULT");
    await waitFor("re-armed to MANUAL", async () => {
      try {
        await rt.modes.request("MANUAL");
        return true;
      } catch (err) {
        if (/still running/.test(String(err))) return false;
        throw err;
      }
    });
    // The entry x holds a double from the first run: the tick writing the string would throw.
    await assert.rejects(
      rt.modes.request("AUTO"),
      /refusing AUTO: the behavior tree writes blackboard entry "x" with its value from an earlier tick \(double, kept until a restart or a reload replaces the tree\) and with ReadSignal p0\/sen level \(a string signal\) at .*tree\.xml:\d+:\d+/,
    );
    assert.equal(rt.modes.current(), "MANUAL");
    assert.equal(engine.status().engine_diagnostics.error_count, 0, "no tick threw");
  } finally {
    await dir.dispose();
  }
});
