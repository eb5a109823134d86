/**
 * A provider restart in AUTO that changes the policy of a function the tree calls literally: the
 * restart takes the provider down first, so the device-loss latch forces FAULT before the new
 * inventory is known (the tree depends on every device it names), and re-arming is judged by AUTO's
 * arm check against the new policy. Over a real kernel with sim0 (the AUTO -> FAULT hook) and the
 * programmable provider p0 (in-process, restarted by its supervisor) reading its inventory from a
 * file at each start.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { type Inventory, programmableProvider } from "../helpers/programmable_provider.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** p0/act declares `set_x` (ACTUATE) with `policy` added to its category. */
function inventory(policy: Record<string, unknown>): Inventory {
  return {
    devices: {
      act: {
        signals: [],
        functions: [{
          function_id: 9,
          name: "set_x",
          policy: { category: 3, ...policy },
          args: [],
        }],
      },
    },
  };
}

Deno.test("AutomationEngine: a restart in AUTO that makes the tree's literal call one AUTO refuses (requires_lease) forces FAULT, and AUTO stays refused", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "call.xml",
      treeXml(`<Sequence>
      <CallDevice device_handle="p0/act" function_name="set_x" />
      <Sleep msec="20" />
    </Sequence>`),
    );
    const invFile = `${dir.path}/p0.json`;
    await Deno.writeTextFile(invFile, JSON.stringify(inventory({})));
    await using r = await rig({
      config: automationConfig(tree, {
        config: {
          providers: [simProvider("sim0"), programmableProvider("p0", invFile, { restart: {} })],
        },
      }),
      arm: true,
    });
    const rt = r.kernel;
    const engine = rt.automation!;
    await rt.modes.request("AUTO");
    await waitFor("the tree ticking", () => engine.status().engine_diagnostics.total_ticks > 2);
    // The next process declares set_x requires_lease: no call of the tree may pass in AUTO.
    await Deno.writeTextFile(invFile, JSON.stringify(inventory({ requires_lease: true })));
    r.kill("p0");
    const leased = () =>
      rt.inventory.capabilities("p0", "act")?.functions.find((f) => f.name === "set_x")
        ?.policy?.requiresLease === true;
    await waitFor("p0 back with set_x requires_lease", leased);
    assert.equal(rt.modes.current(), "FAULT", "AUTO runs a tree whose call is refused every tick");
    assert.equal(engine.status().not_running?.cause, "device_loss_latch");
    assert.deepEqual(engine.status().refused_calls, [], "no call of the tree refused in AUTO");
    // Re-armed once the FAULT hooks have run (the mode manager refuses it while they run).
    await waitFor("re-armed to MANUAL", async () => {
      try {
        await rt.modes.request("MANUAL");
        return true;
      } catch (err) {
        if (/still running/.test(String(err))) return false;
        throw err;
      }
    });
    await assert.rejects(
      rt.modes.request("AUTO"),
      /refusing AUTO: the behavior tree calls p0\/act set_x \(.*lease/,
    );
  } finally {
    await dir.dispose();
  }
});
