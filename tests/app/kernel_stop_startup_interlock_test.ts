/**
 * A stop before start() resolved detaches the state cache from the providers at once (the failed
 * start's detach): no poll refreshes what it holds any more. With the Sparkplug edge node's start
 * waiting on its bdSeq store, the runtime already serves its API; a POST /v0/call whose body was
 * still arriving when the stop came is answered in the stop's HTTP drain. An interlock covering
 * that call cannot judge it on the cache's frozen values: the call is refused (fail safe, as an
 * interlock that cannot be evaluated), never carried out. A call no interlock covers is judged as
 * in any stop's drain. Real kernel, real child, real HTTP; a bdSeq store that never answers and
 * an MQTT session that never connects.
 */
import assert from "node:assert/strict";
import { hungBdSeqHost } from "../helpers/held_mqtt.ts";
import { newKernel, waitFor } from "../helpers/kernel.ts";
import { routedPost } from "../helpers/pending_body.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { neverBlockingInterlock } from "../scenarios/alarms_helpers.ts";
import { inertSim } from "../safety/_fixture.ts";

Deno.test("Kernel.stop during the Sparkplug node's start: a call an interlock covers, its body arriving after the failed start's detach, is refused, not judged on frozen values", async () => {
  const rt = newKernel(
    testConfig({
      http: { port: 0 },
      providers: [inertSim("sim0")],
      interlocks: neverBlockingInterlock(), // judged, a call passes
      sparkplug: { enabled: true, brokerUrl: "mqtt://127.0.0.1:1", groupId: "g" },
    }),
    hungBdSeqHost(),
  );
  const starting = rt.start().then(() => null, (e: Error) => e.message);
  let stopped: Promise<void> | null = null;
  try {
    await waitFor("the API served", () => rt.http !== null, 30000);
    await rt.modes.request("MANUAL");
    // Routed by the server (its slot taken) before the stop closes the API: not answered 503.
    const call = await routedPost(rt, "/v0/call", "call");
    stopped = rt.stop();
    assert.equal(rt.cache.providersDetached, true, "the stop detached the cache at once");
    call.send(JSON.stringify({
      provider_id: "sim0",
      device_id: "motorctl0",
      function_id: 10,
      args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.5 } },
    }));
    const { status, body } = await call.answer;
    assert.match((await starting) ?? "start-up finished", /stopping/);
    assert.equal(status, 409, `refused, not carried out: ${JSON.stringify(body)}`);
    assert.equal(body.status.code, "FAILED_PRECONDITION");
    assert.match(body.status.message, /Interlock hot_lockout cannot judge call .*no longer polled/);
    await stopped;
    stopped = null;
  } finally {
    await (stopped ?? rt.stop()).catch(() => {});
  }
});
