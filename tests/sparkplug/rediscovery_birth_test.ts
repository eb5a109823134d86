/**
 * A provider rediscovered (restarted, reloaded) with the same signal ids but another description
 * -- a signal retyped, a function added -- must be born again: the DBIRTH is what tells a host
 * each alias's datatype and the functions it may write. Compared by signal ids alone, no DBIRTH
 * went out and the DDATA that followed carried values of the new type on an alias the host reads
 * as the old one.
 *
 * The MQTT session is a test double (the replay_walk_test.ts style).
 */
import assert from "node:assert/strict";
import type { DeviceCapabilities, MqttSession, SignalSpec } from "../../src/common/mod.ts";
import type { PublishedEvent } from "../../src/events/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import { DataType, decode, sparkplugDeviceId, SparkplugEdgeNode } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { testLogger } from "../helpers/kernel.ts";

class LoopSession implements MqttSession {
  connected = false;
  readonly published: { topic: string; payload: ReturnType<typeof decode> }[] = [];
  readonly #connect: (() => void)[] = [];
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
  onClose(): void {}
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
const D = "dev0";
const DEVICE = sparkplugDeviceId(P, D);

function signal(valueType: SignalSpec["valueType"]): SignalSpec {
  return {
    signalId: "a",
    name: "a",
    description: "",
    valueType,
    unit: "",
    pollHintHz: 10,
    staleAfterMs: 0,
  };
}

function capsWith(valueType: SignalSpec["valueType"]): DeviceCapabilities {
  return {
    device: {
      providerId: P,
      deviceId: D,
      providerName: "test",
      typeId: "t",
      typeVersion: "1",
      label: "dev",
      address: "",
      tags: {},
    },
    functions: [],
    signals: [signal(valueType)],
  };
}

Deno.test("a provider rediscovered with a signal retyped is born again: a DBIRTH declares the new type", async () => {
  let caps = capsWith("double");
  const summary = {
    id: P,
    available: true,
    get devices() {
      return [caps];
    },
  };
  const changed: ((id: string) => void)[] = [];
  const bus: ((e: PublishedEvent) => void)[] = [];
  const inventory = {
    providers: () => [summary],
    provider: (id: string) => (id === P ? summary : undefined),
    devices: () => [caps.device],
    capabilities: () => caps,
    onChange(l: (id: string) => void) {
      changed.push(l);
      return () => {};
    },
    onAvailability: () => () => {},
  } as unknown as InventoryReader;
  const session = new LoopSession();
  const node = new SparkplugEdgeNode({
    config: { ...testConfig().sparkplug, enabled: true, brokerUrl: "mqtt://test", groupId: "g" },
    edgeNodeId: "n",
    clientId: "c",
    connect: () => Promise.resolve(session),
    bus: {
      subscribe(l) {
        bus.push(l);
        return () => {};
      },
    },
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
  await node.start();
  session.up();
  await flushMicrotasks();
  const births = () =>
    session.published.filter((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`).map((m) =>
      (m.payload.metrics ?? []).find((x) => x.name === "a")?.datatype
    );
  assert.deepEqual(births(), [DataType.Double]);

  // The provider restarts declaring `a` as a string: the inventory says so.
  caps = capsWith("string");
  for (const l of changed) l(P);
  await flushMicrotasks();
  assert.deepEqual(births(), [DataType.Double, DataType.String], "born again with the new type");
  const stopping = node.stop();
  await stopping;
});
