/**
 * A stop while the Sparkplug edge node's start waits on its bdSeq store (a hung disk under
 * runtime.data_dir) is a failed start's stop: the cache is detached at once, nothing of the
 * runtime is published from then on. The node's start must end with it: a store that answers
 * while the stop's HTTP drain still waits (a call's body still arriving) must not have the node
 * open a broker session then -- births of the cache's frozen values, Good, from a runtime that is
 * stopping, and an NDEATH right after. Real kernel, real child, real HTTP; a bdSeq store the test
 * answers and an MQTT session that never connects (what is counted is the connect asked).
 */
import assert from "node:assert/strict";
import { serveHttp } from "../../src/host/mod.ts";
import { idleMqttSession } from "../helpers/held_mqtt.ts";
import { newKernel, waitFor } from "../helpers/kernel.ts";
import { routedPost } from "../helpers/pending_body.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { inertSim } from "../safety/_fixture.ts";

/** Macrotask turns given to a start that goes on (load, save, connect: microtasks and a turn). */
const SETTLE_TURNS = 20;
Deno.test("Kernel.stop during the Sparkplug node's start: a bdSeq store answering in the stop's HTTP drain does not have the node connect", async () => {
  let connects = 0;
  let saves = 0;
  let answerLoad!: (v: number | null) => void;
  const loaded = new Promise<number | null>((r) => answerLoad = r);
  const rt = newKernel(
    testConfig({
      http: { port: 0 },
      providers: [inertSim("sim0")],
      sparkplug: { enabled: true, brokerUrl: "mqtt://127.0.0.1:1", groupId: "g" },
    }),
    {
      serve: serveHttp,
      mqttConnect: () => {
        connects++;
        return Promise.resolve(idleMqttSession());
      },
      bdSeqStore: () => ({
        load: () => loaded,
        save: () => {
          saves++;
          return Promise.resolve();
        },
      }),
    },
  );
  const starting = rt.start().then(() => null, (e: Error) => e.message);
  let stopped: Promise<void> | null = null;
  try {
    await waitFor("the API served", () => rt.http !== null, 30000);
    // A request whose body is still arriving holds the stop's HTTP drain.
    const call = await routedPost(rt, "/v0/call", "call");
    const answer = call.answer.catch((e: Error) => e.message);
    stopped = rt.stop();
    assert.equal(rt.cache.providersDetached, true, "the stop detached the cache at once");
    answerLoad(3); // the hung disk answers while the drain waits
    await waitFor("the bdSeq store's load answered", async () => (await loaded) === 3);
    for (let i = 0; i < SETTLE_TURNS; i++) await new Promise((r) => setTimeout(r, 0));
    assert.equal(connects, 0, `the node connected during the failed start's stop (${saves} saves)`);
    // A load answering after the stop records nothing (the node never connects: no bdSeq used).
    assert.equal(saves, 0, "a bdSeq saved after the stop began");
    call.send(JSON.stringify({
      provider_id: "sim0",
      device_id: "motorctl0",
      function_id: 10,
      args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0 } },
    }));
    const answered = await answer;
    assert.notEqual(typeof answered, "string", `the drain held no request: ${answered}`);
    assert.match((await starting) ?? "start-up finished", /stopping/);
    await stopped;
    stopped = null;
    assert.equal(connects, 0, "the node connected during the failed start's stop");
  } finally {
    answerLoad(null);
    await (stopped ?? rt.stop()).catch(() => {});
  }
});
