/**
 * A device the tree names lost while MANUAL -> AUTO runs its before_transition hooks (the mode is
 * still MANUAL): over a real kernel with sim0 (the hooks' device) and sim1 (the tree's), both
 * in-process, sim1 restarted by its supervisor.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import {
  automationConfig,
  callAs,
  TreeDir,
  treeXml,
  tv,
  withSlowArming,
} from "../scenarios/automation_helpers.ts";

Deno.test("AUTO requested while a device the tree names is lost and back during the before_transition hooks is refused at its commit", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "motor.xml",
      treeXml(`<Sequence>
      <CallDevice device_handle="sim1/motorctl0" function_name="set_motor_duty"
        args='json:{"motor_index": 1, "duty": 0.1}' />
      <Sleep msec="60000" />
    </Sequence>`),
    );
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1")] },
    });
    const config = withSlowArming(base);
    await using r = await rig({ config, arm: true });
    const rt = r.kernel;
    const engine = rt.automation!;
    let hookSent = false;
    rt.router.setAuditSink({
      record: (d) => rt.audit.record(d),
      writeAhead: (call, options) => {
        if (call.device_handle === "sim0/tempctl0") hookSent = true;
        return rt.audit.writeAhead(call, options);
      },
    });
    await callAs(rt, "manual", "sim0/chaos_control", "inject_call_latency", {
      device_id: tv.s("tempctl0"),
      latency_ms: tv.i(1500),
    });
    hookSent = false;
    const auto = rt.modes.request("AUTO").then(() => "AUTO", (err: unknown) => String(err));
    await waitFor("the arming hook's call made", () => hookSent);
    r.kill("sim1"); // lost while the hook runs, restarted by its supervisor
    await waitFor(
      "sim1/motorctl0 latched",
      () => engine.status().device_loss_latched.includes("sim1/motorctl0"),
    );
    await waitFor("sim1 back", () => rt.registry.host("sim1")?.available === true);
    const outcome = await auto;
    assert.notEqual(
      outcome,
      "AUTO",
      "AUTO entered with the tree on a device lost after the request was judged",
    );
    assert.equal(
      outcome,
      "RuntimeError: refusing AUTO: sim1/motorctl0, a device the behavior tree depends on, was " +
        "lost (provider sim1 is unavailable (RESTARTING)) while MANUAL -> AUTO hooks ran; " +
        "sim1/motorctl0 stays latched: request AUTO again once it is back (entering AUTO " +
        "releases it)",
      "the refusal names the device, why it was lost and what the operator does",
    );
    assert.equal(rt.modes.current(), "MANUAL");
    assert.ok(
      engine.status().device_loss_latched.includes("sim1/motorctl0"),
      "still latched: no AUTO entry released it",
    );
    // Audited as AUTO refused for the tree's sake, by what refused it (as the arm check would).
    const refused = (await rt.audit.query({ limit: 100 })).entries.filter((e) =>
      e.action === "mode" && e.function === "AUTO" && e.outcome === "refused"
    );
    assert.deepEqual(refused.map((e) => e.refused_by), ["device_loss"]);
  } finally {
    await dir.dispose();
  }
});
