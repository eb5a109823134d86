/**
 * Automation status `refused_calls` counts a tree's refusals per device and function: a function
 * the gates or a caller check refuse call after call stays listed while another function of the
 * same device succeeds in between. Keyed per device, each success of the other function ended the
 * refused one's streak, so the refusal never showed. A real kernel with the policy provider as a
 * child process.
 */
import assert from "node:assert/strict";
import { policyProvider } from "../helpers/policy_provider.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { waitFor } from "../helpers/kernel.ts";
import { withIdleTree, withTree } from "./_kernel_rig.ts";

const PROVIDERS = { config: { providers: [simProvider("sim0"), policyProvider()] } };

Deno.test("AutomationEngine keeps one function's refusals in refused_calls while another function of the device succeeds between them", async () => {
  await withIdleTree(async (rt, engine) => {
    await rt.modes.request("MANUAL"); // the mode gate lets automated calls through outside AUTO
    const signal = new AbortController().signal;
    const call = (fn: string, level?: number) =>
      engine.services.callDevice(
        "pol/act0",
        fn,
        level === undefined ? {} : { level: { type: "double", double: level } },
        signal,
      );
    const rows = () =>
      engine.status().refused_calls.map((
        r,
      ) => [r.device_handle, r.function, r.consecutive_refusals, r.refused_by]);
    await assert.rejects(call("leased"), /requires a lease/);
    await call("set_level", 0.5);
    await assert.rejects(call("leased"), /requires a lease/);
    await call("set_level", 0.25);
    assert.deepEqual(rows(), [["pol/act0", "leased", 2, "requires_lease"]]);
    assert.deepEqual(engine.status().device_outages, []);
    assert.equal(
      engine.status().last_error,
      "calls refused: pol/act0 leased by requires_lease (2 in a row)",
    );
    // Two functions refused: one row each; a success of one ends its own streak only.
    await assert.rejects(call("set_level", 2), /level/);
    await assert.rejects(call("set_level", 2), /level/);
    assert.deepEqual(rows(), [
      ["pol/act0", "leased", 2, "requires_lease"],
      ["pol/act0", "set_level", 2, "validation"],
    ]);
    await call("set_level", 0.5);
    assert.deepEqual(rows(), [["pol/act0", "leased", 2, "requires_lease"]]);
  }, PROVIDERS);
});

Deno.test("AutomationEngine lists a tree's refused function in refused_calls while the tree's other call to that device succeeds every cycle", async () => {
  // pulse: min_interval_ms 1000, so at 20 ticks a second nearly every call of it is refused;
  // set_level runs every cycle and succeeds.
  const tree = `<Repeat num_cycles="-1"><Sequence>` +
    `<ForceSuccess><CallDevice device_handle="pol/act0" function_name="pulse" args='json:{}' />` +
    `</ForceSuccess>` +
    `<CallDevice device_handle="pol/act0" function_name="set_level" args='json:{"level": 0.5}' />` +
    `</Sequence></Repeat>`;
  await withTree(tree, async (rt) => {
    const engine = rt.automation!;
    await rt.modes.request("AUTO");
    const refused = await waitFor(
      "pulse listed in refused_calls",
      () => engine.status().refused_calls.find((r) => r.function === "pulse"),
    );
    assert.equal(refused.device_handle, "pol/act0");
    assert.equal(refused.refused_by, "min_interval");
    assert.ok(refused.consecutive_refusals >= 2, String(refused.consecutive_refusals));
    const s = engine.status();
    assert.deepEqual(
      s.refused_calls.map((r) => r.function),
      ["pulse"],
      "set_level is never refused",
    );
    assert.deepEqual(s.device_outages, []);
    await rt.modes.request("MANUAL");
  }, { arm: true, ...PROVIDERS });
});
