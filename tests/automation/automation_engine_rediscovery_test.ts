/**
 * A provider restart in AUTO that changes the policy of a function the tree calls literally: the
 * restart takes the provider down first, so the device-loss latch forces FAULT before the new
 * inventory is known (the tree depends on every device it names), and re-arming is judged by AUTO's
 * arm check against the new policy. The new inventory's refusal is said once when it is known (one
 * WARN line per call, naming the provider, the call and the policy) and in status'
 * `why_not_running`, also for a restart a configuration reload makes outside AUTO. Over a real
 * kernel with sim0 (the AUTO -> FAULT hook) and the programmable provider p0 (in-process,
 * restarted by its supervisor or a reload) reading its inventory from a file at each start.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { type Inventory, programmableProvider } from "../helpers/programmable_provider.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** The WARN lines that say a call of the tree refused in AUTO by p0's new inventory. */
function refusedLines(lines: readonly string[]): string[] {
  return lines.filter((l) => l.includes("behavior tree: inventory of p0 changed"));
}

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

Deno.test("AutomationEngine: a restart in AUTO that makes the tree's literal call one AUTO refuses (requires_lease) forces FAULT, says the call once, and AUTO stays refused", async () => {
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
    // Said once, when the new inventory is known: the provider, the call and the policy.
    const said = refusedLines(r.lines);
    assert.equal(said.length, 1, `said ${said.length} times:\n${r.lines.join("\n")}`);
    assert.match(
      said[0]!,
      /^WARN .*behavior tree: inventory of p0 changed: entering AUTO is refused while the tree calls p0\/act set_x \(Call refused: p0\/act set_x requires a lease \(provider policy requires_lease\)/,
    );
    // Where the API says why the tree does not run, with the remedy the device-loss latch needs.
    assert.match(
      engine.status().why_not_running ?? "",
      /^device-loss latch: p0\/act was lost .*; refusing AUTO: the behavior tree calls p0\/act set_x \(.*requires_lease/,
    );
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
    // A restart that rediscovers the same inventory says nothing new.
    const pid = r.kill("p0");
    await waitFor("p0 back with the same inventory", () => {
      const host = rt.registry.host("p0");
      return host?.available === true && host.session?.pid !== pid;
    });
    assert.equal(refusedLines(r.lines).length, 1, r.lines.join("\n"));
  } finally {
    await dir.dispose();
  }
});

Deno.test("AutomationEngine: a reload restarting a provider outside AUTO whose new inventory keeps the tree's literal call out of AUTO (allowed_modes) says the call once", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "call.xml",
      treeXml(`<CallDevice device_handle="p0/act" function_name="set_x" />`),
    );
    const invFile = `${dir.path}/p0.json`;
    await Deno.writeTextFile(invFile, JSON.stringify(inventory({})));
    const p0 = programmableProvider("p0", invFile);
    await using r = await rig({
      config: automationConfig(tree, { config: { providers: [simProvider("sim0"), p0] } }),
      arm: true,
    });
    const rt = r.kernel;
    assert.deepEqual(refusedLines(r.lines), [], "start-up: the call runs in AUTO");
    // The file changes p0's entry (restarted), whose next process allows set_x in MANUAL only.
    await Deno.writeTextFile(invFile, JSON.stringify(inventory({ allowed_modes: ["MANUAL"] })));
    const report = await rt.reload({
      ...rt.config,
      providers: [rt.config.providers[0]!, { ...p0, timeoutMs: p0.timeoutMs + 1000 }],
    });
    assert.deepEqual(report.providers.restarted, ["p0"]);
    assert.equal(rt.modes.current(), "MANUAL");
    const said = refusedLines(r.lines);
    assert.equal(said.length, 1, `said ${said.length} times:\n${r.lines.join("\n")}`);
    assert.match(
      said[0]!,
      /^WARN .*behavior tree: inventory of p0 changed: entering AUTO is refused while the tree calls p0\/act set_x \(Call refused in AUTO mode: p0\/act set_x is allowed only in MANUAL \(provider policy allowed_modes\)\)$/,
    );
    assert.match(
      rt.automation!.status().why_not_running ?? "",
      /^mode is MANUAL: .*; refusing AUTO: the behavior tree calls p0\/act set_x \(.*allowed_modes\)/,
    );
    await assert.rejects(
      rt.modes.request("AUTO"),
      /refusing AUTO: .*p0\/act set_x .*allowed_modes/,
    );
  } finally {
    await dir.dispose();
  }
});
