/**
 * A DCMD whose device leaves while its call runs (the provider crashes or restarts, a reload
 * removes it): the call's outcome still reaches the host. The device's own metric is gone with
 * its DDEATH, so the node answers, naming the device (`Runtime/Command Result`), as for a DCMD
 * to a device it does not have.
 *
 * The MQTT session is a test double (the duplicate_function_test.ts style): the test hands the
 * node its DCMD, holds the call and takes the provider away meanwhile.
 */
import assert from "node:assert/strict";
import type { DeviceCapabilities, MqttMessageListener, MqttSession } from "../../src/common/mod.ts";
import type { CallResult } from "../../src/control/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import {
  DataType,
  decode,
  encode,
  sparkplugDeviceId,
  SparkplugEdgeNode,
} from "../../src/sparkplug/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { testLogger } from "../helpers/kernel.ts";

/** A session that completes every write at once and delivers what the test sends it. */
class LoopSession implements MqttSession {
  connected = false;
  readonly published: { topic: string; payload: ReturnType<typeof decode> }[] = [];
  readonly #connect: (() => void)[] = [];
  readonly #message: MqttMessageListener[] = [];

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
  onMessage(l: MqttMessageListener): void {
    this.#message.push(l);
  }
  onError(): void {}
  end(): Promise<void> {
    this.connected = false;
    return Promise.resolve();
  }
  up(): void {
    this.connected = true;
    for (const l of this.#connect) l();
  }
  deliver(topic: string, payload: Uint8Array): void {
    for (const l of this.#message) l(topic, payload, false);
  }
}

const P = "p0";
const D = "dev0";
const DEVICE = sparkplugDeviceId(P, D);

const caps: DeviceCapabilities = {
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
  functions: [{
    functionId: 1,
    name: "pulse",
    description: "",
    category: "ACTUATE",
    actuating: true,
    args: [],
  }],
  signals: [],
};

Deno.test("a DCMD whose device leaves while its call runs is still answered: by the node, naming the device", async () => {
  const summary = { id: P, available: true, devices: [caps] };
  const availability: ((p: { id: string }) => void)[] = [];
  const inventory = {
    providers: () => [summary],
    provider: (id: string) => (id === P ? summary : undefined),
    devices: () => [caps.device],
    capabilities: () => caps,
    onChange: () => () => {},
    onAvailability(l: (p: { id: string }) => void) {
      availability.push(l);
      return () => {};
    },
  } as unknown as InventoryReader;
  const session = new LoopSession();
  let answerCall: (() => void) | null = null;
  const node = new SparkplugEdgeNode({
    config: { ...testConfig().sparkplug, enabled: true, brokerUrl: "mqtt://test", groupId: "g" },
    edgeNodeId: "n",
    clientId: "c",
    connect: () => Promise.resolve(session),
    bus: { subscribe: () => () => {} },
    inventory,
    reads: { signal: () => undefined, qualityNow: (_p, _d, _s, s) => s.quality },
    status: () => ({
      mode: "MANUAL",
      estopLatched: false,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: summary.available ? 1 : 0,
      providersDown: summary.available ? 0 : 1,
    }),
    commands: {
      call: () =>
        new Promise<CallResult>((resolve) => answerCall = () => resolve({} as CallResult)),
      estop: () => Promise.resolve(),
    },
    runtimeVersion: "test",
    clock: new ManualClock(),
    log: testLogger(),
  });
  await node.start();
  session.up();
  await flushMicrotasks();
  const nbirth = session.published.find((m) => m.topic === "spBv1.0/g/NBIRTH/n")!;
  const resultAlias =
    (nbirth.payload.metrics ?? []).find((m) => m.name === "Runtime/Command Result")!.alias;
  session.deliver(
    `spBv1.0/g/DCMD/n/${DEVICE}`,
    encode({
      timestamp: 1,
      metrics: [{ name: "Functions/pulse", datatype: DataType.Boolean, boolean_value: true }],
    }),
  );
  await flushMicrotasks();
  assert.ok(answerCall !== null, "the call runs");

  // The provider goes away while the call runs (its process died; the call was sent).
  summary.available = false;
  for (const l of availability) l({ id: P });
  await flushMicrotasks();
  assert.ok(
    session.published.some((m) => m.topic === `spBv1.0/g/DDEATH/n/${DEVICE}`),
    "the DDEATH",
  );
  const from = session.published.length;
  (answerCall as () => void)();
  await flushMicrotasks();
  const answers = session.published.slice(from).flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n" || m.topic === `spBv1.0/g/DDATA/n/${DEVICE}`
      ? (m.payload.metrics ?? []).map((x) => [m.topic.split("/")[2], x.alias, x.string_value])
      : []
  );
  assert.deepEqual(
    answers,
    [["NDATA", resultAlias, `${DEVICE}/Functions/pulse: OK`]],
    "the call's outcome never reached the host",
  );
  await node.stop();
});
