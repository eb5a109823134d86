/**
 * A stop before start() resolved detaches the state cache from the providers at once (the failed
 * start's detach: nothing of their going is published). With the Sparkplug edge node's start
 * waiting on its bdSeq store, the runtime already serves its API and its alarms already run; the
 * stop's HTTP drain (a call still being answered) then holds it for seconds before the "alarms"
 * stage. The frozen cache must not make the alarms' inputs go stale meanwhile: no alarm is raised
 * for bad input, and no e-stop latched by one, by the stop itself. Real kernel, real child, real
 * HTTP; a bdSeq store that never answers and an MQTT session that never connects.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import { newKernel, recordEvents, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { d, i, inertSim, manualCall } from "../safety/_fixture.ts";
import { hungBdSeqHost } from "../helpers/held_mqtt.ts";

/** Staleness bound of every signal: well within the drain the slow call holds. */
const STALE_AFTER_MS = 300;
/** How long the provider takes to answer the call the drain waits for. */
const SLOW_CALL_MS = 1500;

Deno.test("Kernel.stop during the Sparkplug node's start, its HTTP drain held by a call: no alarm raised for inputs gone stale, no e-stop", async () => {
  const protections = alarmsConfig(
    "alarms:\n  - { id: hot, signal: sim0/tempctl0/tc1_temp, hihi: 500, action: estop }\n",
  );
  const rt = newKernel(
    testConfig({
      http: { port: 0 },
      providers: [inertSim("sim0")],
      alarms: protections.alarms,
      health: { staleness: { warnAfterMs: 0, staleAfterMs: STALE_AFTER_MS } },
      sparkplug: { enabled: true, brokerUrl: "mqtt://127.0.0.1:1", groupId: "g" },
    }),
    // The hung disk under runtime.data_dir: the node's start waits (BDSEQ_SAVE_WAIT_MS).
    hungBdSeqHost(),
  );
  const recorded = recordEvents(rt);
  const starting = rt.start().then(() => null, (e: Error) => e.message);
  let stopped: Promise<void> | null = null;
  try {
    await waitFor("the API served", () => rt.http !== null, 30000);
    await waitFor("the alarm's input usable", () => rt.alarms.alarm("hot").quality === "OK", 5000);
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.5) });
    // A device call the provider answers SLOW_CALL_MS after it gets it: the drain waits for it.
    await manualCall(rt, "sim0", "chaos_control", 3, {
      device_id: { type: "string", string: "relayio0" },
      latency_ms: { type: "int64", int64: SLOW_CALL_MS },
    });
    const slow = apiFetch(`http://127.0.0.1:${rt.http!.port}/v0/call`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        provider_id: "sim0",
        device_id: "relayio0",
        function_id: 1,
        args: { enabled: { type: "bool", bool: true } },
      }),
    }).then((r) => r.body?.cancel(), () => {});
    await waitFor("the slow call in flight", () => rt.api.inFlight > 0);
    stopped = rt.stop();
    assert.match((await starting) ?? "start-up finished", /stopping/);
    await slow;
    await stopped;
    stopped = null;
    const raised = recorded.events.filter((e) => e.kind === "alarm" && e.cause !== null);
    assert.deepEqual(raised, [], "no alarm raised by the stop");
    assert.equal(rt.estop.latched, false, "no e-stop latched by the stop");
  } finally {
    recorded.stop();
    await (stopped ?? rt.stop()).catch(() => {});
  }
});
