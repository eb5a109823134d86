/** manual_gating_policy while the tree runs in AUTO: BLOCK refuses manual calls, OVERRIDE lets them through. */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  automationOptions,
  cached,
  enterAuto,
  MOTOR_THEN_SLEEP,
  TreeDir,
} from "./automation_helpers.ts";

const RELAY_ON = {
  provider_id: "sim0",
  device_id: "relayio0",
  function_id: 1, // set_relay_ch1
  args: { enabled: { type: "bool", bool: true } },
};

async function runWithPolicy(policy: "BLOCK" | "OVERRIDE") {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("motor.xml", MOTOR_THEN_SLEEP);
    const fx = await startHttpFixture({
      config: automationOptions(tree, { manualGatingPolicy: policy }),
    });
    try {
      await enterAuto(fx.runtime);
      // The tree's own (automated) call passes under either policy.
      await waitFor(
        "tree started motor 1",
        () => cached(fx.runtime, "sim0/motorctl0", "motor1_duty") === 0.5,
      );
      await waitFor(
        "tree sleeping",
        () =>
          fx.runtime.automation!.status().engine_diagnostics.current_running_node ===
            "Main/Sequence[0]/Sleep[1]",
      );
      const r = await fx.request("POST", "/v0/call", { body: RELAY_ON });
      return { r, relay: cached(fx.runtime, "sim0/relayio0", "relay_ch1_state"), fx };
    } finally {
      await fx.close();
    }
  } finally {
    await dir.dispose();
  }
}

Deno.test("POST /v0/call in AUTO with manual_gating_policy BLOCK is 409 while the tree's calls pass", async () => {
  const { r, relay } = await runWithPolicy("BLOCK");
  assert.equal(r.status, 409);
  assert.equal(r.json.status.code, "FAILED_PRECONDITION");
  assert.match(r.json.status.message, /AUTO/);
  assert.equal(relay, false);
});

Deno.test("POST /v0/call in AUTO with manual_gating_policy OVERRIDE is executed next to the tree", async () => {
  const { r, relay } = await runWithPolicy("OVERRIDE");
  assert.equal(r.status, 200, r.text);
  assert.equal(r.json.post_call_poll_triggered, true);
  assert.equal(relay, true);
});
