/**
 * The edge node's metric aliases follow the devices born now, not every device id the process
 * ever saw: a provider whose devices come and go (a reload replacing them, device ids that change
 * at each rediscovery) does not grow the alias maps, whether the device leaves while the node is
 * online (DDEATH) or while it is away (not born again at the next births).
 *
 * The MQTT session is a test double whose writes complete at once (the availability_bound_test.ts
 * style).
 */
import assert from "node:assert/strict";
import type { DeviceCapabilities, MqttSession } from "../../src/common/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import { decode, SparkplugEdgeNode } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { testLogger } from "../helpers/kernel.ts";

class Session implements MqttSession {
  connected = false;
  readonly published: { topic: string; payload: ReturnType<typeof decode> }[] = [];
  readonly #connect: (() => void)[] = [];
  readonly #close: ((willUsed: boolean) => void)[] = [];

  publish(topic: string, payload: Uint8Array): Promise<void> {
    this.published.push({ topic, payload: decode(payload) });
    return Promise.resolve();
  }
  subscribe(): Promise<void> {
    return Promise.resolve();
  }
  onConnect(l: () => void): void {
    this.#connect.push(l);
  }
  onClose(l: (willUsed: boolean) => void): void {
    this.#close.push(l);
  }
  onMessage(): void {}
  onError(): void {}
  end(): Promise<void> {
    this.connected = false;
    return Promise.resolve();
  }
  up(): void {
    this.connected = true;
    for (const l of this.#connect) l();
  }
}

const P = "p0";

function capsOf(deviceId: string): DeviceCapabilities {
  return {
    device: {
      providerId: P,
      deviceId,
      providerName: "test",
      typeId: "t",
      typeVersion: "1",
      label: deviceId,
      address: "",
      tags: {},
    },
    functions: [{
      name: "set",
      functionId: 1,
      description: "",
      category: "CONFIG",
      actuating: true,
      args: [],
    }],
    signals: ["a", "b", "c"].map((signalId) => ({
      signalId,
      name: signalId,
      description: "",
      valueType: "double" as const,
      unit: "",
      pollHintHz: 10,
      staleAfterMs: 0,
    })),
  };
}

function rig() {
  const summary = { id: P, available: true, devices: [capsOf("dev0")] };
  const changed: ((id: string) => void)[] = [];
  const inventory = {
    providers: () => [summary],
    provider: (id: string) => (id === P ? summary : undefined),
    devices: () => summary.devices.map((c) => c.device),
    capabilities: (_p: string, d: string) => summary.devices.find((c) => c.device.deviceId === d),
    onChange(l: (id: string) => void) {
      changed.push(l);
      return () => {};
    },
    onAvailability: () => () => {},
  } as unknown as InventoryReader;
  const sessions: Session[] = [];
  const node = new SparkplugEdgeNode({
    config: { ...testConfig().sparkplug, enabled: true, brokerUrl: "mqtt://test", groupId: "g" },
    edgeNodeId: "n",
    clientId: "c",
    connect: () => {
      const s = new Session();
      sessions.push(s);
      return Promise.resolve(s);
    },
    bus: { subscribe: () => () => {} },
    inventory,
    reads: { signal: () => undefined, qualityNow: (_p, _d, _s, s) => s.quality },
    status: () => ({
      mode: "IDLE",
      estopLatched: false,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: 1,
      providersDown: 0,
    }),
    runtimeVersion: "test",
    clock: new ManualClock(),
    log: testLogger(),
  });
  /** The provider now declares this device instead (a reload, a rediscovery). */
  const replaceDevice = (deviceId: string, tell: boolean) => {
    summary.devices = [capsOf(deviceId)];
    if (tell) { for (const l of changed) l(P); }
  };
  return { node, sessions, replaceDevice };
}

Deno.test("devices that come and go while the node is online leave no aliases behind", async () => {
  const { node, sessions, replaceDevice } = rig();
  await node.start();
  sessions[0]!.up();
  await flushMicrotasks();
  assert.ok(node.online);
  const born = node.aliasCount;
  for (let i = 1; i <= 200; i++) {
    replaceDevice(`dev${i}`, true);
    await flushMicrotasks();
  }
  const topics = sessions[0]!.published.map((m) => m.topic);
  assert.equal(topics.filter((t) => t.includes("/DDEATH/")).length, 200);
  assert.equal(topics.filter((t) => t.includes("/DBIRTH/")).length, 201);
  assert.equal(
    node.aliasCount,
    born,
    `the alias maps grew by every device id seen: ${born} aliases at the first births, ` +
      `${node.aliasCount} after 200 devices came and went`,
  );
  // The current device's birth and its aliases: distinct from the node's own.
  const last = sessions[0]!.published.findLast((m) => m.topic.includes("/DBIRTH/"))!;
  const nbirth = sessions[0]!.published.find((m) => m.topic.includes("/NBIRTH/"))!;
  const aliases = [...last.payload.metrics ?? [], ...nbirth.payload.metrics ?? []]
    .map((m) => m.alias).filter((a) => a !== undefined).map(Number);
  assert.equal(new Set(aliases).size, aliases.length, "aliases unique across the node");
  await node.stop();
});

Deno.test("devices gone while the node was away leave their aliases at the next births", async () => {
  const { node, sessions, replaceDevice } = rig();
  await node.start();
  sessions[0]!.up();
  await flushMicrotasks();
  const born = node.aliasCount;
  for (let i = 1; i <= 50; i++) {
    // Away: no births meanwhile; a rebirth (or the next connection's births) meets the new device.
    replaceDevice(`dev${i}`, false);
    node.rebirth();
    await flushMicrotasks();
  }
  assert.equal(
    node.aliasCount,
    born,
    `aliases of devices not born again are kept: ${born} at the first births, ${node.aliasCount} now`,
  );
  await node.stop();
});
