/**
 * `POST /v0/mode` AUTO while the re-arm's after_transition hook into MANUAL (FAULT -> MANUAL)
 * still runs: the mode already reads MANUAL, but the transition has not finished, so AUTO is
 * refused with 409 `Mode transition FAULT -> MANUAL is in progress` (docs/http-api.md, modes)
 * and the tree does not start beside the hook's call; once the re-arm has answered, AUTO is
 * accepted. The hook's call is slowed inside the simulated provider (chaos_control
 * inject_call_latency). Real HTTP on loopback, the simulated provider as a child process.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { call, hook } from "../safety/_fixture.ts";
import { Api, callBody } from "./alarms_helpers.ts";
import {
  automationOptions,
  MOTOR_THEN_SLEEP,
  STOP_MOTOR_ON_FAULT,
  TreeDir,
} from "./automation_helpers.ts";

/** Every call to sim0/relayio0 takes this long: the re-arm's hook call holds the transition. */
const RELAY_LATENCY_MS = 3000;

Deno.test("POST /v0/mode AUTO is refused while the re-arm's after_transition hook into MANUAL still runs", async () => {
  const dir = await TreeDir.create();
  const tree = await dir.write("motor.xml", MOTOR_THEN_SLEEP);
  const options = automationOptions(tree);
  const fx = await startHttpFixture({
    config: {
      ...options,
      automation: {
        ...options.automation!,
        modeTransitionHooks: {
          beforeTransition: [STOP_MOTOR_ON_FAULT],
          afterTransition: [
            hook("FAULT", "MANUAL", [call("sim0/relayio0", "set_relay_ch2", { enabled: true })]),
          ],
        },
      },
    },
  });
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const slow = await api.post(
      "/v0/call",
      callBody("sim0/chaos_control", 3, {
        device_id: { type: "string", string: "relayio0" },
        latency_ms: { type: "int64", int64: RELAY_LATENCY_MS },
      }),
    );
    assert.equal(slow.status, 200, JSON.stringify(slow.json));
    assert.equal((await api.post("/v0/mode", { mode: "FAULT" })).status, 200);

    const rearm = api.post("/v0/mode", { mode: "MANUAL" });
    await waitFor("MANUAL committed", () => fx.runtime.modes.current() === "MANUAL");
    const early = await api.post("/v0/mode", { mode: "AUTO" });
    const answered = await rearm;
    assert.equal(answered.status, 200, JSON.stringify(answered.json));
    assert.deepEqual(answered.json.hook_failures, []);
    assert.equal(early.status, 409, JSON.stringify(early.json));
    assert.equal(early.json.status.code, "FAILED_PRECONDITION");
    assert.match(early.json.status.message, /Mode transition FAULT -> MANUAL is in progress/);
    assert.equal(fx.runtime.modes.current(), "MANUAL");

    const auto = await api.post("/v0/mode", { mode: "AUTO" });
    assert.equal(auto.status, 200, JSON.stringify(auto.json));
    assert.equal(fx.runtime.modes.current(), "AUTO");
  } finally {
    await fx.close();
    await dir.dispose();
  }
});
