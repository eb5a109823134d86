/**
 * A stop before start() resolved (the Sparkplug edge node's start waiting on its bdSeq store)
 * detaches the cache and stops the outage monitor and automation at once; a POST /v0/mode whose
 * body was still arriving is answered in the stop's HTTP drain. Entering AUTO then would be judged
 * on device states no poll refreshes any more, for a tree that will never tick, in a runtime that
 * never came up: refused (409, the mode unchanged), as an interlock is (kernel_stop_startup_
 * interlock_test). Real kernel, real child, real HTTP; a bdSeq store that never answers.
 */
import assert from "node:assert/strict";
import { hungBdSeqHost } from "../helpers/held_mqtt.ts";
import { newKernel, waitFor } from "../helpers/kernel.ts";
import { routedPost } from "../helpers/pending_body.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { inertSim } from "../safety/_fixture.ts";
import { STOP_MOTOR_ON_FAULT } from "../scenarios/automation_helpers.ts";

Deno.test("Kernel.stop during the Sparkplug node's start: a POST /v0/mode AUTO whose body arrives after the failed start's detach is refused", async () => {
  const rt = newKernel(
    testConfig({
      http: { port: 0 },
      providers: [inertSim("sim0")],
      automation: {
        enabled: true,
        modeTransitionHooks: {
          // AUTO's gate wants a hook into FAULT while anything actuates.
          beforeTransition: [STOP_MOTOR_ON_FAULT],
          afterTransition: [],
        },
      },
      sparkplug: { enabled: true, brokerUrl: "mqtt://127.0.0.1:1", groupId: "g" },
    }),
    hungBdSeqHost(),
  );
  const starting = rt.start().then(() => null, (e: Error) => e.message);
  let stopped: Promise<void> | null = null;
  try {
    await waitFor("the API served", () => rt.http !== null, 30000);
    await rt.modes.request("MANUAL");
    assert.equal(rt.modes.autoGateProblem(), null, "AUTO's gate would let it in before the stop");
    const request = await routedPost(rt, "/v0/mode");
    stopped = rt.stop();
    assert.equal(rt.cache.providersDetached, true, "the stop detached the cache at once");
    request.send(JSON.stringify({ mode: "AUTO" }));
    const { status, body } = await request.answer;
    assert.match((await starting) ?? "start-up finished", /stopping/);
    assert.equal(rt.modes.current(), "MANUAL", `AUTO entered: ${JSON.stringify(body)}`);
    assert.equal(status, 409, JSON.stringify(body));
    assert.match(body.status.message, /refusing AUTO: .*no longer polled/);
    await stopped;
    stopped = null;
  } finally {
    await (stopped ?? rt.stop()).catch(() => {});
  }
});
