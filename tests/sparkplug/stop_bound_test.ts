/**
 * The edge node's stop is bounded even when the MQTT client's graceful end never finishes (MQTT.js
 * `end(false)` waits for every unacknowledged QoS 1 write; a broker that acknowledged NDEATH but
 * never the writes before it would hold the runtime's shutdown -- automation, alarms, polling and
 * the providers stop after Sparkplug). In process, with a session double and a manual clock.
 */
import assert from "node:assert/strict";
import type { MqttSession } from "../../src/common/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import { SparkplugEdgeNode, STOP_END_TIMEOUT_MS } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { testLogger } from "../helpers/kernel.ts";

/** Connected; every write acknowledged at once; a graceful end that never finishes. */
class StuckEndSession implements MqttSession {
  connected = false;
  readonly ends: boolean[] = [];
  readonly #connect: ((sessionPresent: boolean) => void)[] = [];
  publish(): Promise<void> {
    return Promise.resolve();
  }
  subscribe(): Promise<void> {
    return Promise.resolve();
  }
  onConnect(l: (sessionPresent: boolean) => void): void {
    this.#connect.push(l);
  }
  onClose(): void {}
  onMessage(): void {}
  onError(): void {}
  end(force: boolean): Promise<void> {
    this.ends.push(force);
    this.connected = false;
    return force ? Promise.resolve() : new Promise<void>(() => {});
  }
  up(): void {
    this.connected = true;
    for (const l of this.#connect) l(false);
  }
}

Deno.test("the edge node's stop ends the session by force once a graceful end takes STOP_END_TIMEOUT_MS", async () => {
  const clock = new ManualClock();
  const session = new StuckEndSession();
  const inventory = {
    providers: () => [],
    provider: () => undefined,
    devices: () => [],
    capabilities: () => undefined,
    onChange: () => () => {},
    onAvailability: () => () => {},
  } as unknown as InventoryReader;
  const config = testConfig();
  const node = new SparkplugEdgeNode({
    config: { ...config.sparkplug, enabled: true, brokerUrl: "mqtt://test", groupId: "g" },
    edgeNodeId: "n",
    clientId: "c",
    connect: () => Promise.resolve(session),
    bus: { subscribe: () => () => {} },
    inventory,
    reads: { signal: () => undefined, qualityNow: () => "OK" },
    status: () => ({
      mode: "MANUAL",
      estopLatched: false,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: 0,
      providersDown: 0,
    }),
    runtimeVersion: "test",
    clock,
    log: testLogger(),
  });
  await node.start();
  session.up();
  await flushMicrotasks();
  let stopped = false;
  const stop = node.stop().then(() => stopped = true);
  await clock.advanceAsync(STOP_END_TIMEOUT_MS - 1);
  assert.equal(stopped, false, "the graceful end is given its time");
  assert.deepEqual(session.ends, [false], "NDEATH was acknowledged: a graceful end first");
  await clock.advanceAsync(1);
  await stop;
  assert.deepEqual(session.ends, [false, true], "then the session is ended by force");
});
