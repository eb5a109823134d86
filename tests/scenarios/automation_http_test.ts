/** GET /v0/automation/tree and /status over the runtime's own automation service. */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { waitFor } from "../helpers/kernel.ts";
import { automationOptions, enterAuto, MOTOR_THEN_SLEEP, TreeDir } from "./automation_helpers.ts";

async function sha256Hex(text: string): Promise<string> {
  const bytes = new TextEncoder().encode(text);
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return [...hash].map((b) => b.toString(16).padStart(2, "0")).join("");
}

Deno.test("GET /v0/automation/tree and /status describe the loaded tree, its ticks and its version", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("recipe.xml", MOTOR_THEN_SLEEP);
    const fx = await startHttpFixture({ config: automationOptions(tree) });
    try {
      const t = await fx.request("GET", "/v0/automation/tree");
      assert.equal(t.status, 200);
      assert.equal(t.json.status.code, "OK");
      assert.equal(t.json.tree, MOTOR_THEN_SLEEP);

      const version = {
        engine_kind: "behavior_tree",
        id: "recipe",
        digest: await sha256Hex(MOTOR_THEN_SLEEP),
        digest_scope: "top_level_file",
      };
      const idle = await fx.request("GET", "/v0/automation/status");
      assert.equal(idle.status, 200);
      assert.deepEqual(idle.json, {
        status: { code: "OK", message: "ok" },
        execution_status: "running",
        execution_reason: "mode_gate",
        automation_version: version,
        last_evaluation_at_epoch_ms: 0,
        engine_diagnostics: {
          total_ticks: 0,
          ticks_since_progress: 0,
          error_count: 0,
          stall_suspected: false,
          current_running_node: null,
          last_tick_status: null,
        },
        run_id: null,
        last_error: null,
        mode: "IDLE",
        not_running: { cause: "mode", mode: "IDLE" },
        why_not_running:
          "mode is IDLE: the tree ticks only in AUTO; switch to MANUAL, then AUTO (IDLE -> AUTO is no transition)",
        blocked_devices: [],
        device_loss_latched: [],
        device_loss_latched_providers: [],
        device_outages: [],
        refused_calls: [],
      });

      await enterAuto(fx.runtime);
      await waitFor(
        "tree sleeping",
        () =>
          fx.runtime.automation!.status().engine_diagnostics.current_running_node ===
            "Main/Sequence[0]/Sleep[1]",
      );
      const auto = await fx.request("GET", "/v0/automation/status");
      assert.equal(auto.json.execution_status, "running");
      assert.equal(auto.json.execution_reason, undefined);
      assert.equal(auto.json.mode, "AUTO");
      assert.equal(auto.json.not_running, null, "running: no reason");
      assert.equal(auto.json.why_not_running, null);
      assert.deepEqual(auto.json.automation_version, version);
      assert.ok(auto.json.last_evaluation_at_epoch_ms > 0);
      assert.ok(auto.json.engine_diagnostics.total_ticks > 0);
      assert.equal(auto.json.engine_diagnostics.last_tick_status, "RUNNING");
      assert.equal(auto.json.engine_diagnostics.current_running_node, "Main/Sequence[0]/Sleep[1]");

      // The tree that runs is answered, as it was read to load it: not re-read from disk.
      await Deno.remove(tree);
      const gone = await fx.request("GET", "/v0/automation/tree");
      assert.equal(gone.status, 200);
      assert.equal(gone.json.tree, MOTOR_THEN_SLEEP);
    } finally {
      await fx.close();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("GET /v0/automation/tree is 404 and status idle/no_definition when automation has no tree", async () => {
  const fx = await startHttpFixture({ start: false, config: automationOptions(null) });
  try {
    const t = await fx.request("GET", "/v0/automation/tree");
    assert.equal(t.status, 404);
    assert.equal(t.json.status.code, "NOT_FOUND");
    const s = await fx.request("GET", "/v0/automation/status");
    assert.equal(s.status, 200);
    assert.equal(s.json.execution_status, "idle");
    assert.equal(s.json.execution_reason, "no_definition");
    assert.equal(s.json.automation_version, null);
  } finally {
    await fx.close();
  }
});
